// sum_model.hpp: the tree of additions a variant's float sum follows, as far as its error bound
// needs it, and that bound's budget (float_check.hpp's ErrorBudget) over the data it ran on.
// Every variant knows its depth (the most additions on any element's path to the result); one
// whose elements go through sequential chains first (a work-item's loop over its elements, each
// chain from the identity, in index order) says which elements each chain takes, so that the
// budget can use the chains' own partial sums: on data whose partial sums cancel (random signs)
// they stay far below the sums of |x| the classical bound assumes, and an element missing from
// the result no longer hides inside the bound (docs/ACCURACY.md, "The bound").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "clreduce/types.hpp"
#include "verify/float_check.hpp"

namespace clreduce {

struct SumModel {
  enum class Kind {
    kDepth,    // only the depth is known: the classical budget, depth·Σ|x|
    kStrided,  // chains of elements `period` apart (grid-stride loops)
    kRuns,     // chains of vector lanes over contiguous runs (fast's CPU shape)
  };
  Kind kind = Kind::kDepth;
  std::uint64_t depth = 0;  // the most additions on any element's path to the result
  // kStrided: element i's chain is key(i mod period), key(q) = (q / (fold·width))·width +
  // q mod width: with fold 1 and width = period, the chains are the residues mod period (a
  // grid-stride loop over `period` work-items); with fold 2, a work-item's loop takes elements
  // q and q + width of each 2·width block (ladder kernel 7).
  std::uint64_t period = 1, width = 1, fold = 1;
  // kRuns: the body of whole vectors of `vec` elements (after a head of fewer than vec elements
  // that the address leaves unaligned) is dealt in runs of ceil(vectors / items) to `items`
  // work-items; each run is read as `streams` equal parts side by side, its remainder after the
  // first part; each lane of each part is a chain (the remainder continues part 0's lanes).
  std::uint64_t vec = 1, items = 1, streams = 1;
  // Elements that may lie outside every chain, added above them: the first and the last `edge`
  // elements (a head before the first aligned vector, a tail after the last whole one). The head
  // depends on the buffer's address, which the host need not know: the budget holds for every
  // head below `edge` + 1.
  std::uint64_t edge = 0;
  // The most additions on a path from a chain's result (or an edge element) to the result.
  std::uint64_t above = 0;

  static SumModel depth_only(std::uint64_t d) {
    SumModel m;
    m.depth = d;
    return m;
  }
};

// A piece's budget, its elements and their sum (in long double; for the folds after it).
struct SumPiece {
  ErrorBudget budget;
  long double sum = 0.0L;
  long double abs_sum = 0.0L;
  std::uint64_t count = 0;
};

// The budget of a sum of x[0..n) (float or double elements) computed as m says: T is the sum of
// |s| over the chains' additions (from their exact partial sums), plus `above` times the sum of
// the chains' |results| and the edge elements' |x|, plus what moving the chains' ends by up to
// `edge` elements can add; kDepth: depth·Σ|x|. Partial sums are taken in double and T is
// widened by their own rounding. The depth is at most n - 1 whatever the model says: a sum of n
// elements is a tree of n leaves (additions of the identity are exact). Integer arrays: an empty
// budget.
SumPiece sum_budget(const SumModel& m, DType type, const void* x, std::size_t n);

// The budget of pieces (chunks, devices' shares, ranks' slices) whose results are folded one
// after another, in order: theirs, plus the fold's own additions (at its exact partial sums),
// one more level of depth per piece (at most the elements' count - 1 in all). `any_order`: the
// pieces are combined by some tree of their order (an MPI reduction): each of them is taken to pass
// through every combine.
SumPiece fold_budgets(const std::vector<SumPiece>& pieces, bool any_order = false);

}  // namespace clreduce
