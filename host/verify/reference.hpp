// reference.hpp: the seeds' sequential loop (the timed baseline) and the verification reference.
// Ints are exact with NumPy's wrap-around; float sums are checked against the correctly rounded
// sum within a bound proportional to the sum of |x| (see verify()), or bit for bit.
#pragma once

#include <cstdint>
#include <string>

#include "clreduce/types.hpp"
#include "verify/float_check.hpp"

namespace clreduce {

// The seeds' loop, `acc = OP(acc, x[i])` in the accumulator type, one pass in index order.
// Requires a.n > 0 unless the op has an identity. `acc` is the accumulator type
// (resolve_acc()); omitted, NumPy's.
Value sequential_reduce(const HostArray& a, Op op);
Value sequential_reduce(const HostArray& a, Op op, DType acc);

// The reference result: sequential_reduce for ints, min, max and arg ops; for float sums the
// correctly rounded sum (exact_sum.hpp); for float products the long double product rounded to
// the accumulator type.
Value reference_reduce(const HostArray& a, Op op);
Value reference_reduce(const HostArray& a, Op op, DType acc);

// Sum of |x| in long double; 0 for integer arrays.
long double abs_sum(const HostArray& a);

// What a float sum's or product's check needs besides the rounded reference, from one pass over
// the array: the unrounded long double result and the magnitudes (float_check.hpp). Zero for
// integer arrays and for min, max and the arg ops.
struct FloatStats {
  long double exact = 0.0L;
  Magnitudes m;
};
FloatStats float_stats(const HostArray& a, Op op);

// The identity of op (0 for sum, 1 for prod) as a value of the accumulator type.
Value identity_value(Op op, DType acc);

struct Verdict {
  bool ok = false;
  bool overflow = false;  // ok only because an order of the float operations may overflow
  double bound = 0.0;     // the absolute tolerance used (0 for exact comparisons)
  std::string why;        // why not ok; when ok through overflow, what overflowed; else empty
};

// Compares a device result with the reference. Ints, min, max and arg ops must match exactly
// (NaN matches NaN; arg ops compare the index too). Float sums and products follow check_float()
// (float_check.hpp) with the variant's error budget: for sums |got - ref| <= min(γ_d·Σ|x|,
// u·T / (1 - d·u)) + u·|ref|, T from the variant's tree (verify/sum_model.hpp) or d·Σ|x|, d the
// most additions on any element's path; for products (d + 2)·u·|ref| plus an underflow term, d
// the number of factors (every multiplication rounds, whatever the order). A sum is never -0
// (every order that adds from +0, as NumPy's does, gives +0 where the sum is zero), a product has
// the sign of its factors; where an order of the operations may overflow, ±inf or NaN of the
// sign it can reach is accepted with overflow set.
Verdict verify(const Value& got, const Value& ref, Op op, const ErrorBudget& budget,
               const FloatStats& stats);
// The same with the classical budget of depth d (d·Σ|x|).
Verdict verify(const Value& got, const Value& ref, Op op, std::uint64_t depth,
               const FloatStats& stats);
// The same with only the sum of |x| known (exact = ref, no product magnitudes; either sign may
// overflow; a product's sign is ref's).
Verdict verify(const Value& got, const Value& ref, Op op, std::uint64_t depth, long double sum_abs);

// For correctly rounded float sums (variant `exact`): got must have the bits of ref, the
// correctly rounded sum (any NaN matches any NaN).
Verdict verify_bitwise(const Value& got, const Value& ref);

}  // namespace clreduce
