// segments.hpp: many reductions in one launch (cl/reduce_segments.cl): one per segment of an
// array given by offsets (CUB's DeviceSegmentedReduce with begin = off[s], end = off[s+1]), or one
// per line of an N-dimensional C-order array along some of its axes (NumPy's axis=). The op is a
// built-in one (sum, prod, min, max, argmin, argmax; arg ops give the index within the segment or
// along the axis) or a user reduction (expr.hpp). Segments map to work-items by their lengths: a
// work-item, a few lanes or a work-group each, several work-groups for a long one, with no launch
// per segment; lines along other axes than the last are read in place, a work-item per result
// (coalesced), never transposed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/types.hpp"
#include "reduce/expr.hpp"
#include "reduce/variant.hpp"
#include "runtime/context.hpp"

namespace clreduce {

// Which elements each result combines, in index order.
struct SegmentLayout {
  // Contiguous segments (columns false): result s combines [offsets[s], offsets[s+1]).
  std::vector<std::int64_t> offsets;
  // Strided lines (columns true): the array seen as [O, R1, I, R2, J], one result per (o, i, j)
  // (in that order, j fastest) over (r1, r2) in index order.
  bool columns = false;
  std::uint64_t O = 1, R1 = 1, I = 1, R2 = 1, J = 1;

  std::uint64_t results() const;
  // The elements result q combines.
  std::uint64_t length(std::uint64_t q) const;
  // The address of element k (in index order) of result q.
  std::uint64_t at(std::uint64_t q, std::uint64_t k) const;
};

// Offsets as read from a file (int64, S + 1 of them, S >= 0), checked against an array of n
// elements: Error(Errc::kUsage) naming `name` and the first offset out of [0, n] or below the
// one before it.
std::vector<std::int64_t> check_offsets(const HostArray& offsets, std::uint64_t n,
                                        const std::string& name);

// A reduction of an N-dimensional C-order array along axes: the layout, and the shape NumPy gives
// the result (the reduced axes removed, or kept as 1 with keepdims).
struct AxisReduction {
  SegmentLayout layout;
  std::vector<std::uint64_t> shape;
};
// axes as given (negative counts from the end, as NumPy): Error(Errc::kUsage) for an axis out of
// range or given twice, or reduced axes that form more than two runs between kept ones (beyond
// the [O, R1, I, R2, J] form). Reducing the last axes gives contiguous segments (offsets).
AxisReduction axis_reduction(const std::vector<std::uint64_t>& shape,
                             const std::vector<std::int64_t>& axes, bool keepdims);

// One segmented reduction built for one device and one layout. Refers to ctx, which must outlive
// it; one thread at a time.
class SegmentReduction {
 public:
  // A built-in op over elements of type t, accumulated in acc (resolve_acc()).
  SegmentReduction(Context& ctx, Op op, DType t, DType acc, SegmentLayout layout,
                   std::size_t local_size);
  // A user reduction, or a row of expr_ops.hpp (accumulators of one value; 2 or 4 of a float
  // type).
  SegmentReduction(Context& ctx, const ExprSpec& spec, SegmentLayout layout,
                   std::size_t local_size);

  const SegmentLayout& layout() const { return layout_; }
  const LaunchPolicy& policy() const { return policy_; }
  // Bytes of one result as the launch leaves it in out: acc_t (arg ops: 16, value then index).
  std::size_t acc_bytes() const { return acc_bytes_; }
  // A user reduction's laws on a sample of in[0, n) (ExprReduction::check_laws), run from this
  // reduction's own program, which holds the check's kernels (clr_expr_checks.h); local_size as
  // given to the constructor.
  ExprLaws check_laws(const std::vector<cl::Buffer>& in, std::size_t n, std::size_t local_size,
                      TimeLimit limit);
  // The predicate's mask (where_mask(), expr.hpp) over in[0, n), from this reduction's program;
  // empty without a --where.
  std::vector<unsigned char> where_mask(const std::vector<cl::Buffer>& in, std::size_t n,
                                        std::size_t local_size, TimeLimit limit);
  // The longest chain of operations an element of result q passes through (the float bound's
  // depth).
  std::uint64_t depth(std::uint64_t q) const;
  // Launches (one to three) of the whole reduction over in (the arrays, on the device), every
  // result into out (results() * acc_bytes() bytes). Appends their events.
  void enqueue(const std::vector<cl::Buffer>& in, const cl::Buffer& out,
               std::vector<cl::Event>& events);

  // User reductions (one-value accumulators): every result folded by one work-item in index order
  // from the identity, in the accumulator type or, for a float accumulator on a device with fp64
  // where the expressions build so, in double (*wider = true); abs: the fold of |map| (the float
  // bound's scale). One Value each.
  std::vector<Value> reference(const std::vector<cl::Buffer>& in, bool abs, TimeLimit limit,
                               bool* wider, std::vector<cl::Event>& events);
  // User reductions: post(a, n) of each accumulator (spec().acc, one per result), n the result's
  // element count; accs unchanged without a post.
  std::vector<Value> post(const std::vector<Value>& accs, TimeLimit limit);
  // post(a, n) of each accumulator in accs (acc_bytes() each, as the launch leaves them), one
  // value of spec().acc each; without a post, the accumulators' values (one-value ones).
  std::vector<Value> post_bytes(const std::vector<unsigned char>& accs, TimeLimit limit);

 private:
  void plan(std::size_t local_size, std::size_t local_bytes);
  void plan_columns(std::size_t local_size, std::uint64_t units, bool vectors,
                    const std::string& simd_option);
  cl::Kernel build(const std::string& name, const std::string& extra = "");
  // main_ as `name` with -DWG_SIZE of the group the device takes for it (local_size, else
  // `preferred` or the most it allows) and `extra`; sets policy_.wg_size, returns the options.
  std::string build_sized(const std::string& name, const std::string& extra, std::size_t local_size,
                          std::size_t preferred);

  Context& ctx_;
  bool expr_ = false;
  Op op_ = Op::kSum;
  ExprSpec spec_;
  DType acc_ = DType::kInt64;  // CLR_ACC of the launch's kernels (their clr_shift's type)
  std::string options_, tail_;
  // The main kernel's options past options_: the fold, the post and the reference are built
  // with them too, so that they come from its program and build nothing more.
  std::string main_extra_;
  SegmentLayout layout_;
  std::size_t acc_bytes_ = 0;
  LaunchPolicy policy_;
  cl::Kernel main_, fold_;
  // Contiguous segments: the task table (5 ulongs each), the long segments (3 each), per
  // segment the lanes it took (0: pieces) and its pieces; columns: pieces of R1 and their rows.
  std::vector<std::uint64_t> tasks_, longs_;
  std::vector<std::uint32_t> lanes_;
  std::uint64_t piece_ = 0, slots_ = 0, pieces_ = 1, rows_ = 0;
  std::uint64_t cols_ = 1;  // columns: neighbouring results a work-item (SEG_COLS, SEG_TILE)
  // The CPU shape (segments-shape): segments walked by SEG_V accumulators a work-item; columns
  // in tiles (tile_) of [O, R1, dims_I_, R2, dims_J_], J the contiguous kept axis.
  bool cpu_ = false, tile_ = false;
  bool simd_ = false;  // the CPU shape's explicit vectors (SEG_SIMD)
  std::uint64_t seg_v_ = 1, dims_I_ = 1, dims_J_ = 1;
  // The GPU shape's loads: in flight per lane or rows per work-item (SEG_UNROLL, SEG_ROWS), and
  // elements per vector load of a segment (SEG_VEC).
  std::uint64_t unroll_ = 1, vec_ = 1;
  cl::Buffer offsets_, tasks_buf_, longs_buf_, partials_;
};

}  // namespace clreduce
