// float_check.cpp: the tolerance and the overflow and underflow conditions, in long double.
#include "verify/float_check.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace clreduce {
namespace {

struct Limits {
  long double u, max, tiny;
};

Limits limits(bool single) {
  if (single)
    return {0x1p-24L, static_cast<long double>(FLT_MAX), static_cast<long double>(FLT_MIN)};
  return {0x1p-53L, static_cast<long double>(DBL_MAX), static_cast<long double>(DBL_MIN)};
}

std::string g(long double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3Lg", x);
  return b;
}

}  // namespace

void Magnitudes::add(long double x) {
  if (std::isnan(x)) {
    nan = true;
  } else if (std::isinf(x)) {
    (x > 0 ? pos_inf : neg_inf) = true;
  } else {
    const long double a = std::fabs(x);
    abs_sum += a;
    if (a > 1.0L)
      big *= a;
    else if (a > 0.0L && a < 1.0L)
      small *= a;
    else if (a == 0.0L)
      zero = true;
  }
}

bool Magnitudes::always_nan(bool sum) const {
  if (nan) return true;
  return sum ? pos_inf && neg_inf : (pos_inf || neg_inf) && zero;
}

bool may_overflow(bool sum, bool single, std::uint64_t depth, const Magnitudes& m) {
  const Limits l = limits(single);
  const long double grow = 1.0L + static_cast<long double>(depth + 2) * l.u;
  return (sum ? m.abs_sum : m.big) * grow > l.max;
}

FloatCheck check_float(long double got, long double ref, long double exact, bool sum, bool single,
                       std::uint64_t depth, const Magnitudes& m) {
  FloatCheck c;
  if (m.always_nan(sum)) {
    c.ok = std::isnan(got);
    return c;
  }
  if (!std::isfinite(got)) {
    c.ok = (std::isnan(got) && std::isnan(ref)) || got == ref;
    if (!c.ok && may_overflow(sum, single, depth, m)) c.ok = c.overflow = true;
    return c;
  }
  const long double target =
      std::isfinite(ref) ? ref : exact;  // ref rounded past the largest value
  if (!std::isfinite(target)) {
    // An infinite element makes every order infinite (or NaN); otherwise the long double product
    // itself left its range, and a finite result cannot be compared: accepted as an overflow.
    c.ok = c.overflow = !m.pos_inf && !m.neg_inf && may_overflow(sum, single, depth, m);
    return c;
  }
  const Limits l = limits(single);
  const long double k = static_cast<long double>(depth + 2) * l.u;
  if (sum) {
    c.bound = k * m.abs_sum;
  } else {
    const bool underflow = m.small < l.tiny * (1.0L + k);
    c.bound =
        k * std::fabs(target) +
        (underflow ? static_cast<long double>(depth + 2) * l.tiny * std::max(1.0L, m.big) : l.tiny);
  }
  c.ok = std::fabs(got - target) <= c.bound;
  return c;
}

std::string overflow_note(bool sum, bool single, const Magnitudes& m, const std::string& of) {
  const char* type = single ? "float" : "double";
  const std::string largest = g(limits(single).max);
  if (sum)
    return std::string("an order of the additions overflows ") + type + ": the sum of |x|" +
           (of.empty() ? "" : " " + of) + " is " + g(m.abs_sum) + ", above " + type +
           "'s largest value " + largest;
  return std::string("an order of the multiplications overflows ") + type +
         ": the product of the factors above 1 in magnitude" + (of.empty() ? "" : " " + of) +
         " is " + g(m.big) + ", above " + type + "'s largest value " + largest;
}

}  // namespace clreduce
