// exact_sum.hpp: the correctly rounded sum of a float or double array (the exact real sum of the
// elements rounded once, to nearest-even) and the distance of a result from it. `exact` is checked
// against it bit for bit; every float sum's error is measured against it. It shares no code or
// scheme with the kernel: elements are binned by exponent (Malcolm's method), the bins added into
// radix-2^64 magnitudes, positives and negatives apart, and the difference rounded by comparing
// the remainder with half an ulp.
#pragma once

#include <cstddef>

#include "clreduce/types.hpp"

namespace clreduce {

// The correctly rounded sum of x[0..n): IEEE's specials (a NaN, or +inf with -inf: NaN; else an
// infinity: itself), a finite sum beyond the largest finite value: infinity of its sign; an exact
// zero: +0, or -0 when n >= 1 and every element is -0 (what any order of IEEE additions gives).
float exact_sum(const float* x, std::size_t n);
double exact_sum(const double* x, std::size_t n);
// The same for a float or double array, as a Value of its type; throws Error(kInternal) otherwise.
Value exact_sum(const HostArray& a);

// Whether got and ref, both of float type t (kFloat or kDouble), have the same bits once rounded
// to t; any NaN matches any NaN.
bool same_bits(const Value& got, const Value& ref);

// How far a float result is from the reference, in the type of ref (kFloat or kDouble):
// ulps: representable values of that type from one to the other (0 when equal, +0 and -0 are
// one value); rel: |got - ref| / |ref| (0 when equal, inf when ref = 0 and got is not). Both
// are NaN when exactly one of them is NaN, and ulps is inf when one is infinite and the other not.
struct FloatError {
  double ulps = 0.0;
  double rel = 0.0;
};
FloatError float_error(const Value& got, const Value& ref);

}  // namespace clreduce
