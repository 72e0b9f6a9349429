// fold.hpp: results of consecutive pieces of one array (chunks on one device, shares of several
// devices, slices of MPI ranks) folded into the result of the whole, in piece order: integers
// exactly (wrapping as the accumulator type does), arg ops with global indices and the
// first-index rule, NaN as the kernels treat it, floats in the accumulator type; and the running
// value a scan carries from one piece into the next.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clreduce/types.hpp"
#include "reduce/variant.hpp"
#include "verify/exact_sum.hpp"

namespace clreduce {

// op(earlier, later) in the accumulator type `earlier.type` (both must have it): sums and
// products wrap for integers and round once for floats; min and max return NaN when either is
// NaN; arg ops keep the earlier on a tie, and the first NaN.
Value fold_values(Op op, const Value& earlier, const Value& later);

// Converts v (any type) to the accumulator type acc, as the kernels' conversion does.
Value convert_value(const Value& v, DType acc);

// Folds the results of a reduction's pieces, added in piece order. For plans whose partial
// results fold exactly only with more than the rounded value (exact: the correctly rounded sum),
// add() takes the whole out_bytes() the plan left: the rounded value, then the exact state
// (verify/exact_sum.hpp's ExactState, as cl/reduce_exact.cl writes it at byte 8: its limbs, then
// its flags, as int64), which are added exactly and rounded once, by result().
class ReduceFold {
 public:
  // p: the problem of the whole array; out_bytes: what one piece's plan leaves at out
  // (ReducePlan::out_bytes()); exact: the pieces are correctly rounded sums (exact), whose fold
  // must be too. Throws Error(Errc::kUnsupported) where the pieces cannot be folded so.
  ReduceFold(const ReduceProblem& p, std::size_t out_bytes, bool exact);
  // Empty when a plan's pieces can be folded; else why not.
  static std::string cannot_fold(const ReducePlan& plan);
  // The bytes a plan left at out for the piece that starts at element `offset` of the array.
  void add(const unsigned char* out, std::uint64_t offset);
  // A piece's value, its index (arg ops) already global. Not for exact folds (Errc::kInternal).
  void add(const Value& v);
  // Every piece of `later` (a fold of the same problem and kind over the part of the array that
  // starts at element `offset`), after this fold's: exact folds add its state; others its result.
  void add(const ReduceFold& later, std::uint64_t offset);
  // The whole's result (the identity when nothing was added: sum and prod only).
  Value result() const;
  std::size_t pieces() const { return pieces_; }
  bool exact() const { return exact_; }
  // Exact folds: the pieces' exact state so far (empty when none), for a combine of ranks.
  const ExactState& exact_state() const { return state_; }

 private:
  ReduceProblem p_;
  std::size_t out_bytes_;
  bool exact_;
  std::size_t pieces_ = 0;
  Value acc_;
  ExactState state_;  // exact folds: the sum of the pieces' states
};

// The running value after a scan's piece, to carry into the next: the piece's last output
// (an inclusive scan's value, of type acc) or, for an exclusive scan, that output op the
// piece's last input element (`last_in`, of the element type). A segment start at the last
// element needs no special case: an exclusive scan's output there is the identity.
Value scan_carry(Op op, DType acc, bool exclusive, const Value& last_out, const Value& last_in);

// What a scan's piece, scanned without a carry-in, passes on to the pieces after it: its
// running value at the end, and whether a segment starts in it (then nothing from before the
// piece reaches past it). An empty piece passes nothing on.
struct ScanCarry {
  Value value;         // the running value after the piece (acc type), from scan_carry()
  bool reset = false;  // a segment starts in the piece
  bool empty = true;   // the piece has no elements
};

// The seeds' flag operator on pieces, earlier then later: a later piece with a segment start
// keeps its own running value; otherwise the two fold. Associative, so pieces may be combined
// in any grouping (an MPI_Exscan's).
ScanCarry fold_carry(Op op, const ScanCarry& earlier, const ScanCarry& later);

// The exclusive scan of pieces' ScanCarry in piece order: element s is what reaches piece s from
// the pieces before it (empty for the first, and while only empty pieces came before).
std::vector<ScanCarry> exclusive_carries(Op op, const std::vector<ScanCarry>& pieces);

// The carry-in pass on the host, for outputs already there: each of out's n elements (type acc)
// before the first nonzero flag (flags null: all n) becomes carry OP y, as cl/scan_carry.cl
// computes it. In parallel for large n.
void apply_carry_host(Op op, DType acc, unsigned char* out, std::size_t n,
                      const std::uint8_t* flags, const Value& carry);

// The first nonzero flag among n (flags null: n), searched a word at a time.
std::size_t first_flag(const std::uint8_t* flags, std::size_t n);

}  // namespace clreduce
