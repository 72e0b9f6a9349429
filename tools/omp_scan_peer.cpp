// omp_scan_peer.cpp: times the OpenMP two-pass inclusive scan peer (host/omp_peer.hpp) on the
// same generated int32 array clreduce uses, for side-by-side runs with `clreduce --variant scan-*`.
// Prints one line: threads, median/min/max ms and GB/s counting input read plus output written.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data.hpp"
#include "error.hpp"
#include "omp_peer.hpp"
#include "size_arg.hpp"

using namespace clreduce;

int main(int argc, char** argv) {
  std::string size = "2^24", acc = "int64";
  int warmup = 1, repeat = 5;
  std::uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--size") size = v;
    else if (a == "--acc") acc = v;
    else if (a == "--warmup") warmup = std::atoi(v.c_str());
    else if (a == "--repeat") repeat = std::atoi(v.c_str());
    else if (a == "--seed") seed = std::strtoull(v.c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "usage: omp_scan_peer [--size N] [--acc int64|int32] [--warmup W] [--repeat R] [--seed S]\n");
      return kExitUsage;
    }
  }
  if (acc != "int64" && acc != "int32") {
    std::fprintf(stderr, "omp_scan_peer: --acc int64 or int32\n");
    return kExitUsage;
  }
  try {
    const std::size_t n = parse_size(size);
    const HostArray a = generate(DType::kInt32, n, seed);
    const auto* x = reinterpret_cast<const std::int32_t*>(a.bytes.data());
    PeerTiming t{};
    std::size_t out_bytes = 0;
    if (acc == "int64") {
      std::vector<std::int64_t> y(n);
      t = omp_scan_i32_i64(x, n, y.data(), warmup, repeat);
      out_bytes = 8;
    } else {
      std::vector<std::int32_t> y(n);
      t = omp_scan_i32_i32(x, n, y.data(), warmup, repeat);
      out_bytes = 4;
    }
    const double gbs = static_cast<double>(n * (4 + out_bytes)) / (t.ms_median * 1e6);
    std::printf("omp-two-pass-scan int32->%s n=%zu threads=%d ms=%.4f min=%.4f max=%.4f GB/s=%.2f\n",
                acc.c_str(), n, t.threads, t.ms_median, t.ms_min, t.ms_max, gbs);
  } catch (const Error& e) {
    std::fprintf(stderr, "omp_scan_peer: %s\n", e.what());
    return e.code();
  }
  return 0;
}
