// test_omp_reduce.cpp: the OpenMP peer for every op and type against the host reference: ints,
// min/max and arg ops exactly (index too), float sums and products within verify()'s bound for
// the peer's stated depth; NaN and first-index rules across thread chunks; 1, 3 and all threads.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "io/data.hpp"
#include "run/omp_reduce.hpp"
#include "test_helpers.hpp"
#include "verify/reference.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace clreduce;

namespace {

// Runs body with all threads and, with OpenMP, with 1 and 3 (3 splits sizes unevenly).
template <class Body> void for_thread_counts(Body body) {
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  for (int nt : {saved, 1, 3}) {
    omp_set_num_threads(nt);
    CAPTURE(nt);
    body();
  }
  omp_set_num_threads(saved);
#else
  body();
#endif
}

void check(const HostArray& a, Op op, DType acc) {
  const Value ref = reference_reduce(a, op, acc);
  for_thread_counts([&] {
    const OmpResult r = omp_reduce(a, op, acc, 0, 1);
    const Verdict v = verify(r.value, ref, op, r.depth, abs_sum(a));
    INFO("got " << r.value.str() << " @" << r.value.index << ", expected " << ref.str() << " @"
                << ref.index << ": " << v.why);
    CHECK(v.ok);
    CHECK(r.value.type == acc);
    if (is_arg_op(op)) CHECK(r.value.index == ref.index);
    CHECK(r.timing.threads >= 1);
    CHECK(r.timing.ms_min <= r.timing.ms_max);
  });
}

}  // namespace

TEST_CASE("the OpenMP peer matches the reference for every op and type", "[omp_peer]") {
  const Op op = GENERATE(from_range(all_ops()));
  const DType type = GENERATE(from_range(all_dtypes()));
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(op_name(op), dtype_name(type), seed);
  for (std::size_t n : {1, 3, 1000, 40001, 100003}) {
    CAPTURE(n);
    const HostArray a = generate(type, n, seed + n);
    check(a, op, acc_dtype(op, type));
    if ((op == Op::kSum || op == Op::kProd) && (type == DType::kInt32 || type == DType::kUInt32))
      check(a, op, type);  // --acc int32 / uint32: wraps in 32 bits
  }
}

TEST_CASE("the OpenMP peer keeps the NaN and first-index rules across thread chunks",
          "[omp_peer]") {
  const std::size_t n = 100003;
  for (Op op : all_ops()) {
    CAPTURE(op_name(op));
    HostArray a = generate(DType::kFloat, n, 5);
    a.as<float>()[n - 2] = std::numeric_limits<float>::quiet_NaN();
    a.as<float>()[n / 2 + 1] = std::numeric_limits<float>::quiet_NaN();
    check(a, op, DType::kFloat);
    if (is_arg_op(op))
      CHECK(omp_reduce(a, op, DType::kFloat, 0, 1).value.index ==
            static_cast<std::int64_t>(n / 2 + 1));
    std::vector<std::int64_t> ties(n, 7);
    ties[n - 1] = ties[n / 3] = ties[2 * n / 3] = -1;
    ties[n - 3] = ties[n / 2] = 9;
    const HostArray t = test::make_array(DType::kInt64, ties);
    check(t, op, DType::kInt64);
  }
  const HostArray empty = test::make_array(DType::kInt32, std::vector<std::int32_t>{});
  CHECK(omp_reduce(empty, Op::kSum, DType::kInt64, 0, 1).value.i == 0);
  CHECK(omp_reduce(empty, Op::kProd, DType::kInt64, 0, 1).value.i == 1);
}
