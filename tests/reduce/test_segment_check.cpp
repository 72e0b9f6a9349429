// test_segment_check.cpp: the host's checks of many results at once, without a device: every
// segment of a segmented sum against its own reference (verify_segments, in blocks of segments
// on the host's cores), and the rows' references of dot, mean and sum (exact sums in blocks on
// the host's cores, the magnitude in index order). Each gives what one pass segment by segment
// or element by element gives: the same references, the same largest bound, the first wrong
// result named; and a wrong result still fails.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "io/data.hpp"
#include "reduce/expr_check.hpp"
#include "reduce/expr_ops.hpp"
#include "reduce/segments.hpp"
#include "verify/exact_sum.hpp"
#include "verify/reference.hpp"

using namespace clreduce;
using Catch::Matchers::StartsWith;

namespace {

// Offsets of segments of `length` over n elements (the last one shorter), as bench.py writes.
SegmentLayout fixed_segments(std::uint64_t n, std::uint64_t length) {
  SegmentLayout L;
  for (std::uint64_t at = 0; at < n; at += length)
    L.offsets.push_back(static_cast<std::int64_t>(at));
  L.offsets.push_back(static_cast<std::int64_t>(n));
  return L;
}

std::uint64_t depth_of(std::uint64_t q) { return 1 + q % 5; }

}  // namespace

TEST_CASE(
    "verify_segments: every segment's reference and the largest bound, as one pass; the "
    "first wrong segment named",
    "[segments][segment_check]") {
  const std::uint64_t n = 3 * 4096 * 8 + 1234;  // past the blocks' 4096 segments at length 8
  for (DType t : {DType::kInt32, DType::kFloat, DType::kDouble}) {
    const HostArray x = generate(t, n, 3);
    const DType acc = acc_dtype(Op::kSum, t);
    for (std::uint64_t length : {1, 8}) {
      CAPTURE(dtype_name(t), length);
      const SegmentLayout L = fixed_segments(n, length);
      const std::uint64_t m = L.results();
      // One pass, segment by segment: the references, their verdicts on correct results.
      std::vector<Value> want(m), results(m);
      double bound = 0;
      for (std::uint64_t q = 0; q < m; ++q) {
        const HostArray seg = gather_segment(x, L, q);
        want[q] = reference_reduce(seg, Op::kSum, acc);
        results[q] = want[q];
        // A result off by a few ulps (floats), as a device's order gives.
        if (is_float(acc)) results[q].f = std::nextafter(want[q].f, 2.0 * (q % 3));
        const Verdict one =
            verify(results[q], want[q], Op::kSum, depth_of(q), float_stats(seg, Op::kSum));
        REQUIRE(one.ok);
        bound = std::max(bound, one.bound);
      }
      SegmentVerdict v = verify_segments(L, Op::kSum, acc, x, results, {}, depth_of);
      CHECK(v.ok);
      CHECK(v.why.empty());
      CHECK(v.bound == bound);
      REQUIRE(v.expected.size() == m);
      for (std::uint64_t q = 0; q < m; ++q)
        REQUIRE((is_float(acc) ? v.expected[q].f == want[q].f : v.expected[q].i == want[q].i));
      // Two wrong results in different blocks: the first is named. Floats: just past the
      // segment's bound.
      std::vector<Value> bad = results;
      for (std::uint64_t q : {m - 5, m / 2 + 1}) {
        const HostArray seg = gather_segment(x, L, q);
        const Verdict one =
            verify(want[q], want[q], Op::kSum, depth_of(q), float_stats(seg, Op::kSum));
        if (is_float(acc))
          bad[q].f = want[q].f + 1.5 * one.bound + std::fabs(want[q].f) * 0x1p-20;
        else
          bad[q].i = want[q].i + 1;
      }
      v = verify_segments(L, Op::kSum, acc, x, bad, {}, depth_of);
      CHECK_FALSE(v.ok);
      CHECK(v.shown == m / 2 + 1);
      CHECK_THAT(v.why, StartsWith("segment " + std::to_string(m / 2 + 1) + ": "));
      // The references given (a peer's check): the same verdict.
      const SegmentVerdict given = verify_segments(L, Op::kSum, acc, x, bad, want, depth_of);
      CHECK(given.shown == v.shown);
      CHECK(given.bound == v.bound);
    }
  }
}

namespace {

double gamma_of(double k, double u) { return k * u / (1 - k * u); }

// dot, mean and a float sum's reference and bound by one pass in index order, as the rows'
// reference defines them: the exact sum of the terms (a product as its exact pair), the naive
// sum and the magnitude in long double.
ExprOpReference one_pass(const std::string& op, const HostArray& x, const HostArray& y,
                         const std::vector<unsigned char>& mask, DType w, std::uint64_t depth) {
  std::vector<double> terms;
  long double naive = 0, magnitude = 0;
  bool finite = true;
  std::uint64_t count = 0;
  const auto at = [&](const HostArray& a, std::size_t i) {
    const double v = a.as<float>()[i];
    return w == DType::kFloat ? static_cast<double>(static_cast<float>(v)) : v;
  };
  for (std::size_t i = 0; i < x.n; ++i) {
    if (!mask.empty() && !mask[i]) continue;
    ++count;
    const double a = at(x, i);
    if (op != "dot") {
      terms.push_back(a);
      naive += a;
      magnitude += std::fabs(a);
      finite = finite && std::isfinite(a);
      continue;
    }
    const double b = at(y, i), p = a * b;
    naive += static_cast<long double>(a) * b;
    magnitude += std::fabs(static_cast<long double>(a) * b);
    finite = finite && std::isfinite(p);
    terms.push_back(p);
    terms.push_back(std::isfinite(p) ? std::fma(a, b, -p) : 0.0);
  }
  long double sum = finite ? exact_sum(terms.data(), terms.size()) : naive;
  if (op == "mean") sum /= static_cast<long double>(count);
  if (op == "mean") magnitude /= static_cast<long double>(count);
  ExprOpReference r;
  r.count = count;
  r.value.type = w;
  r.value.f =
      w == DType::kFloat ? static_cast<double>(static_cast<float>(sum)) : static_cast<double>(sum);
  const double u = w == DType::kFloat ? 0x1p-24 : 0x1p-53, d = static_cast<double>(depth);
  const double g = gamma_of(d + 1, u);
  if (op == "sum")
    r.bound =
        2 * u * std::fabs(static_cast<double>(sum)) + 2 * g * g * static_cast<double>(magnitude);
  else
    r.bound = (op == "mean" ? 3 : 2) * u * std::fabs(static_cast<double>(sum)) +
              (w == DType::kDouble ? g : 2 * g * g) * static_cast<double>(magnitude);
  return r;
}

}  // namespace

TEST_CASE(
    "dot, mean and sum's references on the host's cores: one pass's value and bound; a "
    "wrong dot fails",
    "[expr][segment_check]") {
  // Past 2^20 elements (the exact sum's blocks beside the pass in index order), with a large
  // term that cancels and a mask.
  const std::size_t n = (std::size_t{1} << 20) + 4099;
  HostArray x = generate(DType::kFloat, n, 5), y = generate(DType::kFloat, n, 6);
  x.as<float>()[7] = 0x1p40f;
  y.as<float>()[7] = 1.0f;
  x.as<float>()[n - 3] = -0x1p40f;
  y.as<float>()[n - 3] = 1.0f;
  std::vector<unsigned char> mask(n);
  for (std::size_t i = 0; i < n; ++i) mask[i] = i % 3 != 1;
  for (const std::string op : {"dot", "mean", "sum"}) {
    for (DType w : {DType::kDouble, DType::kFloat}) {
      for (bool masked : {true, false}) {
        const std::vector<unsigned char> use = masked ? mask : std::vector<unsigned char>();
        CAPTURE(op, dtype_name(w), masked);
        std::vector<HostArray> arrays = {x};
        if (op == "dot") arrays.push_back(y);
        const ExprOpReference r = expr_op_reference(op, arrays, use, 0, w, 21);
        const ExprOpReference want = one_pass(op, x, y, use, w, 21);
        CHECK(r.count == want.count);
        CHECK(r.value.f == want.value.f);
        CHECK(r.bound == want.bound);
        CHECK(r.bound > 0);
        // A result within the bound verifies; one past it (both ways) does not.
        Value got = r.value;
        CHECK(verify_row(op, arrays, use, 0, w, 21, got).ok);
        for (double side : {-1.0, 1.0}) {
          got.f = r.value.f + side * 2 * r.bound;
          const ExprVerdict v = verify_row(op, arrays, use, 0, w, 21, got);
          CHECK_FALSE(v.ok);
          CHECK_THAT(v.why, StartsWith("|result - reference|"));
        }
      }
    }
  }
}
