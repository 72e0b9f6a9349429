// float_check.hpp: the one rule a float sum or product is checked by, for reductions and for every
// element of a scan alike (docs/ACCURACY.md, "The bound"; docs/CLI.md, "Verification and
// timing"). The reference is the exact result rounded once; an order of float operations differs
// from it by rounding, and where the input allows it, by overflow (a partial result past the
// type's largest value becomes ±inf, then maybe NaN) or underflow (a partial product below the
// smallest normal number loses precision or becomes 0).
#pragma once

#include <cstdint>
#include <string>

namespace clreduce {

// What the tolerance depends on, accumulated over the elements a result combines.
struct Magnitudes {
  long double abs_sum = 0.0L;   // sum of |x| over the finite elements
  long double pos_sum = 0.0L;   // sum of the finite elements above 0
  long double neg_sum = 0.0L;   // sum of |x| over the finite elements below 0
  long double big = 1.0L;       // product of |x| over the finite elements with |x| > 1
  long double small = 1.0L;     // product of |x| over the elements with 0 < |x| < 1
  std::uint64_t negatives = 0;  // elements with the sign bit set (-0 and -inf too; not NaN)
  bool nan = false;             // a NaN element
  bool pos_inf = false, neg_inf = false, zero = false;

  void add(long double x);
  // True when every order gives NaN: a NaN element, +inf and -inf in a sum, inf and 0 in a product.
  bool always_nan(bool sum) const;
};

// The rounding error one float sum can carry, from the tree that computed it. Each addition
// rounds its exact operands' sum s by at most u·|s| (u the unit roundoff), and a sum's error is
// the sum of those roundings; so with T >= Σ|s| over its additions (taken at the exact partial
// sums) and d the most additions on any path from an element to the result,
//   |computed - exact| <= u·T / (1 - d·u)         (the second factor: errors inside partial sums)
// (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §4.2). A variant that knows
// only its depth takes T = d·Σ|x|: each element is in at most d partial sums, and the bound is
// the classical γ_d·Σ|x|. A variant that knows its tree's chains takes T from the data
// (verify/sum_model.hpp), which is far tighter where the partial sums cancel.
// For products: depth is the number of factors, terms unused.
struct ErrorBudget {
  std::uint64_t depth = 0;   // the most operations on a path from an element to the result
  long double terms = 0.0L;  // T: an upper bound of Σ|s| over the additions (sums)
  // The classical budget of a tree of depth d over elements whose Σ|x| is abs_sum.
  static ErrorBudget classical(std::uint64_t d, long double abs_sum) {
    return {d, static_cast<long double>(d) * abs_sum};
  }
};

// The bound on |computed - exact| of a float sum with budget e, in the accumulator type (float
// when single, else double): min(γ_d·Σ|x|, u·T / (1 - d·u)), with γ_d = (1 + u)^d - 1 (for any d).
long double sum_error_bound(bool single, const ErrorBudget& e, long double abs_sum);

struct FloatCheck {
  bool ok = false;
  bool overflow = false;  // accepted only because an order may overflow (the result is ±inf or NaN)
  long double bound = 0.0L;  // the tolerance used (0 when no finite comparison was made)
};

// True when some order of the operations can leave the accumulator type's finite range: a sum
// whose (1 + γ_d)·Σ|x| exceeds the largest finite value, a product whose factors above 1 in
// magnitude, so widened, do.
bool may_overflow(bool sum, bool single, std::uint64_t depth, const Magnitudes& m);

// Whether some order of the operations can give `got` (±inf or NaN): a sum reaches +inf only
// from a +inf element or where its positive elements, widened by rounding, pass the largest
// finite value (-inf alike, from the negative ones), and NaN only where both can happen (or from
// a NaN element); a product reaches ±inf from an infinite factor or where its factors above 1
// in magnitude can pass the largest value, never with a zero factor, always with the sign of its
// factors (the count of negative ones), and NaN only where an infinity can meet a 0 (a zero
// factor, or partial products that may fall below the smallest normal number).
bool can_reach(long double got, bool sum, bool single, std::uint64_t depth, const Magnitudes& m);

// Checks got against ref, the exact result rounded to the accumulator type (float when single,
// else double), with exact the unrounded result (long double). e: the budget (for a product,
// e.depth is the number of factors).
//  - every order gives NaN (Magnitudes::always_nan): got must be NaN;
//  - got is ±inf or NaN: it must be ref or what some order gives (can_reach(); overflow is set
//    where got differs from ref, i.e. where it was accepted only because an order may overflow);
//  - a product's sign (zeros and infinities included) is that of its factors in every order: got
//    must have it;
//  - got is finite: |got - ref| <= bound, or |got - exact| <= bound where ref rounded to ±inf
//    (where exact itself is not finite and no element is infinite, the long double product left
//    its own range: accepted as an overflow when may_overflow());
//    sum: bound = sum_error_bound() + u·|ref| (ref's own rounding) + half the smallest subnormal;
//    prod: bound = (d + 2)·u·|ref| + the smallest normal number, or, where a partial product can
//    fall below it (the factors below 1 in magnitude multiply to less than it),
//    + (d + 2)·(smallest normal)·max(1, the product of the factors above 1): the error of each
//    underflowing step (flushed to zero at worst) grown by every factor after it.
FloatCheck check_float(long double got, long double ref, long double exact, bool sum, bool single,
                       const ErrorBudget& e, const Magnitudes& m);

// Why a result `got` (±inf or NaN) was accepted as an overflow, in words: "an order of the
// additions overflows float to +inf: the sum of the positive elements is 6.8e+38, above float's
// largest value 3.4e+38"; `of` follows "elements" ("of the elements y[2] combines").
std::string overflow_note(long double got, bool sum, bool single, const Magnitudes& m,
                          const std::string& of = "");

}  // namespace clreduce
