// test_float_check.cpp: the overflow and underflow rule for float sums and products, on the inputs
// where the long double reference and NumPy's float arithmetic part ways: reductions and scans
// accept ±inf or NaN where an order may overflow (and say so), and nothing else.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "test_helpers.hpp"
#include "verify/float_check.hpp"
#include "verify/reference.hpp"
#include "verify/scan_reference.hpp"

using namespace clreduce;
using Catch::Matchers::ContainsSubstring;
using clreduce::test::make_array;

namespace {

Value fval(DType t, double f) {
  Value v;
  v.type = t;
  v.f = t == DType::kFloat ? static_cast<double>(static_cast<float>(f)) : f;
  return v;
}

// Checks got for op over a against the reference, as a reduction run does (depth n).
Verdict check(const HostArray& a, Op op, double got) {
  return verify(fval(a.type, got), reference_reduce(a, op), op, a.n, float_stats(a, op));
}

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

TEST_CASE(
    "the issue's inputs: the sequential loop overflows, the reference does not, and both verify",
    "[reference][overflow]") {
  const auto f32 = make_array<float>(DType::kFloat, {3e38f, 3e38f, -3e38f, -3e38f});
  const auto f64 = make_array<double>(DType::kDouble, {1.7e308, 1.7e308, -1.7e308, -1.7e308});
  const auto prod = make_array<float>(DType::kFloat, {1e30f, 1e30f, 1e-30f, 1e-30f});
  CHECK(reference_reduce(f32, Op::kSum).f == 0.0);
  CHECK(std::isinf(sequential_reduce(f32, Op::kSum).f));  // as NumPy's float32 loop
  CHECK(std::isinf(sequential_reduce(f64, Op::kSum).f));
  CHECK(std::isinf(sequential_reduce(prod, Op::kProd).f));
  for (const auto& [a, op] :
       {std::pair{f32, Op::kSum}, std::pair{f64, Op::kSum}, std::pair{prod, Op::kProd}}) {
    CAPTURE(dtype_name(a.type), op_name(op));
    const Verdict seq =
        verify(sequential_reduce(a, op), reference_reduce(a, op), op, a.n, float_stats(a, op));
    CHECK(seq.ok);
    CHECK(seq.overflow);
    CHECK_THAT(seq.why, ContainsSubstring("an order of the"));
    for (double got : {kInf, -kInf, kNaN}) {
      const Verdict v = check(a, op, got);
      if (op == Op::kProd && got < 0) {  // positive factors: +inf only
        CHECK_FALSE(v.ok);
        continue;
      }
      CHECK(v.ok);
      CHECK(v.overflow);
    }
    const Verdict exact =
        check(a, op, reference_reduce(a, op).f);  // an order that did not overflow
    CHECK(exact.ok);
    CHECK_FALSE(exact.overflow);
    CHECK(exact.why.empty());
  }
  // A finite result is still held to the bound (for this product, one that allows for
  // 1e-30 · 1e-30 underflowing, times 1e60).
  CHECK_FALSE(check(prod, Op::kProd, 1e30).ok);
  CHECK_FALSE(check(f32, Op::kSum, 1e38).ok);
  CHECK(check(f32, Op::kSum, 1e30).ok);  // within γ_n·Σ|x| of 0
}

TEST_CASE("inf or NaN is refused where no order can overflow, and NaN where every order gives NaN",
          "[reference][overflow]") {
  const auto small = make_array<float>(DType::kFloat, {1.f, 2.f, 3e37f});
  CHECK_FALSE(check(small, Op::kSum, kInf).ok);
  CHECK_FALSE(check(small, Op::kSum, kNaN).ok);
  CHECK_FALSE(check(small, Op::kProd, kInf).ok);
  CHECK(check(small, Op::kProd, 6e37).ok);
  // A NaN element: NaN in every order, whatever could overflow.
  const auto with_nan = make_array<float>(DType::kFloat, {3e38f, 3e38f, std::nanf("")});
  CHECK(check(with_nan, Op::kSum, kNaN).ok);
  CHECK_FALSE(check(with_nan, Op::kSum, kInf).ok);
  // +inf alone is inf in every order; with a sum that can overflow to -inf, NaN too.
  const auto with_inf = make_array<float>(DType::kFloat, {1.f, HUGE_VALF});
  CHECK(check(with_inf, Op::kSum, kInf).ok);
  CHECK_FALSE(check(with_inf, Op::kSum, kNaN).ok);
  CHECK_FALSE(check(with_inf, Op::kSum, 1.0).ok);
  const auto inf_and_overflow = make_array<float>(DType::kFloat, {HUGE_VALF, -3e38f, -3e38f});
  const Verdict v = check(inf_and_overflow, Op::kSum, kNaN);
  CHECK(v.ok);
  CHECK(v.overflow);
  CHECK_FALSE(check(inf_and_overflow, Op::kSum, 0.0).ok);
  // +inf and -inf: NaN in every order.
  const auto both = make_array<double>(DType::kDouble, {HUGE_VAL, 1.0, -HUGE_VAL});
  CHECK(check(both, Op::kSum, kNaN).ok);
  CHECK_FALSE(check(both, Op::kSum, kInf).ok);
}

TEST_CASE("an overflow is accepted only with a sign some order of the operations reaches",
          "[reference][overflow]") {
  // [FLT_MAX, FLT_MAX, 1]: every order passes +FLT_MAX: +inf, never -inf or NaN.
  const auto max2 = make_array<float>(DType::kFloat, {FLT_MAX, FLT_MAX, 1.0f});
  CHECK(check(max2, Op::kSum, kInf).ok);
  CHECK_FALSE(check(max2, Op::kSum, -kInf).ok);
  CHECK_FALSE(check(max2, Op::kSum, kNaN).ok);
  // One huge value against two: an order that adds the positives first gives +inf, none gives
  // -inf (the negatives' sum is below the largest value), so none gives NaN.
  const auto mixed = make_array<float>(DType::kFloat, {3e38f, 3e38f, -3e38f});
  Verdict v = check(mixed, Op::kSum, kInf);
  CHECK(v.ok);
  CHECK(v.overflow);
  CHECK_THAT(v.why, ContainsSubstring("overflows float to +inf: the sum of the positive elements"));
  CHECK_FALSE(check(mixed, Op::kSum, -kInf).ok);
  CHECK_FALSE(check(mixed, Op::kSum, kNaN).ok);
  CHECK(check(mixed, Op::kSum, 3e38).ok);
  // Both signs can pass it: +inf, -inf and NaN (+inf meeting -inf) are all reachable.
  const auto both = make_array<float>(DType::kFloat, {-3e38f, -3e38f, 3e38f, 3e38f});
  for (double got : {kInf, -kInf, kNaN}) CHECK(check(both, Op::kSum, got).ok);
  v = check(both, Op::kSum, kNaN);
  CHECK_THAT(v.why, ContainsSubstring("to +inf and to -inf, which give NaN"));
  // A +inf element: +inf, or NaN where the negatives can overflow; never -inf.
  const auto inf_neg = make_array<float>(DType::kFloat, {HUGE_VALF, -3e38f, -3e38f});
  CHECK(check(inf_neg, Op::kSum, kInf).ok);
  CHECK(check(inf_neg, Op::kSum, kNaN).ok);
  CHECK_FALSE(check(inf_neg, Op::kSum, -kInf).ok);
  const auto inf_pos = make_array<float>(DType::kFloat, {HUGE_VALF, 3e38f, 3e38f});
  CHECK_FALSE(check(inf_pos, Op::kSum, kNaN).ok);  // nothing can give -inf to meet it
  // Products: the sign of the factors in every order; a zero factor leaves 0 or NaN, never inf.
  const auto neg = make_array<float>(DType::kFloat, {1e30f, -1e30f, 1e30f});
  CHECK(check(neg, Op::kProd, -kInf).ok);
  CHECK_FALSE(check(neg, Op::kProd, kInf).ok);
  CHECK_FALSE(check(neg, Op::kProd, kNaN).ok);  // no 0 to meet the infinity
  const auto zero = make_array<float>(DType::kFloat, {1e30f, 1e30f, 0.0f});
  CHECK(check(zero, Op::kProd, 0.0).ok);
  CHECK(check(zero, Op::kProd, kNaN).ok);  // 1e30 * 1e30 = inf first, then * 0
  CHECK_FALSE(check(zero, Op::kProd, kInf).ok);
  CHECK_FALSE(check(zero, Op::kProd, -0.0).ok);  // the sign of a zero product too
  const auto negzero = make_array<float>(DType::kFloat, {-0.0f, 2.0f, 3.0f});
  CHECK(check(negzero, Op::kProd, -0.0).ok);
  CHECK_FALSE(check(negzero, Op::kProd, 0.0).ok);
}

TEST_CASE("a float sum is never -0: every order that adds from +0, as NumPy's, gives +0",
          "[reference]") {
  for (std::size_t k : {1, 2, 9, 1000}) {
    CAPTURE(k);
    const HostArray z = make_array<float>(DType::kFloat, std::vector<float>(k, -0.0f));
    const Value ref = reference_reduce(z, Op::kSum);
    CHECK(ref.f == 0.0);
    CHECK_FALSE(std::signbit(ref.f));  // np.sum([-0.0] * k) is 0.0
    CHECK(check(z, Op::kSum, 0.0).ok);
    const Verdict v = check(z, Op::kSum, -0.0);
    CHECK_FALSE(v.ok);
    CHECK_THAT(v.why, ContainsSubstring("never -0"));
    CHECK_FALSE(std::signbit(sequential_reduce(z, Op::kSum).f));
  }
  // Cancelling elements give +0 too; a finite non-zero result is still held to the bound.
  const auto cancel = make_array<double>(DType::kDouble, {1.5, -1.5});
  CHECK(check(cancel, Op::kSum, 0.0).ok);
  CHECK_FALSE(check(cancel, Op::kSum, -0.0).ok);
}

TEST_CASE("a reference that rounds to inf accepts the largest finite value an order reaches",
          "[reference][overflow]") {
  // FLT_MAX + 3 quarter-ulps: the exact sum rounds to inf, the float loop stays at FLT_MAX.
  const float q = std::ldexp(1.0f, 102);
  const auto a = make_array<float>(DType::kFloat, {FLT_MAX, q, q, q});
  CHECK(std::isinf(reference_reduce(a, Op::kSum).f));
  CHECK(sequential_reduce(a, Op::kSum).f == static_cast<double>(FLT_MAX));
  const Verdict v = check(a, Op::kSum, FLT_MAX);
  CHECK(v.ok);
  CHECK_FALSE(v.overflow);
  CHECK(check(a, Op::kSum, kInf).ok);
  CHECK_FALSE(check(a, Op::kSum, 1e38).ok);
}

TEST_CASE("products whose partial products can underflow accept the precision an order loses",
          "[reference][overflow]") {
  // 1e-30 · 1e-10 is subnormal in float (or flushed to 0): the loop loses digits the reference
  // keeps. No order overflows (1e20 · 1e18 is below float's largest value).
  const auto sub = make_array<float>(DType::kFloat, {1e-30f, 1e-10f, 1e20f, 1e18f});
  const Verdict seq = verify(sequential_reduce(sub, Op::kProd), reference_reduce(sub, Op::kProd),
                             Op::kProd, 4, float_stats(sub, Op::kProd));
  CHECK(seq.ok);
  CHECK(check(sub, Op::kProd, 0.0).ok);  // flushed to zero in the first step
  CHECK_FALSE(check(sub, Op::kProd, kInf).ok);
  // No underflow possible: the tight bound holds.
  const auto plain = make_array<float>(DType::kFloat, {0.5f, 4.f, 0.25f});
  CHECK(check(plain, Op::kProd, 0.5).ok);
  CHECK_FALSE(check(plain, Op::kProd, 0.5001).ok);
}

TEST_CASE("scans apply the same rule element by element, and their sequential loop passes it",
          "[scan][overflow]") {
  struct Case {
    HostArray a;
    Op op;
  };
  const std::vector<Case> cases = {
      {make_array<float>(DType::kFloat, {3e38f, 3e38f, -3e38f, -3e38f}), Op::kSum},
      {make_array<double>(DType::kDouble, {1.7e308, 1.7e308, -1.7e308, -1.7e308}), Op::kSum},
      {make_array<float>(DType::kFloat, {1e30f, 1e30f, 1e-30f, 1e-30f}), Op::kProd},
      {make_array<float>(DType::kFloat, {1e-30f, 1e-10f, 1e20f, 1e18f}), Op::kProd}};
  for (const Case& c : cases) {
    for (bool exclusive : {false, true}) {
      for (bool segmented : {false, true}) {
        CAPTURE(dtype_name(c.a.type), op_name(c.op), exclusive, segmented);
        const ScanMode mode{c.op, c.a.type, exclusive};
        const std::vector<std::uint8_t> flags =
            segmented ? std::vector<std::uint8_t>{1, 0, 1, 0} : std::vector<std::uint8_t>{};
        std::vector<unsigned char> y(c.a.bytes.size());
        sequential_scan(c.a, mode, flags, y.data());
        const ScanVerdict v = verify_scan(c.a, mode, flags, c.a.n, y.data());
        CHECK(v.ok);
        CHECK(v.wrong == 0);
      }
    }
  }
  // The float32 sum: y[2] and y[3] overflow in the loop (inf), the reference says 3e38 and 0.
  const HostArray& a = cases[0].a;
  const ScanMode mode{Op::kSum, DType::kFloat, false};
  std::vector<float> y(4);
  sequential_scan(a, mode, {}, reinterpret_cast<unsigned char*>(y.data()));
  CHECK(std::isinf(y[2]));
  ScanVerdict v = verify_scan(a, mode, {}, 4, reinterpret_cast<const unsigned char*>(y.data()));
  CHECK(v.ok);
  CHECK(v.overflow);
  CHECK(v.overflowed == 2);
  CHECK_THAT(
      v.why,
      ContainsSubstring(
          "y[2] = inf (and 1 more of 4 elements): an order of the additions overflows float"));
  // y[0] = 3e38 cannot overflow (one element): inf there is wrong; a finite error is still caught.
  y[0] = HUGE_VALF;
  v = verify_scan(a, mode, {}, 4, reinterpret_cast<const unsigned char*>(y.data()));
  CHECK_FALSE(v.ok);
  CHECK(v.first_wrong == 0);
  y[0] = 3e38f;
  y[3] = 1e38f;
  v = verify_scan(a, mode, {}, 4, reinterpret_cast<const unsigned char*>(y.data()));
  CHECK_FALSE(v.ok);
  CHECK(v.first_wrong == 3);
  // Data that cannot overflow reports no overflow.
  const auto plain = make_array<float>(DType::kFloat, {1.f, 2.f, 3.f});
  std::vector<float> p(3);
  sequential_scan(plain, mode, {}, reinterpret_cast<unsigned char*>(p.data()));
  v = verify_scan(plain, mode, {}, 3, reinterpret_cast<const unsigned char*>(p.data()));
  CHECK(v.ok);
  CHECK_FALSE(v.overflow);
  CHECK(v.why.empty());
}
