// test_omp_rows.cpp: the OpenMP peer of the engine's rows and of segmented and axis sums against
// the host's references: float rows within the peer's own bound (and that bound well below the
// result's scale, so the check can fail), minmax and integer sums exactly, NaN, ties and empty
// segments; serial and parallel sizes on 1, 3 and all threads.
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "io/data.hpp"
#include "reduce/expr_check.hpp"
#include "reduce/expr_ops.hpp"
#include "run/omp_rows.hpp"
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

template <class T> HostArray array_of(DType t, const std::vector<T>& v) {
  HostArray a;
  a.type = t;
  a.n = v.size();
  a.bytes.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

template <class T> std::vector<T> normals(std::size_t n, double mean, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, 1.0);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

void check_row(const std::string& op, const std::vector<HostArray>& arrays, double ddof) {
  const ExprOpReference ref = expr_op_reference(op, arrays, {}, ddof, DType::kDouble, 1);
  for_thread_counts([&] {
    const OmpRowResult r = omp_row(op, arrays, ddof, 0, 2);
    INFO(op << " n = " << arrays.front().n << ": got " << r.value.str() << ", expected "
            << ref.value.str() << ", bound " << r.bound);
    CHECK(r.value.type == arrays.front().type);
    CHECK(r.timing.threads >= 1);
    const double got = r.value.f, want = ref.value.f;
    if (std::isnan(want)) {
      CHECK(std::isnan(got));
    } else if (std::isinf(want)) {
      CHECK(got == want);
    } else {
      CHECK(std::fabs(got - want) <= r.bound);
      // The bound is a check that can fail: well below the result's own scale here.
      CHECK(r.bound < 1e-2 * (std::fabs(want) + 1));
    }
  });
}

}  // namespace

TEST_CASE("the OpenMP rows peer meets its bound for every float row", "[omp_peer][omp_rows]") {
  for (std::size_t n : {std::size_t{1}, std::size_t{17}, std::size_t{5000}, std::size_t{100003}}) {
    CAPTURE(n);
    const std::vector<HostArray> f = {array_of(DType::kFloat, normals<float>(n, 3.0, n)),
                                      array_of(DType::kFloat, normals<float>(n, -1.0, n + 1))};
    const std::vector<HostArray> d = {array_of(DType::kDouble, normals<double>(n, 1e4, n)),
                                      array_of(DType::kDouble, normals<double>(n, 0.5, n + 1))};
    for (const char* op : {"dot", "mean", "norm2", "logsumexp"}) {
      check_row(op, f, 0);
      check_row(op, d, 0);
    }
    if (n > 1) {
      for (const char* op : {"var", "std"}) {
        check_row(op, f, 1);
        check_row(op, d, 0);
      }
    }
  }
}

TEST_CASE("the OpenMP rows peer gives NumPy's NaN and inf", "[omp_peer][omp_rows]") {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = normals<float>(70000, 0.0, 7);
  v[40000] = std::nanf("");
  const std::vector<HostArray> with_nan = {array_of(DType::kFloat, v), array_of(DType::kFloat, v)};
  for (const char* op : {"dot", "mean", "var", "norm2", "logsumexp"}) check_row(op, with_nan, 0);
  v[40000] = inf;
  const std::vector<HostArray> with_inf = {array_of(DType::kFloat, v)};
  for (const char* op : {"mean", "norm2", "logsumexp"}) check_row(op, with_inf, 0);
  const std::vector<HostArray> minus_inf = {
      array_of(DType::kFloat, std::vector<float>(50000, -inf))};
  check_row("logsumexp", minus_inf, 0);
}

TEST_CASE("the OpenMP minmax peer gives the first index of each extreme and of NaN",
          "[omp_peer][omp_rows]") {
  for (std::size_t n : {std::size_t{1}, std::size_t{4097}, std::size_t{100003}}) {
    CAPTURE(n);
    std::vector<float> f = normals<float>(n, 0.0, n);
    std::vector<std::int32_t> i(n);
    std::mt19937_64 rng(n);
    for (auto& e : i) e = static_cast<std::int32_t>(rng() % 50) - 25;  // many ties
    if (n > 5000) {
      f[n / 2] = 100;
      f[n - 3] = 100;  // a tie in a later thread's chunk
      f[7] = -100;
      f[n - 1] = -100;
    }
    for (const HostArray& a : {array_of(DType::kFloat, f), array_of(DType::kInt32, i)}) {
      const ExprOpReference ref = expr_op_reference("minmax", {a}, {}, 0, a.type, 1);
      for_thread_counts([&] {
        const OmpRowResult r = omp_row("minmax", {a}, 0, 0, 1);
        CHECK(r.exact);
        CHECK(r.value.index == ref.value.index);
        CHECK(r.value2.index == ref.value2.index);
        CHECK(r.value.str() == ref.value.str());
        CHECK(r.value2.str() == ref.value2.str());
      });
    }
    if (n > 5000) {
      f[n - 10] = std::nanf("");
      f[n / 3] = std::nanf("");  // the first NaN wins, for both
      const HostArray a = array_of(DType::kFloat, f);
      for_thread_counts([&] {
        const OmpRowResult r = omp_row("minmax", {a}, 0, 0, 1);
        CHECK(std::isnan(r.value.f));
        CHECK(r.value.index == static_cast<std::int64_t>(n / 3));
        CHECK(r.value2.index == static_cast<std::int64_t>(n / 3));
      });
    }
  }
}

TEST_CASE("the OpenMP peer's integer dot wraps modulo 2^64 exactly as the reference",
          "[omp_peer][omp_rows]") {
  std::mt19937_64 rng(5);
  for (std::size_t n : {std::size_t{3}, std::size_t{100003}}) {
    std::vector<std::int32_t> i(n), j(n);
    std::vector<std::uint64_t> u(n), v(n);
    for (std::size_t k = 0; k < n; ++k) {
      i[k] = static_cast<std::int32_t>(rng());
      j[k] = static_cast<std::int32_t>(rng());
      u[k] = rng();
      v[k] = rng();
    }
    for (const auto& [arrays, acc] :
         {std::pair<std::vector<HostArray>, DType>{
              {array_of(DType::kInt32, i), array_of(DType::kInt32, j)}, DType::kInt64},
          std::pair<std::vector<HostArray>, DType>{
              {array_of(DType::kUInt64, u), array_of(DType::kUInt64, v)}, DType::kUInt64}}) {
      const ExprOpReference ref = expr_op_reference("dot", arrays, {}, 0, acc, 1);
      for_thread_counts([&] {
        const OmpRowResult r = omp_row("dot", arrays, 0, 0, 1);
        CHECK(r.exact);
        CHECK(r.value.type == acc);
        CHECK(r.value.u == ref.value.u);
        CHECK(r.value.i == ref.value.i);
      });
    }
  }
}

TEST_CASE("the OpenMP peer refuses what it does not have, saying what it has",
          "[omp_peer][omp_rows]") {
  CHECK(omp_row_unsupported("mean", {DType::kFloat}, false).empty());
  CHECK(omp_row_unsupported("minmax", {DType::kUInt64}, false).empty());
  CHECK(omp_row_unsupported("dot", {DType::kDouble, DType::kDouble}, false).empty());
  CHECK(omp_row_unsupported("dot", {DType::kInt32, DType::kInt32}, false).empty());
  CHECK(!omp_row_unsupported("dot", {DType::kInt8, DType::kInt8}, false).empty());
  CHECK(omp_row_unsupported("mean", {DType::kFloat}, true).find("no --where") != std::string::npos);
  CHECK(omp_row_unsupported("count", {DType::kFloat}, false).find("no --op count") !=
        std::string::npos);
  CHECK(omp_row_unsupported("mean", {DType::kInt32}, false).find("of int32") != std::string::npos);
  CHECK(!omp_row_unsupported("dot", {DType::kFloat, DType::kDouble}, false).empty());
  CHECK(omp_segments_unsupported(Op::kSum, DType::kInt32, DType::kInt64).empty());
  CHECK(omp_segments_unsupported(Op::kSum, DType::kFloat, DType::kDouble).empty());
  CHECK(!omp_segments_unsupported(Op::kMax, DType::kFloat, DType::kFloat).empty());
}

TEST_CASE("the OpenMP segmented and axis sums match every segment's reference",
          "[omp_peer][omp_rows]") {
  const std::size_t n = 100003;
  std::mt19937_64 rng(11);
  // Offsets: empty segments, single elements, short and long ones, one across most of the array.
  std::vector<std::int64_t> off = {3, 3, 4, 4, 100, 5000, 5000};
  while (off.back() < 40000) off.push_back(off.back() + static_cast<std::int64_t>(rng() % 300));
  off.push_back(99000);
  off.push_back(99000);
  off.push_back(static_cast<std::int64_t>(n));
  SegmentLayout seg;
  seg.offsets = off;
  std::vector<SegmentLayout> layouts = {seg};
  for (const auto& [shape, axes] :
       std::vector<std::pair<std::vector<std::uint64_t>, std::vector<std::int64_t>>>{
           {{1, n}, {0}},             // one row: every line one element
           {{3, 33334 - 1}, {0}},     // columns of a short matrix: rows split
           {{100003, 1}, {0}},        // one long column
           {{13, 7, 1098}, {0}},      // columns of a 3-D array
           {{13, 7, 1098}, {0, 2}},   // two runs of reduced axes: lines of one element apart
           {{5, 6, 7, 400}, {0, 2}},  // two reduced runs, a kept one between, 400 kept innermost
           {{3, 200, 150}, {1}},      // columns of three matrices (kept axes on both sides)
           {{101, 990}, {1}}})        // rows: contiguous segments
  {
    std::uint64_t count = 1;
    for (std::uint64_t s : shape) count *= s;
    CAPTURE(count);
    layouts.push_back(axis_reduction(shape, axes, false).layout);
  }
  const std::vector<float> f = normals<float>(n, 2.0, 1);
  std::vector<std::int32_t> i(n);
  for (auto& e : i) e = static_cast<std::int32_t>(rng());
  const HostArray fa = array_of(DType::kFloat, f), ia = array_of(DType::kInt32, i);
  for (std::size_t k = 0; k < layouts.size(); ++k) {
    CAPTURE(k);
    const SegmentLayout& L = layouts[k];
    for (const auto& [a, acc] : {std::pair<const HostArray&, DType>{fa, DType::kFloat},
                                 std::pair<const HostArray&, DType>{ia, DType::kInt64},
                                 std::pair<const HostArray&, DType>{ia, DType::kInt32}}) {
      std::vector<Value> expected(L.results());
      for (std::uint64_t q = 0; q < expected.size(); ++q)
        expected[q] = reference_reduce(gather_segment(a, L, q), Op::kSum, acc);
      for_thread_counts([&] {
        const OmpSegmentsResult r = omp_segment_sums(a, L, acc, 0, 1);
        REQUIRE(r.values.size() == L.results());
        const SegmentVerdict v = verify_segments(L, Op::kSum, acc, a, r.values, expected,
                                                 [&](std::uint64_t) { return r.depth; });
        INFO(v.why);
        CHECK(v.ok);
        CHECK(r.values.front().type == acc);
        CHECK(r.depth < n / 4);  // a bound that can fail
      });
    }
  }
}
