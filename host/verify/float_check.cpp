// float_check.cpp: the tolerance and the overflow and underflow conditions, in long double.
#include "verify/float_check.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace clreduce {
namespace {

struct Limits {
  long double u, max, tiny, sub;  // unit roundoff, largest finite, smallest normal, subnormal
};

Limits limits(bool single) {
  if (single)
    return {0x1p-24L, static_cast<long double>(FLT_MAX), static_cast<long double>(FLT_MIN),
            0x1p-149L};
  return {0x1p-53L, static_cast<long double>(DBL_MAX), static_cast<long double>(DBL_MIN),
          0x1p-1074L};
}

// γ_d = (1 + u)^d - 1: the relative error d roundings can compound to, for any d.
long double gamma_of(long double u, std::uint64_t d) {
  return std::expm1(static_cast<long double>(d) * std::log1p(u));
}

// The same, from a table for the depths below kTabled (short segments check millions of sums
// of small depths; expm1 and log1p in long double were most of their check).
constexpr std::uint64_t kTabled = 256;
struct GammaTable {
  long double g[kTabled];
  explicit GammaTable(long double u) {
    for (std::uint64_t d = 0; d < kTabled; ++d) g[d] = gamma_of(u, d);
  }
};

long double gamma(const Limits& l, std::uint64_t d) {
  if (d >= kTabled) return gamma_of(l.u, d);
  static const GammaTable single(0x1p-24L), twice(0x1p-53L);
  if (l.u == 0x1p-24L) return single.g[d];
  if (l.u == 0x1p-53L) return twice.g[d];
  return gamma_of(l.u, d);
}

std::string g(long double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3Lg", x);
  return b;
}

bool odd(std::uint64_t k) { return (k & 1) != 0; }

}  // namespace

void Magnitudes::add(long double x) {
  if (std::isnan(x)) {
    nan = true;
    return;
  }
  if (std::signbit(x)) ++negatives;
  if (std::isinf(x)) {
    (x > 0 ? pos_inf : neg_inf) = true;
    return;
  }
  const long double a = std::fabs(x);
  abs_sum += a;
  (x > 0 ? pos_sum : neg_sum) += a;
  if (a > 1.0L)
    big *= a;
  else if (a > 0.0L && a < 1.0L)
    small *= a;
  else if (a == 0.0L)
    zero = true;
}

bool Magnitudes::always_nan(bool sum) const {
  if (nan) return true;
  return sum ? pos_inf && neg_inf : (pos_inf || neg_inf) && zero;
}

long double sum_error_bound(bool single, const ErrorBudget& e, long double abs_sum) {
  const Limits l = limits(single);
  long double b = gamma(l, e.depth) * abs_sum;
  const long double du = static_cast<long double>(e.depth) * l.u;
  if (du < 0.5L) b = std::min(b, l.u * e.terms / (1.0L - du));
  return b;
}

bool may_overflow(bool sum, bool single, std::uint64_t depth, const Magnitudes& m) {
  const Limits l = limits(single);
  return (sum ? m.abs_sum : m.big) * (1.0L + gamma(l, depth)) > l.max;
}

bool can_reach(long double got, bool sum, bool single, std::uint64_t depth, const Magnitudes& m) {
  if (m.always_nan(sum)) return std::isnan(got);
  const Limits l = limits(single);
  const long double grow = gamma(l, depth);
  if (sum) {
    // A partial sum is at most its positive elements' sum plus the rounding of all it adds.
    const bool pos = m.pos_inf || m.pos_sum + grow * m.abs_sum > l.max;
    const bool neg = m.neg_inf || m.neg_sum + grow * m.abs_sum > l.max;
    if (std::isnan(got)) return pos && neg;
    if (std::isinf(got)) return got > 0 ? pos && !m.neg_inf : neg && !m.pos_inf;
    return false;
  }
  const bool inf = m.pos_inf || m.neg_inf || m.big * (1.0L + grow) > l.max;
  if (std::isnan(got)) return inf && (m.zero || m.small < l.tiny * (1.0L + grow));
  // A zero factor leaves every order 0 or, meeting an infinity, NaN.
  if (std::isinf(got)) return inf && !m.zero && std::signbit(got) == odd(m.negatives);
  return false;
}

FloatCheck check_float(long double got, long double ref, long double exact, bool sum, bool single,
                       const ErrorBudget& e, const Magnitudes& m) {
  FloatCheck c;
  if (m.always_nan(sum)) {
    c.ok = std::isnan(got);
    return c;
  }
  // A product's sign is the parity of its negative factors in every order (IEEE multiplication
  // gives a zero and an infinity their sign too).
  if (!sum && !std::isnan(got) && std::signbit(got) != odd(m.negatives)) return c;
  if (!std::isfinite(got)) {
    // ref's own value is reached (by the exact sum rounded once); anything else only by an order
    // that can give it.
    const bool same = (std::isnan(got) && std::isnan(ref)) || got == ref;
    c.ok = same || can_reach(got, sum, single, e.depth, m);
    c.overflow = c.ok && !same;
    return c;
  }
  const long double target =
      std::isfinite(ref) ? ref : exact;  // ref rounded past the largest value
  if (!std::isfinite(target)) {
    // An infinite element makes every order infinite (or NaN); otherwise the long double product
    // itself left its range, and a finite result cannot be compared: accepted as an overflow.
    c.ok = c.overflow = !m.pos_inf && !m.neg_inf && may_overflow(sum, single, e.depth, m);
    return c;
  }
  const Limits l = limits(single);
  if (sum) {
    c.bound = sum_error_bound(single, e, m.abs_sum) + l.u * std::fabs(target) + l.sub / 2;
  } else {
    const long double k = static_cast<long double>(e.depth + 2) * l.u;
    const bool underflow = m.small < l.tiny * (1.0L + k);
    c.bound = k * std::fabs(target) +
              (underflow ? static_cast<long double>(e.depth + 2) * l.tiny * std::max(1.0L, m.big)
                         : l.tiny);
  }
  c.ok = std::fabs(got - target) <= c.bound;
  return c;
}

std::string overflow_note(long double got, bool sum, bool single, const Magnitudes& m,
                          const std::string& of) {
  const char* type = single ? "float" : "double";
  const std::string largest =
      ", above " + std::string(type) + "'s largest value " + g(limits(single).max);
  const std::string elements = "elements" + (of.empty() ? "" : " " + of);
  if (sum) {
    const std::string pos = "the sum of the positive " + elements + " is " + g(m.pos_sum);
    const std::string neg = "the sum of |x| of the negative " + elements + " is " + g(m.neg_sum);
    const std::string head = std::string("an order of the additions overflows ") + type;
    if (std::isnan(got))
      return head + " to +inf and to -inf, which give NaN: " +
             (m.pos_inf ? std::string("an element is +inf") : pos) + ", " +
             (m.neg_inf ? std::string("an element is -inf") : neg) + largest;
    return head + (got > 0 ? " to +inf: " + pos : " to -inf: " + neg) + largest;
  }
  return std::string("an order of the multiplications overflows ") + type +
         ": the product of the factors above 1 in magnitude" + (of.empty() ? "" : " " + of) +
         " is " + g(m.big) + largest;
}

}  // namespace clreduce
