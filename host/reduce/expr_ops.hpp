// expr_ops.hpp: the built-in ops that are rows of the user-reduction engine (expr.hpp): dot,
// norm2, mean, var, std, count, any, all, logsumexp. Each is a map, reduce, identity and post over
// cl/reduce_expr.cl's helpers, with an accumulator of one, two or four values (a compensated sum,
// BLAS nrm2's scale and sum of squares, shifted sums or Chan's count, mean and M2, logsumexp's
// max and rescaled sum), some with an element fold and CPU lanes of their own (ExprSpec::fold,
// lanes); and the host's reference for each, in higher precision, with the bound the result
// must meet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clreduce/options.hpp"
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
  // The caller runs var's and std's second pass where the first one's condition needs it
  // (var_second_shift()): float and float16 arrays in double then take the shifted sums (else,
  // and for other arrays, Chan's pairwise combine). The segments' paths do not.
  bool second_pass = false;
  // The rows' alternatives, from the tuning knobs (set_row_tuning()): element folds for minmax
  // and logsumexp (expr-fold), var's shifted sums (var-sums), logsumexp's fold with a float exp
  // (lse-exp), the count from n for mean, var and std without a predicate (row-count).
  bool folds = true;
  bool var_sums = true;
  bool lse_expf = true;
  bool count_from_n = true;
};

// The Tuning knobs expr-fold, var-sums, lse-exp and row-count into o.
void set_row_tuning(ExprOpOptions& o, const Tuning& t);

// var and std as shifted sums (ExprSpec::var_sums): whether the whole array's accumulator acc
// (before post; n elements, the launch's depth) is within its one-pass bound,
// gamma_{3 depth + 10} * S2 <= 2^-24 * M2 (S2 the sum of squares of x - shift, M2 the sum of
// squares about the mean, as the accumulator gives them): else the second pass's shift, the
// mean (shift + S1 / count), and NaN when none is needed (also for non-finite sums: inf and NaN
// go through, as one pass gives them).
double var_second_shift(const ExprSpec& spec, const std::vector<unsigned char>& acc,
                        std::uint64_t n, std::uint64_t depth);

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
// row: the row's spec where its bound depends on its path (var and std as shifted sums: the
// bound of the pass that gave the result, shifted by row->shift); null: the default path's.
ExprOpReference expr_op_reference(const std::string& op, const std::vector<HostArray>& arrays,
                                  const std::vector<unsigned char>& mask, double ddof,
                                  DType result_type, std::uint64_t depth,
                                  const ExprSpec* row = nullptr);

}  // namespace clreduce
