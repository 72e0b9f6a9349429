// expr_ops.hpp: the built-in ops that are rows of the user-reduction engine (expr.hpp): dot,
// norm2, mean, var, std, count, any, all, logsumexp. Each is a map, reduce, identity and post over
// cl/reduce_expr.cl's helpers, with an accumulator of one, two or four values (a compensated sum,
// BLAS nrm2's scale and sum of squares, Chan's count, mean and M2, logsumexp's max and rescaled
// sum); and the host's reference for each, in higher precision, with the bound the result must
// meet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clreduce/types.hpp"
#include "reduce/expr.hpp"

namespace clreduce {

// Whether op is one of the rows that only the engine runs.
bool is_expr_op(const std::string& op);
// Those rows: dot, norm2, mean, var, std, count, any, all, logsumexp, minmax.
const std::vector<std::string>& expr_op_names();
// The variants' ops as rows too (sum, prod, min, max, argmin, argmax): the engine runs them
// where the variants cannot (--where, the engine's input types, --acc double of float sums).
bool is_builtin_row(const std::string& op);
// The row's result type: sum and prod its accumulator, min, max, argmin, argmax and minmax the
// element type (the engine's accumulator holds it exactly), the other rows their accumulator.
DType expr_op_result_type(const std::string& op, DType element, DType acc);
// Whether the row has no identity: min, max, argmin, argmax, minmax (an empty selection has no
// result, as NumPy's zero-size reduction).
bool expr_op_needs_elements(const std::string& op);
// Arrays the op reads itself: 2 for dot, else 1.
std::size_t expr_op_arrays(const std::string& op);

struct ExprOpOptions {
  std::string where;  // the predicate over x, y, z, w; empty: every element
  double ddof = 0;    // var, std: the divisor is count - ddof (NumPy's)
  bool fp64 = true;   // the device has double: float ops work in double
  double shift = 0;   // var, std: a value near the data (its first element), subtracted first
                      // (ExprSpec::shift: a kernel argument, so no new program per value)
  std::string acc;    // sum, prod: --acc (empty: NumPy's; double for float16 and float inputs)
};

// The row for op over arrays of `inputs` types. Throws Error(Errc::kUsage) for an op that is not
// a row or input types it does not take.
ExprSpec expr_op_spec(const std::string& op, const std::vector<DType>& inputs,
                      const ExprOpOptions& o);

// The host's answer for op, in higher precision, and the bound a result must meet.
struct ExprOpReference {
  Value value;              // the reference in the result's type (NaN, inf as the op gives them)
  Value value2;             // minmax: the greatest (value: the least), with their indices
  std::uint64_t count = 0;  // the elements selected (the predicate's true ones)
  // A float sum or product whose partial results may overflow in some order (sum |x|, or the
  // product of max(1, |x|), past the working type's largest): a non-finite result is then
  // accepted as the overflow it is.
  bool may_overflow = false;
  bool exact = false;  // integer results, and min, max and arg ops: must be equal (floats:
                       // the same number, or both NaN; indices equal)
  // The largest |result - value| allowed for a finite value (a non-finite one must be the
  // same): the op's bound for the launch's depth d and the working type's unit roundoff.
  double bound = 0;
};

// mask: one byte per element, nonzero where the predicate holds (empty: every element). u: the
// working type's unit roundoff; depth: ExprReduction::depth(). result_type: the row's acc
// (min, max, argmin, argmax, minmax: its result type, expr_op_result_type()).
// Element k's value as a double (float16 converted exactly; 64-bit integers rounded).
double element_value(const HostArray& a, std::size_t k);
ExprOpReference expr_op_reference(const std::string& op, const std::vector<HostArray>& arrays,
                                  const std::vector<unsigned char>& mask, double ddof,
                                  DType result_type, std::uint64_t depth);

}  // namespace clreduce
