// expr_check.hpp: the verification of user reductions, of the built-in ops that are rows of the
// engine (expr_ops.hpp) and of segmented reductions (segments.hpp), shared by the command line
// and the library's API: the predicate's mask, the references (the host's in higher precision for
// the rows, one work-item in index order for user expressions, the sequential reference of each
// segment for the built-in ops) and the bound each result must meet.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/types.hpp"
#include "reduce/expr.hpp"
#include "reduce/segments.hpp"
#include "runtime/context.hpp"

namespace clreduce {

// The verdict on one result.
struct ExprVerdict {
  bool ok = true;
  std::string why;          // empty when ok
  double bound = 0;         // floats: the largest distance allowed
  Value result;             // the result, post applied
  Value expected;           // the reference, post applied alike
  std::uint64_t count = 0;  // rows: the elements the predicate selected
};

// A row (op of expr_op_names()): `result` (after post) against the host's reference of `arrays`
// in higher precision within the op's bound (integers equal).
ExprVerdict verify_row(const std::string& op, const std::vector<HostArray>& arrays,
                       const std::vector<unsigned char>& mask, double ddof, DType acc,
                       std::uint64_t depth, const Value& result, const ExprSpec* row = nullptr);

// A user reduction: `result` (the reduced accumulator, before post) against one work-item
// folding in index order (er.reference()); floats within (gamma_depth + gamma_n') times the
// larger of the reference's magnitude and the fold of |map|. The verdict's values have post
// applied, on the device. The reference's launch is appended to seq_events.
ExprVerdict verify_user(ExprReduction& er, const std::vector<cl::Buffer>& in, std::size_t n,
                        const Value& result, TimeLimit limit, std::vector<cl::Event>& seq_events);

// The same over arrays in pieces (n elements in all), whose fold after the launches adds
// fold_depth operations to an element's chain (the float bound's depth).
ExprVerdict verify_user(ExprReduction& er, const ExprPieces& pieces, std::size_t n,
                        std::uint64_t fold_depth, const Value& result, TimeLimit limit,
                        std::vector<cl::Event>& seq_events);

// Result q's elements of x, as an array of their own (a view where they lie together).
HostArray gather_segment(const HostArray& x, const SegmentLayout& layout, std::uint64_t q);

// The verdict on every result of a segmented reduction.
struct SegmentVerdict {
  bool ok = true;
  std::string why;              // "segment q: ..." of the first result that failed
  double bound = 0;             // floats: the largest bound of any result
  std::uint64_t shown = 0;      // the first result that failed, else 0
  std::vector<Value> expected;  // per result (user reductions: post applied)
  bool overflow = false;        // a float result verified as an overflow
};

// A built-in op: each of results (one per segment of sr's layout) against the sequential
// reference of its own elements of x.
SegmentVerdict verify_segments(const SegmentReduction& sr, Op op, DType acc, const HostArray& x,
                               const std::vector<Value>& results);
// The same over layout, depth(q) being the longest chain of operations behind result q, against
// expected (one per result: the references of an earlier verdict, SegmentVerdict::expected) or,
// when it is empty, against references computed here: for the results of another
// implementation of the same op (the OpenMP peer).
SegmentVerdict verify_segments(const SegmentLayout& layout, Op op, DType acc, const HostArray& x,
                               const std::vector<Value>& results,
                               const std::vector<Value>& expected,
                               const std::function<std::uint64_t(std::uint64_t)>& depth);
// A user reduction: each of results (accumulators before post) against sr's one-work-item
// reference, as verify_user(); results and the verdict's expected values get post applied.
SegmentVerdict verify_segments_user(SegmentReduction& sr, const std::vector<cl::Buffer>& in,
                                    DType acc, std::vector<Value>& results, TimeLimit limit,
                                    std::vector<cl::Event>& seq_events);
// A row per segment: each of results (post applied) against the host's reference of its own
// elements of arrays and mask, as verify_row().
SegmentVerdict verify_segments_row(const SegmentReduction& sr, const std::string& op,
                                   const std::vector<HostArray>& arrays,
                                   const std::vector<unsigned char>& mask, double ddof, DType acc,
                                   const std::vector<Value>& results);

}  // namespace clreduce
