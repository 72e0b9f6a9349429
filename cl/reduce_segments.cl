// reduce_segments.cl: many reductions in one launch, one per segment of the input: segments given
// by offsets (segment s is elements [off[s], off[s+1])), or the lines of an N-dimensional C-order
// array along some of its axes. The host brings every request to one of two forms
// (host/reduce/segments.cpp):
//   contiguous segments (offsets; the last axes reduced): reduce_segments, driven by a task table
//     the host builds from the segments' lengths, one task per work-group and no launch per
//     segment. A task of kind L > 0 is a run of up to WG_SIZE / L consecutive segments, L lanes
//     of the group each (L = 1: a work-item per short segment; a few lanes for a short one; L =
//     WG_SIZE, one segment, for a medium one): lane k reads elements begin + k, begin + k + L, ...
//     (neighbouring lanes read neighbouring elements), then the lanes' values fold in local
//     memory. A task of kind 0 is a piece of a long segment: the whole group folds it into a
//     partial, and reduce_segments_fold folds each long segment's partials in order (one launch
//     for all of them);
//   strided lines (any axis but the last): the array seen as [O, R1, I, R2, J], axes R1 and R2
//     reduced (either may be 1), one result per (o, i, j): reduce_columns gives each work-item
//     one result on GPUs (neighbouring work-items neighbouring j, or i: coalesced reads), a run
//     of SEG_COLS neighbouring results on CPUs (a cache line of every row read), looping over
//     the rows r1 of its piece of R1 and, inside, over R2; with several pieces of R1 per result
//     (few results, long lines), reduce_columns_fold folds the pieces in order.
//   reduce_segments_seq: the reference of a user reduction: one work-item, each segment in index
//     order from the identity (EXPR_ABS: the same fold of |map|, the float bound's scale).
//   reduce_segments_post: post(a, n) of every segment's accumulator, n its element count.
// The operator is a built-in one (CLR_OP sum ... argmax of clreduce.h: arg ops give the index
// within the segment, or along the reduced axis) or a user reduction (CLR_OP == CLR_EXPR: the
// user's expressions, appended by the host, as in reduce_expr.cl). Every kernel takes four input
// buffers; those past CLR_INPUTS are not read (built-in ops read x0 alone); then clr_shift, the
// run-time value of clr_expr.h, and clr_base, the index of the buffers' element 0 (built-in ops
// read neither; segments give indices within the segment).
// Host sets via -D: CLR_TYPE, CLR_ACC, CLR_OP (and a user reduction's options: clr_expr.h),
// WG_SIZE.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_ticket.h"
#ifndef WG_SIZE
#define WG_SIZE 64
#endif
#ifndef EXPR_ABS
#define EXPR_ABS 0
#endif

#if CLR_OP == CLR_EXPR
#include "clr_expr.h"
// Element at address i, index k within its segment (unused: user reductions see values only).
#define SEG_LOAD(i, k) EXPR_MAP(i)
#else
#define SEG_INPUTS                                                                    \
  __global const T *restrict x0, __global const T *restrict x1, __global const T *restrict x2, \
      __global const T *restrict x3, const A clr_shift, const long clr_base
#define EXPR_INPUTS SEG_INPUTS
#define EXPR_UNUSED \
  (void)x1;         \
  (void)x2;         \
  (void)x3;         \
  (void)clr_shift;  \
  (void)clr_base
#if CLR_IS_ARG
inline acc_t seg_arg(T v, ulong k) {
  acc_t r;
  r.v = v;
  r.i = (long)k;
  CLR_ARG_PAD(r);
  return r;
}
#define SEG_LOAD(i, k) seg_arg(x0[i], (k))
#else
#define SEG_LOAD(i, k) ((acc_t)x0[i])
#endif
#endif

// A task: 5 ulongs. Kind L > 0: {L, first segment, segments, 0, 0}; kind 0 (a piece of a long
// segment): {0, partial's slot, first element, end, the segment's first element}.
#define SEG_TASK 5

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void reduce_segments(
    EXPR_INPUTS, __global const long* off, __global const ulong* tasks, __global acc_t* out,
    __global acc_t* partials) {
  __local acc_t s[WG_SIZE];
  EXPR_UNUSED;
  const uint lid = (uint)get_local_id(0);
  __global const ulong* t = tasks + SEG_TASK * (ulong)get_group_id(0);
  const uint kind = (uint)t[0];
  // The lanes that fold one value together: L, or the whole group for a piece.
  const uint lanes = kind ? kind : WG_SIZE;
  const uint lane = lid % lanes, k = lid / lanes;
  ulong begin = 0, end = 0, base = 0;
  if (kind) {
    if (k < t[2]) {
      begin = (ulong)off[t[1] + k];
      end = (ulong)off[t[1] + k + 1];
    }
    base = begin;
  } else {
    begin = t[2];
    end = t[3];
    base = t[4];
  }
  acc_t a = clr_identity();
  for (ulong i = begin + lane; i < end; i += lanes) a = clr_op(a, SEG_LOAD(i, i - base));
  s[lid] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  // The lanes' values fold pairwise within each run of `lanes` work-items: step by step, w
  // values to ceil(w / 2), the same steps in every run. The loop's count is the group's
  // (ceil(log2(WG_SIZE)) steps, the last ones idle for fewer lanes), so every barrier is met
  // alike by every work-item whatever the task.
  uint w = lanes;
  for (uint span = 1; span < WG_SIZE; span *= 2) {
    const uint h = (w + 1) / 2;
    if (w > 1 && lane + h < w) s[lid] = clr_op(s[lid], s[lid + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
    w = h;
  }
  // What the writes need is computed again from the task and lid: PoCL 3.1 wrote nothing from
  // a segment number and flag computed under a branch before the barriers.
  if (lid % lanes == 0) {
    if (!kind)
      partials[t[1]] = s[lid];
    else if (lid / lanes < t[2])
      out[t[1] + lid / lanes] = clr_result(s[lid]);
  }
}

// Each long segment's partials folded in order: work-item g takes longs[3g..3g+2] = {segment,
// first slot, slots}.
__kernel void reduce_segments_fold(__global const acc_t* partials, __global const ulong* longs,
                                   ulong m, __global acc_t* out) {
  const ulong g = get_global_id(0);
  if (g >= m) return;
  __global const ulong* l = longs + 3 * g;
  acc_t a = clr_identity();
  for (ulong p = 0; p < l[2]; ++p) a = clr_op(a, partials[l[1] + p]);
  out[l[0]] = clr_result(a);
}

// The address of element (r1, r2) of result q = (o, i, j) of [O, R1, I, R2, J].
inline ulong seg_at(ulong q, ulong r1, ulong r2, ulong R1, ulong I, ulong R2, ulong J) {
  const ulong j = q % J, i = (q / J) % I, o = q / (J * I);
  return (((o * R1 + r1) * I + i) * R2 + r2) * J + j;
}

#ifndef SEG_COLS
#define SEG_COLS 1
#endif
// Work-item g: results q0 .. q0 + SEG_COLS - 1 (q0 = (g % blocks) SEG_COLS, blocks = results /
// SEG_COLS rounded up), piece p = g / blocks of `pieces` (rows [p * rows, min(R1, (p + 1) *
// rows))). One piece: the results themselves; else their partials at partials[p * results + q].
// Each result folds its rows in order, as one work-item per result would (SEG_COLS 1, GPUs:
// neighbouring work-items read neighbouring j). CPUs take SEG_COLS neighbouring results a
// work-item: every row's read is then a run of SEG_COLS elements (a cache line and one page
// for them all), not one element a line and a page, as a work-item's walk down one column is.
// Element (r1, r2) of result q lies at seg_at(q, 0, 0) + r1 I R2 J + r2 J.
__kernel void reduce_columns(EXPR_INPUTS, ulong R1, ulong I, ulong R2, ulong J, ulong results,
                             ulong pieces, ulong rows, __global acc_t* out,
                             __global acc_t* partials) {
  EXPR_UNUSED;
  const ulong blocks = (results + SEG_COLS - 1) / SEG_COLS;
  const ulong g = get_global_id(0);
  if (g >= blocks * pieces) return;
  const ulong q0 = (g % blocks) * SEG_COLS, p = g / blocks;
  const ulong first = p * rows, last = min(R1, first + rows);
  const ulong step = I * R2 * J;
  ulong base[SEG_COLS];
  acc_t a[SEG_COLS];
  for (uint c = 0; c < SEG_COLS; ++c) {
    // A block's columns past the last result read the last one's elements, not kept.
    base[c] = seg_at(min(q0 + c, results - 1), 0, 0, R1, I, R2, J);
    a[c] = clr_identity();
  }
  for (ulong r1 = first; r1 < last; ++r1)
    for (ulong r2 = 0; r2 < R2; ++r2) {
      const ulong at = r1 * step + r2 * J;
      for (uint c = 0; c < SEG_COLS; ++c)
        a[c] = clr_op(a[c], SEG_LOAD(base[c] + at, r1 * R2 + r2));
    }
  for (uint c = 0; c < SEG_COLS && q0 + c < results; ++c) {
    if (pieces == 1)
      out[q0 + c] = clr_result(a[c]);
    else
      partials[p * results + q0 + c] = a[c];
  }
}

// Result q's pieces (partials[p * results + q]) folded in order.
__kernel void reduce_columns_fold(__global const acc_t* partials, ulong results, ulong pieces,
                                  __global acc_t* out) {
  const ulong q = get_global_id(0);
  if (q >= results) return;
  acc_t a = clr_identity();
  for (ulong p = 0; p < pieces; ++p) a = clr_op(a, partials[p * results + q]);
  out[q] = clr_result(a);
}

#if CLR_OP == CLR_EXPR
// The reference: one work-item, every segment in index order from the identity. columns == 0:
// segment s is [off[s], off[s+1]) of m segments; else the m results of [O, R1, I, R2, J].
__kernel void reduce_segments_seq(EXPR_INPUTS, __global const long* off, ulong m, int columns,
                                  ulong R1, ulong I, ulong R2, ulong J, __global acc_t* out) {
  EXPR_UNUSED;
  if (get_global_id(0) != 0) return;
  for (ulong q = 0; q < m; ++q) {
    acc_t a = clr_identity();
    if (columns) {
      for (ulong r1 = 0; r1 < R1; ++r1)
        for (ulong r2 = 0; r2 < R2; ++r2) {
          const ulong i = seg_at(q, r1, r2, R1, I, R2, J);
#if EXPR_ABS && EXPR_WIDTH == 1
          a = clr_op(a, fabs(EXPR_MAP(i)));
#else
          a = clr_op(a, EXPR_MAP(i));
#endif
        }
    } else {
      for (ulong i = (ulong)off[q]; i < (ulong)off[q + 1]; ++i) {
#if EXPR_ABS && EXPR_WIDTH == 1
        a = clr_op(a, fabs(EXPR_MAP(i)));
#else
        a = clr_op(a, EXPR_MAP(i));
#endif
      }
    }
    out[q] = a;
  }
}

#if EXPR_POST
A clr_expr_post(acc_t a, long n);
// out[q] = post(in[q], n) for q < m: n the segment's element count (columns == 0: off[q+1] -
// off[q]; else `length`).
__kernel void reduce_segments_post(__global const acc_t* in, ulong m, __global const long* off,
                                   int columns, long length, __global A* out) {
  const ulong q = get_global_id(0);
  if (q >= m) return;
  out[q] = clr_expr_post(in[q], columns ? length : off[q + 1] - off[q]);
}
#endif
#endif
