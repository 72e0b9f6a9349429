// exact_sum.hpp: the correctly rounded sum of a float or double array (the exact real sum of the
// elements rounded once, to nearest-even) and the distance of a result from it. `exact` is checked
// against it bit for bit; every float sum's error is measured against it. It shares no code or
// scheme with the kernel: elements are binned by exponent (Malcolm's method), the bins added into
// radix-2^64 magnitudes, positives and negatives apart, and the difference rounded by comparing
// the remainder with half an ulp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "clreduce/types.hpp"

namespace clreduce {

// The correctly rounded sum of x[0..n) (from 2^22 elements on the host's cores, as
// exact_state): IEEE's specials (a NaN, or +inf with -inf: NaN; else an
// infinity: itself), a finite sum beyond the largest finite value: infinity of its sign; an exact
// zero: +0, even where every element is -0 (NumPy's sum adds from +0, and so does every variant).
float exact_sum(const float* x, std::size_t n);
double exact_sum(const double* x, std::size_t n);
// The same for a float or double array, as a Value of its type; throws Error(kInternal) otherwise.
Value exact_sum(const HostArray& a);

// The exact sum of float or double pieces before its one rounding: what `exact`'s kernel leaves
// after its rounded result (cl/reduce_exact.cl), and what chunks, devices and MPI ranks fold.
// A fixed-point integer in 32-bit digits held in 64-bit limbs, least significant first, whose
// unit is the type's smallest subnormal (2^-149, 2^-1074); float uses 12 limbs, double all 68
// (the type's range and 64 bits more). Normalised (exact_add, exact_state_of): limbs below the
// top in [0, 2^32), the top one signed (two's complement over all kLimbs). A fixed-size POD, so
// MPI moves it as bytes.
struct ExactState {
  static constexpr std::size_t kLimbs = 68;
  static constexpr std::uint32_t kNaN = 1, kPosInf = 2, kNegInf = 4;
  std::int64_t limb[kLimbs] = {};
  std::uint32_t flags = 0;  // the kernel's flags: the k* above
  std::uint32_t empty = 1;  // no element was added: the sum is +0
};

// The state of limbs[0..count) (count <= kLimbs; any int64 values, not normalised) and flags,
// of at least one element, normalised. Throws Error(kInternal) for flags no kernel writes.
ExactState exact_state_of(const std::int64_t* limbs, std::size_t count, std::uint64_t flags);
// The host's own state of a float or double array (its exact sum by the reference's scheme);
// from 2^22 elements, blocks of it on the host's cores, their states added exactly (exact_add).
ExactState exact_state(const HostArray& a);
ExactState exact_state(const float* x, std::size_t n);
ExactState exact_state(const double* x, std::size_t n);
// into += from, exactly (integer limbs with carries, flags OR-ed); an empty side adds nothing.
void exact_add(ExactState& into, const ExactState& from);
// Whether a and b (normalised) are the same sum: the same specials (NaN, +inf, -inf) and, where
// there are none, the same limbs (the kernel drops the limbs of a piece where a special is seen,
// which no later piece can undo).
bool same_state(const ExactState& a, const ExactState& b);
// The state rounded once to t (kFloat or kDouble) as exact_sum rounds: to nearest, ties to even,
// IEEE's specials, overflow to infinity, an exact zero +0 (as NumPy's sum gives it).
Value exact_round(DType t, const ExactState& s);

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
