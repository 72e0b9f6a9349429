// float_check.hpp: the one rule a float sum or product is checked by, for reductions and for every
// element of a scan alike (docs/CLI.md, "Verification and timing"). The reference is the long
// double result; an order of float operations differs from it by rounding, and where the input
// allows it, by overflow (a partial result past the type's largest value becomes ±inf, then maybe
// NaN) or underflow (a partial product below the smallest normal loses precision or becomes 0).
#pragma once

#include <cstdint>
#include <string>

namespace clreduce {

// What the tolerance depends on, accumulated over the elements a result combines.
struct Magnitudes {
  long double abs_sum = 0.0L;  // sum of |x| over the finite elements
  long double big = 1.0L;      // product of |x| over the finite elements with |x| > 1
  long double small = 1.0L;    // product of |x| over the elements with 0 < |x| < 1
  bool nan = false;            // a NaN element
  bool pos_inf = false, neg_inf = false, zero = false;

  void add(long double x);
  // True when every order gives NaN: a NaN element, +inf and -inf in a sum, inf and 0 in a product.
  bool always_nan(bool sum) const;
};

struct FloatCheck {
  bool ok = false;
  bool overflow = false;  // accepted only because an order may overflow (the result is ±inf or NaN)
  long double bound = 0.0L;  // the tolerance used (0 when no finite comparison was made)
};

// True when some order of the operations can leave the accumulator type's finite range: a sum
// whose (1 + (depth + 2)u)·Σ|x| exceeds the largest finite value, a product whose factors above 1
// in magnitude, so widened, do.
bool may_overflow(bool sum, bool single, std::uint64_t depth, const Magnitudes& m);

// Checks got against ref, the long double result rounded to the accumulator type (float when
// single, else double), with exact the unrounded long double result. depth: for a sum, the longest
// chain of additions; for a product, the number of factors.
//  - every order gives NaN (Magnitudes::always_nan): got must be NaN;
//  - got is ±inf or NaN: it must equal ref (NaN matches NaN), unless may_overflow(), when it is
//    accepted with overflow set;
//  - got is finite: |got - ref| <= bound, or |got - exact| <= bound where ref rounded to ±inf
//    (where exact itself is not finite and no element is infinite, the long double product left
//    its own range: accepted as an overflow when may_overflow());
//    sum: bound = (depth + 2)·u·Σ|x|; prod: bound = (depth + 2)·u·|ref| + the smallest normal
//    number, or, where a partial product can fall below it (the factors below 1 in magnitude
//    multiply to less than it), + (depth + 2)·(smallest normal)·max(1, the product of the factors
//    above 1): the error of each underflowing step (flushed to zero at worst) grown by every
//    factor after it.
FloatCheck check_float(long double got, long double ref, long double exact, bool sum, bool single,
                       std::uint64_t depth, const Magnitudes& m);

// Why a result was accepted as an overflow, in words: "an order of the additions overflows float:
// the sum of |x| is 1.2e+39, above float's largest value 3.4e+38"; `of` follows "|x|" ("of the
// elements y[2] combines").
std::string overflow_note(bool sum, bool single, const Magnitudes& m, const std::string& of = "");

}  // namespace clreduce
