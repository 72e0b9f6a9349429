// test_exact_sum.cpp: the host's correctly rounded sum on hand-checked cases (ties to even both
// ways, sticky bits, subnormals, overflow, specials, signed zeros, cancellation across the whole
// range), against double arithmetic where that is exact, and the error measures.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "io/data.hpp"
#include "test_helpers.hpp"
#include "verify/exact_sum.hpp"
#include "verify/reference.hpp"

using namespace clreduce;
using clreduce::test::make_array;

namespace {

template <class T> T sum_of(std::vector<T> v) { return exact_sum(v.data(), v.size()); }

// Bitwise equality, the way the tests of `exact` compare (NaN: any NaN).
template <class T> bool same(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

const float fmax_ = FLT_MAX, fden = std::numeric_limits<float>::denorm_min();
const double dmax = DBL_MAX, dden = std::numeric_limits<double>::denorm_min();
const float finf = std::numeric_limits<float>::infinity(),
            fnan = std::numeric_limits<float>::quiet_NaN();
const double dinf = std::numeric_limits<double>::infinity(),
             dnan = std::numeric_limits<double>::quiet_NaN();

}  // namespace

TEST_CASE("exact_sum: signed zeros and n = 0 (+0 always, as NumPy's sum)", "[exact_sum]") {
  CHECK(same(sum_of<float>({}), 0.0f));
  CHECK(same(sum_of<float>({-0.0f}), 0.0f));
  CHECK(same(sum_of<float>({-0.0f, -0.0f, -0.0f}), 0.0f));
  CHECK(same(sum_of<float>({-0.0f, 0.0f}), 0.0f));
  CHECK(same(sum_of<float>({1.0f, -1.0f}), 0.0f));
  CHECK(same(sum_of<float>({-1.0f, 1.0f, -0.0f}), 0.0f));
  CHECK(same(sum_of<double>({}), 0.0));
  CHECK(same(sum_of<double>({-0.0, -0.0}), 0.0));
  CHECK(same(sum_of<double>({dden, -dden}), 0.0));
}

TEST_CASE("exact_sum: ties to even at the final rounding, both ways, and sticky bits",
          "[exact_sum]") {
  const float e24 = 0x1p-24f;                                         // half an ulp of 1.0f
  CHECK(same(sum_of<float>({1.0f, e24}), 1.0f));                      // tie, 1.0 even: down
  CHECK(same(sum_of<float>({1.0f + 2 * e24, e24}), 1.0f + 4 * e24));  // tie, odd: up
  CHECK(same(sum_of<float>({1.0f, e24, 0x1p-80f}), 1.0f + 2 * e24));  // above the tie: up
  CHECK(same(sum_of<float>({1.0f, e24, -0x1p-80f}), 1.0f));           // below the tie: down
  CHECK(same(sum_of<float>({-1.0f, -e24}), -1.0f));                   // negative ties
  CHECK(same(sum_of<float>({-1.0f - 2 * e24, -e24}), -1.0f - 4 * e24));
  CHECK(same(sum_of<float>({1.0f, e24, fden}), 1.0f + 2 * e24));  // sticky from 2^-149
  // Ties made of elements far apart in magnitude.
  CHECK(same(sum_of<float>({0x1p100f, 1.0f, -0x1p100f, 0x1p-25f, 0x1p-25f}), 1.0f));
  CHECK(same(sum_of<float>({0x1p100f, 1.0f + 2 * e24, -0x1p100f, 0x1p-25f, 0x1p-25f}),
             1.0f + 4 * e24));
  const double e53 = 0x1p-53;
  CHECK(same(sum_of<double>({1.0, e53}), 1.0));
  CHECK(same(sum_of<double>({1.0 + 2 * e53, e53}), 1.0 + 4 * e53));
  CHECK(same(sum_of<double>({1.0, e53, dden}), 1.0 + 2 * e53));
  CHECK(same(sum_of<double>({1.0, e53, -dden}), 1.0));
  CHECK(same(sum_of<double>({-1.0, -e53}), -1.0));
}

TEST_CASE("exact_sum: subnormals, and magnitudes from subnormal to the largest finite",
          "[exact_sum]") {
  CHECK(same(sum_of<float>({fden, fden, fden}), 3 * fden));
  CHECK(same(sum_of<float>({FLT_MIN, -fden}), FLT_MIN - fden));  // the largest subnormal
  CHECK(same(sum_of<float>({fmax_, fden, -fmax_}), fden));
  CHECK(same(sum_of<float>({fmax_, -fmax_, fden, 0x1p-126f, -fden}), 0x1p-126f));
  CHECK(same(sum_of<double>({dmax, dden, -dmax}), dden));
  CHECK(same(sum_of<double>({dmax, dmax, -dmax}), dmax));
  CHECK(same(sum_of<double>({DBL_MIN, -dden}), DBL_MIN - dden));
  std::vector<float> many(1 << 20, fden);
  CHECK(same(sum_of(many), static_cast<float>(1 << 20) * fden));  // 2^-129, exact
}

TEST_CASE("exact_sum: catastrophic cancellation", "[exact_sum]") {
  CHECK(same(sum_of<float>({1e30f, 3.14f, -1e30f}), 3.14f));
  CHECK(same(sum_of<double>({1e300, 3.14, -1e300, 1e-300, -1e-300}), 3.14));
  CHECK(same(sum_of<double>({0x1p1000, 1.0, 0x1p-1000, -0x1p1000}), 1.0));
  // 1 + 2^-1000 is not representable; the sum rounds to 1 (far below half an ulp).
  CHECK(same(sum_of<double>({0x1p1000, 1.0, 0x1p-1000, -0x1p1000, -1.0}), 0x1p-1000));
}

TEST_CASE("exact_sum: overflow to infinity only when the rounded sum is beyond the largest finite",
          "[exact_sum]") {
  CHECK(same(sum_of<float>({fmax_, fmax_}), finf));
  CHECK(same(sum_of<float>({-fmax_, -fmax_}), -finf));
  CHECK(same(sum_of<float>({fmax_, fmax_, -fmax_}), fmax_));    // no intermediate overflow
  CHECK(same(sum_of<float>({fmax_, 0x1p103f}), finf));          // half an ulp above: tie, odd: up
  CHECK(same(sum_of<float>({fmax_, 0x1p103f, -fden}), fmax_));  // just below the tie
  CHECK(same(sum_of<float>({fmax_, 0x1p102f}), fmax_));
  CHECK(same(sum_of<double>({dmax, dmax}), dinf));
  CHECK(same(sum_of<double>({dmax, 0x1p970}), dinf));
  CHECK(same(sum_of<double>({dmax, 0x1p970, -dden}), dmax));
  CHECK(same(sum_of<double>({-dmax, -0x1p970}), -dinf));
}

TEST_CASE("exact_sum: NaN, and infinities of one or both signs", "[exact_sum]") {
  CHECK(same(sum_of<float>({finf, 1.0f}), finf));
  CHECK(same(sum_of<float>({1.0f, -finf, fmax_, fmax_}), -finf));  // the infinity wins
  CHECK(same(sum_of<float>({finf, finf}), finf));
  CHECK(std::isnan(sum_of<float>({finf, 1.0f, -finf})));
  CHECK(std::isnan(sum_of<float>({2.0f, fnan})));
  CHECK(std::isnan(sum_of<float>({fnan, finf})));
  CHECK(same(sum_of<double>({dinf, -1.0}), dinf));
  CHECK(std::isnan(sum_of<double>({-dinf, dinf})));
  CHECK(std::isnan(sum_of<double>({dnan})));
}

TEST_CASE("exact_sum: float sums equal the double sum rounded once where that sum is exact",
          "[exact_sum]") {
  // Floats on a 2^-24 grid in [-2^k, 2^k): their double sum is exact for n < 2^(29 - k).
  std::mt19937_64 rng(5);
  for (int k : {0, 3, 10}) {
    for (std::size_t n : {1, 2, 3, 1000, 100003}) {
      std::vector<float> v(n);
      double d = 0.0;
      for (auto& x : v) {
        x = std::ldexp(static_cast<float>(static_cast<std::int64_t>(rng() >> 39) - (1 << 24)),
                       k - 24);
        d += static_cast<double>(x);
      }
      CAPTURE(k, n);
      CHECK(same(sum_of(v), static_cast<float>(d)));
    }
  }
  // Generated data is on that grid too.
  const HostArray a = generate(DType::kFloat, 1 << 20, 3);
  double d = 0.0;
  for (std::size_t i = 0; i < a.n; ++i) d += static_cast<double>(a.as<float>()[i]);
  CHECK(same(static_cast<float>(exact_sum(a).f), static_cast<float>(d)));
}

TEST_CASE("exact_sum: doubles that cancel in pairs leave exactly the rest, in any order",
          "[exact_sum]") {
  std::mt19937_64 rng(9);
  std::vector<double> v;
  for (int i = 0; i < 5000; ++i) {
    const double x =
        std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(rng() % 2000) - 1050);
    v.push_back(x);
    v.push_back(-x);
  }
  const double rest[] = {0x1p-1074, 1.5, -0x1p-60};
  v.insert(v.end(), std::begin(rest), std::end(rest));
  std::shuffle(v.begin(), v.end(), rng);
  CHECK(same(sum_of(v), 1.5 - 0x1p-60));  // 2^-1074 is far below half an ulp
}

TEST_CASE("reference_reduce gives the correctly rounded float sum; verify_bitwise demands its bits",
          "[exact_sum]") {
  const auto a = make_array<float>(DType::kFloat, {1e30f, 1.0f, -1e30f, 0x1p-24f});
  const Value ref = reference_reduce(a, Op::kSum);
  CHECK(ref.type == DType::kFloat);
  CHECK(ref.f == static_cast<double>(1.0f + 0x1p-24f));
  Value got = ref;
  CHECK(verify_bitwise(got, ref).ok);
  got.f = static_cast<double>(std::nextafter(1.0f, 2.0f));
  CHECK_FALSE(verify_bitwise(got, ref).ok);
  got.f = std::nan("");
  CHECK_FALSE(verify_bitwise(got, ref).ok);
  Value zero = ref, negzero = ref;
  zero.f = 0.0;
  negzero.f = -0.0;
  CHECK_FALSE(verify_bitwise(negzero, zero).ok);  // bits, not values
  Value nan = ref;
  nan.f = std::nan("");
  CHECK(verify_bitwise(nan, nan).ok);
}

TEST_CASE("float_error counts representable values between and the relative error", "[exact_sum]") {
  Value ref;
  ref.type = DType::kFloat;
  ref.f = 1.0;
  Value got = ref;
  CHECK(float_error(got, ref).ulps == 0.0);
  got.f = static_cast<double>(std::nextafter(std::nextafter(1.0f, 2.0f), 2.0f));
  CHECK(float_error(got, ref).ulps == 2.0);
  CHECK(float_error(got, ref).rel == static_cast<double>(0x1p-22f));
  got.f = static_cast<double>(std::nextafter(1.0f, 0.0f));  // below 1, the spacing halves
  CHECK(float_error(got, ref).ulps == 1.0);
  Value z = ref, nz = ref;
  z.f = 0.0;
  nz.f = -static_cast<double>(std::numeric_limits<float>::denorm_min());
  CHECK(float_error(nz, z).ulps == 1.0);  // across zero: -0 and +0 are one value
  CHECK(std::isinf(float_error(nz, z).rel));
  Value d = ref;
  d.type = DType::kDouble;
  Value dg = d;
  dg.f = std::nextafter(1.0, 2.0);
  CHECK(float_error(dg, d).ulps == 1.0);
  dg.f = std::nan("");
  CHECK(std::isnan(float_error(dg, d).ulps));
}

namespace {

// A random value of T across its whole range: any sign, exponent (subnormals included) and
// significand, or one of the specials when `specials`.
template <class T> T any_value(std::mt19937_64& rng, bool specials) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  constexpr int kMant = sizeof(T) == 4 ? 23 : 52, kExpMax = sizeof(T) == 4 ? 255 : 2047;
  const Bits sign = static_cast<Bits>(rng() & 1) << (8 * sizeof(T) - 1);
  Bits e = static_cast<Bits>(rng() % (specials ? kExpMax + 1 : kExpMax));
  if (rng() % 4 == 0) e = static_cast<Bits>(kExpMax / 2 + rng() % 8);  // near 1: carries, ties
  const Bits m = static_cast<Bits>(rng()) & ((Bits{1} << kMant) - 1);
  const Bits b = sign | (e << kMant) | (rng() % 8 == 0 ? 0 : m);
  T x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// exact_sum of x against the same elements padded with +0 to 64 (the exponent bins' pass: the
// padding adds nothing, and a zero sum is +0 either way), bit for bit.
template <class T> void check_short_sums(std::mt19937_64& rng, bool specials) {
  for (int trial = 0; trial < 3000; ++trial) {
    const std::size_t n = rng() % 64;
    std::vector<T> v(n);
    for (T& x : v) x = any_value<T>(rng, specials);
    if (n >= 2 && trial % 3 == 0) v[1] = -v[0];  // cancellation
    std::vector<T> padded = v;
    padded.resize(64, T(0));
    CAPTURE(trial, n);
    REQUIRE(same(exact_sum(v.data(), n), exact_sum(padded.data(), padded.size())));
  }
}

}  // namespace

TEST_CASE(
    "exact_sum: short arrays (word by word, and floats through an exact double sum) give "
    "the bins' sum, bit for bit",
    "[exact_sum]") {
  std::mt19937_64 rng(17);
  for (bool specials : {false, true}) {
    CAPTURE(specials);
    check_short_sums<float>(rng, specials);
    check_short_sums<double>(rng, specials);
  }
  // Ties and sticky bits through the float path: 1 + 2^-24 ties to 1 (even); a bit far below
  // makes it round up; a double sum that is not exact (the bins) rounds the same way.
  CHECK(same(sum_of<float>({1.0f, 0x1p-24f}), 1.0f));
  CHECK(same(sum_of<float>({1.0f, 0x1p-24f, 0x1p-60f}), 1.0f + 0x1p-23f));
  CHECK(same(sum_of<float>({1.0f, 0x1p-24f, 0x1p-100f, -0x1p-126f}), 1.0f + 0x1p-23f));
  CHECK(same(sum_of<float>({0x1p100f, -0x1p100f, -0x1p-149f}), -0x1p-149f));
  CHECK(same(sum_of<float>({-0.0f}), 0.0f));
  CHECK(same(sum_of<float>({fmax_, fmax_, -fmax_}), fmax_));
  CHECK(same(sum_of<float>({fmax_, fmax_}), finf));
}

TEST_CASE("exact_state: 2^22 elements and more in blocks on the host's cores, added exactly",
          "[exact_sum]") {
  // Pairs x, -x of every magnitude, shuffled, and a rest whose sum needs every block's bits:
  // 1 + 2^-24 is a tie (to 1 in float), 2^-100 decides it upwards.
  std::mt19937_64 rng(23);
  std::vector<float> v;
  v.reserve((std::size_t{1} << 22) + 8);
  while (v.size() < (std::size_t{1} << 22)) {
    const float x = any_value<float>(rng, false);
    v.push_back(x);
    v.push_back(-x);
  }
  for (float r : {1.0f, 0x1p-24f, 0x1p-100f}) v.push_back(r);
  std::shuffle(v.begin(), v.end(), rng);
  CHECK(same(exact_sum(v.data(), v.size()), 1.0f + 0x1p-23f));
  // The state: the same as the sum of uneven pieces' states (each below the blocks' size).
  const ExactState whole = exact_state(v.data(), v.size());
  ExactState pieces;
  for (std::size_t at = 0; at < v.size(); at += 1000003)
    exact_add(pieces, exact_state(v.data() + at, std::min<std::size_t>(1000003, v.size() - at)));
  CHECK(same_state(whole, pieces));
  CHECK(same(static_cast<float>(exact_round(DType::kFloat, whole).f), 1.0f + 0x1p-23f));
  // Without the 2^-100: the tie, to even.
  v.erase(std::find(v.begin(), v.end(), 0x1p-100f));
  CHECK(same(exact_sum(v.data(), v.size()), 1.0f));
  // Doubles, and a special in one block only.
  std::vector<double> d(v.begin(), v.end());
  d.push_back(0x1p-1074);
  CHECK(same(exact_sum(d.data(), d.size()), 1.0 + 0x1p-24));
  d[d.size() / 3] = dinf;
  CHECK(same(exact_sum(d.data(), d.size()), dinf));
  d[2 * d.size() / 3] = -dinf;
  CHECK(std::isnan(exact_sum(d.data(), d.size())));
}
