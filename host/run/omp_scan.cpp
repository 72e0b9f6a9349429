// omp_scan.cpp: dispatch to omp_peer.cpp's scans by element and accumulator type.
#include "run/omp_scan.hpp"

#include "clreduce/error.hpp"

namespace clreduce {

std::string omp_scan_unsupported(Op op, DType type, DType acc, bool exclusive, bool segmented) {
  const std::string has =
      "the OpenMP scan peer has inclusive, unsegmented sums of int32 and float only";
  if (op != Op::kSum || exclusive || segmented) return has;
  if (type == DType::kInt32 && (acc == DType::kInt64 || acc == DType::kInt32)) return "";
  if (type == DType::kFloat && acc == DType::kFloat) return "";
  return has;
}

OmpScanResult omp_scan(const HostArray& a, DType acc, int warmup, int repeat, unsigned char* out) {
  OmpScanResult r{};
  if (a.type == DType::kInt32 && acc == DType::kInt64) {
    r.timing = omp_scan_i32_i64(reinterpret_cast<const std::int32_t*>(a.bytes.data()), a.n,
                                reinterpret_cast<std::int64_t*>(out), warmup, repeat);
  } else if (a.type == DType::kInt32 && acc == DType::kInt32) {
    r.timing = omp_scan_i32_i32(reinterpret_cast<const std::int32_t*>(a.bytes.data()), a.n,
                                reinterpret_cast<std::int32_t*>(out), warmup, repeat);
  } else if (a.type == DType::kFloat && acc == DType::kFloat) {
    r.timing = omp_scan_f32(reinterpret_cast<const float*>(a.bytes.data()), a.n,
                            reinterpret_cast<float*>(out), warmup, repeat);
  } else {
    throw Error(Errc::kInternal, "internal: the OpenMP scan peer has no " + dtype_name(a.type) +
                                     " -> " + dtype_name(acc) + " scan");
  }
  r.depth = omp_scan_depth(a.n, r.timing.threads);
  return r;
}

}  // namespace clreduce
