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

// Whether op is one of the rows.
bool is_expr_op(const std::string& op);
// The rows: dot, norm2, mean, var, std, count, any, all, logsumexp.
const std::vector<std::string>& expr_op_names();
// Arrays the op reads itself: 2 for dot, else 1.
std::size_t expr_op_arrays(const std::string& op);

struct ExprOpOptions {
  std::string where;  // the predicate over x, y, z, w; empty: every element
  double ddof = 0;    // var, std: the divisor is count - ddof (NumPy's)
  bool fp64 = true;   // the device has double: float ops work in double
  double shift = 0;   // var, std: a value near the data (its first element), subtracted first
};

// The row for op over arrays of `inputs` types. Throws Error(Errc::kUsage) for an op that is not
// a row or input types it does not take.
ExprSpec expr_op_spec(const std::string& op, const std::vector<DType>& inputs,
                      const ExprOpOptions& o);

// The host's answer for op, in higher precision, and the bound a result must meet.
struct ExprOpReference {
  Value value;              // the reference in the result's type (NaN, inf as the op gives them)
  std::uint64_t count = 0;  // the elements selected (the predicate's true ones)
  bool exact = false;       // integer results: must be equal
  // The largest |result - value| allowed for a finite value (a non-finite one must be the
  // same): the op's bound for the launch's depth d and the working type's unit roundoff.
  double bound = 0;
};

// mask: one byte per element, nonzero where the predicate holds (empty: every element). u: the
// working type's unit roundoff; depth: ExprReduction::depth(). result_type: the row's acc.
ExprOpReference expr_op_reference(const std::string& op, const std::vector<HostArray>& arrays,
                                  const std::vector<unsigned char>& mask, double ddof,
                                  DType result_type, std::uint64_t depth);

}  // namespace clreduce
