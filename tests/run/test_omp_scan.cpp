// test_omp_scan.cpp: the OpenMP scan peer as clreduce runs it beside the scan variants: which
// scans it has, and its results verified with the depth it reports (the float bound), across
// several blocks so the carry between blocks is in the chain.
#include "run/omp_scan.hpp"

#include <catch2/catch_test_macros.hpp>

#include <vector>

#include "io/data.hpp"
#include "verify/scan_reference.hpp"

using namespace clreduce;

TEST_CASE("the OpenMP scan peer has inclusive unsegmented int32 and float sums only",
          "[omp_peer]") {
  CHECK(omp_scan_unsupported(Op::kSum, DType::kInt32, DType::kInt64, false, false).empty());
  CHECK(omp_scan_unsupported(Op::kSum, DType::kInt32, DType::kInt32, false, false).empty());
  CHECK(omp_scan_unsupported(Op::kSum, DType::kFloat, DType::kFloat, false, false).empty());
  CHECK_FALSE(omp_scan_unsupported(Op::kSum, DType::kInt32, DType::kInt64, true, false).empty());
  CHECK_FALSE(omp_scan_unsupported(Op::kSum, DType::kInt32, DType::kInt64, false, true).empty());
  CHECK_FALSE(omp_scan_unsupported(Op::kMax, DType::kInt32, DType::kInt32, false, false).empty());
  CHECK_FALSE(omp_scan_unsupported(Op::kSum, DType::kDouble, DType::kDouble, false, false).empty());
  CHECK_FALSE(omp_scan_unsupported(Op::kSum, DType::kUInt32, DType::kUInt64, false, false).empty());
}

TEST_CASE("the OpenMP scan peer's results verify at the depth it reports", "[omp_peer]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000},
                        (std::size_t{3} << 16) + 5, (std::size_t{1} << 20) + 3}) {
    for (const auto& [type, acc] :
         {std::pair{DType::kInt32, DType::kInt64}, std::pair{DType::kInt32, DType::kInt32},
          std::pair{DType::kFloat, DType::kFloat}}) {
      CAPTURE(n, dtype_name(type), dtype_name(acc));
      const HostArray a = generate(type, n, 5);
      std::vector<unsigned char> out(n * dtype_size(acc), 0xA5);
      const OmpScanResult r = omp_scan(a, acc, 0, 2, out.data());
      CHECK(r.timing.ms_min <= r.timing.ms_median);
      CHECK(r.depth >= (r.timing.threads > 1 ? 1 : n));
      const ScanVerdict v = verify_scan(a, ScanMode{Op::kSum, acc, false}, {}, r.depth, out.data());
      CHECK(v.ok);
      CHECK(v.why == "");
    }
  }
}
