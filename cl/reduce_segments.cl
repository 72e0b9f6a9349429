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
//     On CPUs (the CPU shape) reduce_segments_cpu takes the same table, each task a work-item's:
//     a run of whole segments (kind 1), each walked front to back (seg_walk: SEG_V accumulators,
//     128 bytes of them, take SEG_V neighbouring elements a round, as a SIMD loop does; a
//     segment shorter than that one element after another), or a piece of a long segment (kind
//     0); with SEG_SIMD (sum, prod, min, max) the accumulators are OpenCL vectors, SEG_V
//     elements loaded as vectors a round: the same operations in the same order per
//     accumulator, SIMD whatever a compiler's auto-vectoriser makes of the scalar loop;
//   strided lines (any axis but the last): the array seen as [O, R1, I, R2, J], axes R1 and R2
//     reduced (either may be 1), one result per (o, i, j): reduce_columns gives each work-item
//     SEG_COLS neighbouring results (GPUs: 1, neighbouring work-items neighbouring j, or i:
//     coalesced reads; or a few, read as one vector where aligned), looping over the rows r1 of
//     its piece of R1 and, inside, over R2; with several pieces of R1 per result (few results,
//     long lines), reduce_columns_fold folds the pieces in order. On CPUs, where the last axis
//     is kept (neighbouring results neighbours in memory), reduce_columns_cpu gives each
//     work-item a tile: a piece of the rows by `tile` neighbouring results (an argument, so
//     that one program serves every shape), each row's run of them read front to back into a
//     row of accumulators (the rows stream through the cache), and reduce_columns_fold (built
//     with SEG_TILE 0) folds `tile` results' pieces a work-item (with SEG_SIMD: both a run's
//     16 results at a time, in vectors); the same operations in the same order per result as
//     reduce_columns.
//   reduce_segments_seq: the reference of a user reduction: one work-item, each segment in index
//     order from the identity (or of |map|, the float bound's scale).
//   reduce_segments_post: post(a, n) of every segment's accumulator, n its element count.
// The operator is a built-in one (CLR_OP sum ... argmax of clreduce.h: arg ops give the index
// within the segment, or along the reduced axis) or a user reduction (CLR_OP == CLR_EXPR: the
// user's expressions, appended by the host, as in reduce_expr.cl). Every kernel takes four input
// buffers; those past CLR_INPUTS are not read (built-in ops read x0 alone); then clr_shift, the
// run-time value of clr_expr.h, and clr_base, the index of the buffers' element 0 (built-in ops
// read neither; segments give indices within the segment).
// Host sets via -D: CLR_TYPE, CLR_ACC, CLR_OP (and a user reduction's options: clr_expr.h),
// WG_SIZE; SEG_UNROLL and SEG_VEC (reduce_segments), SEG_V (reduce_segments_cpu), SEG_COLS,
// SEG_ROWS (reduce_columns), SEG_TILE (reduce_columns_fold: 1, a result a work-item, or 0, the
// `tile` argument's) and SEG_SIMD (the CPU shape's explicit vectors: 1, or 0 for the scalar
// loops).
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_ticket.h"
#include "clr_types.h"
#ifndef WG_SIZE
#define WG_SIZE 64
#endif
#ifndef SEG_UNROLL
#define SEG_UNROLL 1
#endif
#ifndef SEG_VEC
#define SEG_VEC 1
#endif
#ifndef SEG_V
#define SEG_V 16
#endif
#ifndef SEG_COLS
#define SEG_COLS 1
#endif
#ifndef SEG_ROWS
#define SEG_ROWS 1
#endif
#ifndef SEG_TILE
#define SEG_TILE 1
#endif
#ifndef SEG_SIMD
#define SEG_SIMD 0
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
// The inputs' names, to pass them on to a helper that takes EXPR_INPUTS.
#define SEG_ARGS x0, x1, x2, x3, clr_shift, clr_base

#if CLR_OP != CLR_EXPR && !CLR_IS_ARG && (SEG_VEC > 1 || SEG_COLS > 1)
#define SEG_VECTORS 1
#else
#define SEG_VECTORS 0
#endif
#if SEG_VECTORS
// Vector loads of the built-in ops but the arg ones (their values alone count): SEG_VEC elements
// of a segment, or SEG_COLS neighbouring results of one row.
#define SEG_VT(n) CLR_VEC(T_NAME, n)
#if SEG_VEC > 1
typedef union {
  SEG_VT(SEG_VEC) v;
  T s[SEG_VEC];
} seg_vec_t;
#endif
#if SEG_COLS > 1
typedef union {
  SEG_VT(SEG_COLS) v;
  T s[SEG_COLS];
} seg_cols_t;
#endif
#endif

// The CPU shape's explicit vectors (SEG_SIMD; the built-in ops but the arg ones, whose
// accumulator is a plain scalar A): seg_opN(a, b) is clr_op lane by lane on vectors of N
// accumulators (N = 2, 4, 8, 16), the same operation on each lane as clr_op's on a scalar, so
// that a vector loop gives the scalar loops' results bit for bit; SEG_VLOAD(n, i) elements i ..
// i + n - 1 as accumulators. Loads and stores go through vector types of an element's alignment
// (seg_tuN, seg_au16), valid at any element's address and one load or store each (as vloadN and
// vstoreN mean, but those a compiler may leave in pieces: PoCL 3.1 did for vstore16).
#if CLR_OP != CLR_EXPR && !CLR_IS_ARG && SEG_SIMD
#define SEG_SIMD_ON 1
#define SEG_AV(n) CLR_VEC(A_NAME, n)
typedef CLR_VEC(T_NAME, 2) __attribute__((aligned(sizeof(T)))) seg_tu2;
typedef CLR_VEC(T_NAME, 4) __attribute__((aligned(sizeof(T)))) seg_tu4;
typedef CLR_VEC(T_NAME, 8) __attribute__((aligned(sizeof(T)))) seg_tu8;
typedef CLR_VEC(T_NAME, 16) __attribute__((aligned(sizeof(T)))) seg_tu16;
typedef SEG_AV(16) __attribute__((aligned(sizeof(A)))) seg_au16;
#define SEG_VLOAD(n, i) \
  CLR_CONVERT_VEC(A_NAME, n)(*(__global const CLR_CAT(seg_tu, n)*)(x0 + (i)))
#if (CLR_OP == CLR_SUM || CLR_OP == CLR_PROD) && !defined(A_IS_FLOAT)
// Integers wrap: computed in the unsigned twin, as clr_op does.
#define SEG_UV(n, a) CLR_AS_VEC(U_NAME, n)(a)
#define SEG_AS_A(n, u) CLR_AS_VEC(A_NAME, n)(u)
#if CLR_OP == CLR_SUM
#define SEG_VOP(n, a, b) SEG_AS_A(n, SEG_UV(n, a) + SEG_UV(n, b))
#else
#define SEG_VOP(n, a, b) SEG_AS_A(n, SEG_UV(n, a) * SEG_UV(n, b))
#endif
#elif CLR_OP == CLR_SUM
#define SEG_VOP(n, a, b) ((a) + (b))
#elif CLR_OP == CLR_PROD
#define SEG_VOP(n, a, b) ((a) * (b))
#elif defined(T_IS_FLOAT)
// min, max: a where it is NaN or wins, else b (select's last argument: a lane's top bit).
#define SEG_VOP(n, a, b) select((b), (a), isnan(a) || (a)SEG_CMP(b))
#else
#define SEG_VOP(n, a, b) select((b), (a), (a)SEG_CMP(b))
#endif
#if CLR_OP == CLR_MIN
#define SEG_CMP <
#elif CLR_OP == CLR_MAX
#define SEG_CMP >
#endif
#define SEG_VOP_DEF(n) \
  inline SEG_AV(n) seg_op##n(SEG_AV(n) a, SEG_AV(n) b) { return SEG_VOP(n, a, b); }
SEG_VOP_DEF(2)
SEG_VOP_DEF(4)
SEG_VOP_DEF(8)
SEG_VOP_DEF(16)
#define SEG_OPN(n) CLR_CAT(seg_op, n)
#else
#define SEG_SIMD_ON 0
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
#if SEG_VECTORS && SEG_VEC > 1
  // Aligned vectors of SEG_VEC elements, lane k the vectors k, k + lanes, ..., each folded
  // element by element; the (fewer than SEG_VEC) elements before the first aligned one, and
  // those after the last whole vector, as the plain loop takes them.
  {
    const ulong mis = (ulong)(x0 + begin) / sizeof(T) % SEG_VEC;
    const ulong vb = min(end, begin + (mis ? SEG_VEC - mis : 0));
    const ulong nv = (end - vb) / SEG_VEC, ve = vb + nv * SEG_VEC;
    for (ulong i = begin + lane; i < vb; i += lanes) a = clr_op(a, SEG_LOAD(i, 0));
    __global const SEG_VT(SEG_VEC)* v = (__global const SEG_VT(SEG_VEC)*)(x0 + vb);
    ulong at = lane;
    for (; at + (SEG_UNROLL - 1) * lanes < nv; at += SEG_UNROLL * lanes) {
      seg_vec_t w[SEG_UNROLL];
#pragma unroll
      for (uint u = 0; u < SEG_UNROLL; ++u) w[u].v = v[at + u * lanes];
#pragma unroll
      for (uint u = 0; u < SEG_UNROLL; ++u)
#pragma unroll
        for (uint j = 0; j < SEG_VEC; ++j) a = clr_op(a, (acc_t)w[u].s[j]);
    }
    for (; at < nv; at += lanes) {
      seg_vec_t w;
      w.v = v[at];
#pragma unroll
      for (uint j = 0; j < SEG_VEC; ++j) a = clr_op(a, (acc_t)w.s[j]);
    }
    for (ulong i = ve + lane; i < end; i += lanes) a = clr_op(a, SEG_LOAD(i, 0));
  }
#else
  // SEG_UNROLL loads in flight, then folded in the order of the plain loop's.
  ulong i = begin + lane;
  for (; i + (SEG_UNROLL - 1) * lanes < end; i += SEG_UNROLL * lanes) {
    acc_t w[SEG_UNROLL];
#pragma unroll
    for (uint u = 0; u < SEG_UNROLL; ++u) w[u] = SEG_LOAD(i + u * lanes, i + u * lanes - base);
#pragma unroll
    for (uint u = 0; u < SEG_UNROLL; ++u) a = clr_op(a, w[u]);
  }
  for (; i < end; i += lanes) a = clr_op(a, SEG_LOAD(i, i - base));
#endif
  s[lid] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  // The lanes' values fold pairwise within each run of `lanes` work-items: step by step, w
  // values to ceil(w / 2), the same steps in every run. The loop's count, ceil(log2(lanes))
  // steps, is the task's, and a task is the whole group's, so every barrier is met alike by
  // every work-item of the group.
  uint w = lanes;
  for (uint span = 1; span < lanes; span *= 2) {
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

// Elements [b, e) folded by one work-item, front to back: fewer than SEG_V one after another;
// else SEG_V accumulators take SEG_V neighbouring elements a round (accumulator k the elements b
// + k, b + k + SEG_V, ...: a vector register's worth, the loop a compiler makes SIMD) and fold
// pairwise (log2(SEG_V) steps), and the last (e - b) mod SEG_V elements, folded one after
// another, come last. base: the segment's first element (arg ops' indices count from it).
// With SEG_SIMD the accumulators are SEG_P vectors of SEG_W (accumulator k lane k % SEG_W of
// vector k / SEG_W), loaded SEG_W elements at a time, and the pairwise fold halves them the
// same way (vector k with vector k + h, then a vector's low half with its high half).
#if SEG_SIMD_ON && SEG_V >= 2
#if SEG_V >= 16
#define SEG_W 16
#else
#define SEG_W SEG_V
#endif
#define SEG_P (SEG_V / SEG_W)
// Lanes k and k + SEG_W / 2, then k and k + SEG_W / 4, ... of one vector: accumulator 0. The
// halves are read through a union (.lo and .hi give the same code, but Oclgrind's
// --uninitialized check takes their shuffles for reads of undefined lanes).
typedef union {
  SEG_AV(16) v16[1];
  SEG_AV(8) v8[2];
  SEG_AV(4) v4[4];
  SEG_AV(2) v2[8];
  A s[16];
} seg_lanes_t;
inline acc_t seg_fold_lanes(SEG_AV(SEG_W) v) {
  seg_lanes_t u;
  CLR_CAT(u.v, SEG_W)[0] = v;
#if SEG_W == 16
  u.v8[0] = seg_op8(u.v8[0], u.v8[1]);
#endif
#if SEG_W >= 8
  u.v4[0] = seg_op4(u.v4[0], u.v4[1]);
#endif
#if SEG_W >= 4
  u.v2[0] = seg_op2(u.v2[0], u.v2[1]);
#endif
  return clr_op(u.s[0], u.s[1]);
}
#endif

inline acc_t seg_walk(EXPR_INPUTS, ulong b, ulong e, ulong base) {
  EXPR_UNUSED;
  acc_t r = clr_identity();
  ulong i = b;
#if SEG_SIMD_ON && SEG_V >= 2
  (void)base;
  if (e - b >= SEG_V) {
    SEG_AV(SEG_W) a[SEG_P];
#pragma unroll
    for (uint k = 0; k < SEG_P; ++k) a[k] = (SEG_AV(SEG_W))clr_identity();
    for (; i + SEG_V <= e; i += SEG_V) {
#pragma unroll
      for (uint k = 0; k < SEG_P; ++k)
        a[k] = SEG_OPN(SEG_W)(a[k], SEG_VLOAD(SEG_W, i + k * SEG_W));
    }
#pragma unroll
    for (uint h = SEG_P / 2; h > 0; h /= 2) {
#pragma unroll
      for (uint k = 0; k < h; ++k) a[k] = SEG_OPN(SEG_W)(a[k], a[k + h]);
    }
    r = seg_fold_lanes(a[0]);
  }
#else
  if (e - b >= SEG_V) {
    acc_t a[SEG_V];
    // Unrolled, as every loop over the accumulators: constant indices keep them in registers.
#pragma unroll
    for (uint k = 0; k < SEG_V; ++k) a[k] = clr_identity();
    for (; i + SEG_V <= e; i += SEG_V) {
#pragma unroll
      for (uint k = 0; k < SEG_V; ++k) a[k] = clr_op(a[k], SEG_LOAD(i + k, i + k - base));
    }
#pragma unroll
    for (uint h = SEG_V / 2; h > 0; h /= 2) {
#pragma unroll
      for (uint k = 0; k < h; ++k) a[k] = clr_op(a[k], a[k + h]);
    }
    r = a[0];
  }
#endif
  for (; i < e; ++i) r = clr_op(r, SEG_LOAD(i, i - base));
  return r;
}

// The CPU shape: work-item g takes task g of m (the table of reduce_segments): kind 1, a run of
// whole segments, each walked by seg_walk() into out; kind 0, a piece of a long segment into
// its partial, folded by reduce_segments_fold.
__kernel void reduce_segments_cpu(EXPR_INPUTS, __global const long* off,
                                  __global const ulong* tasks, ulong m, __global acc_t* out,
                                  __global acc_t* partials) {
  EXPR_UNUSED;
  const ulong g = get_global_id(0);
  if (g >= m) return;
  __global const ulong* t = tasks + SEG_TASK * g;
  if (t[0]) {
    for (ulong s = t[1]; s < t[1] + t[2]; ++s) {
      const ulong b = (ulong)off[s];
      out[s] = clr_result(seg_walk(SEG_ARGS, b, (ulong)off[s + 1], b));
    }
  } else {
    partials[t[1]] = seg_walk(SEG_ARGS, t[2], t[3], t[4]);
  }
}

// The address of element (r1, r2) of result q = (o, i, j) of [O, R1, I, R2, J].
inline ulong seg_at(ulong q, ulong r1, ulong r2, ulong R1, ulong I, ulong R2, ulong J) {
  const ulong j = q % J, i = (q / J) % I, o = q / (J * I);
  return (((o * R1 + r1) * I + i) * R2 + r2) * J + j;
}

// Work-item g: results q0 .. q0 + SEG_COLS - 1 (q0 = (g % blocks) SEG_COLS, blocks = results /
// SEG_COLS rounded up), piece p = g / blocks of `pieces` (rows [p * rows, min(R1, (p + 1) *
// rows))). One piece: the results themselves; else their partials at partials[p * results + q].
// Each result folds its rows in order, as one work-item per result would (SEG_COLS 1, GPUs:
// neighbouring work-items read neighbouring j). With SEG_COLS > 1 (CPUs, where the kept axes
// are not contiguous; or a GPU asked for it) every row's read is a run of SEG_COLS elements,
// one vector load where they are neighbours and aligned (sum, prod, min, max). With R2 = 1 (the
// usual case), SEG_ROWS rows are loaded before they are folded, in order.
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
#pragma unroll
  for (uint c = 0; c < SEG_COLS; ++c) {
    // A block's columns past the last result read the last one's elements, not kept.
    base[c] = seg_at(min(q0 + c, results - 1), 0, 0, R1, I, R2, J);
    a[c] = clr_identity();
  }
#if SEG_VECTORS && SEG_COLS > 1
  // One vector a row: the block's results neighbours in memory, and every row's run of them
  // aligned (the first, and the step between rows).
  const bool vec = R2 == 1 && base[SEG_COLS - 1] == base[0] + SEG_COLS - 1 &&
                   (ulong)(x0 + base[0]) % sizeof(SEG_VT(SEG_COLS)) == 0 && step % SEG_COLS == 0;
#else
  const bool vec = false;
#endif
  if (vec) {
#if SEG_VECTORS && SEG_COLS > 1
    __global const T* x = x0 + base[0];
    ulong r1 = first;
    for (; r1 + SEG_ROWS <= last; r1 += SEG_ROWS) {
      seg_cols_t w[SEG_ROWS];
#pragma unroll
      for (uint u = 0; u < SEG_ROWS; ++u)
        w[u].v = *(__global const SEG_VT(SEG_COLS)*)(x + (r1 + u) * step);
#pragma unroll
      for (uint u = 0; u < SEG_ROWS; ++u)
#pragma unroll
        for (uint c = 0; c < SEG_COLS; ++c) a[c] = clr_op(a[c], (acc_t)w[u].s[c]);
    }
    for (; r1 < last; ++r1) {
      seg_cols_t w;
      w.v = *(__global const SEG_VT(SEG_COLS)*)(x + r1 * step);
#pragma unroll
      for (uint c = 0; c < SEG_COLS; ++c) a[c] = clr_op(a[c], (acc_t)w.s[c]);
    }
#endif
  } else if (R2 == 1) {
    ulong r1 = first;
    for (; r1 + SEG_ROWS <= last; r1 += SEG_ROWS) {
      acc_t w[SEG_ROWS][SEG_COLS];
#pragma unroll
      for (uint u = 0; u < SEG_ROWS; ++u)
#pragma unroll
        for (uint c = 0; c < SEG_COLS; ++c) w[u][c] = SEG_LOAD(base[c] + (r1 + u) * step, r1 + u);
#pragma unroll
      for (uint u = 0; u < SEG_ROWS; ++u)
#pragma unroll
        for (uint c = 0; c < SEG_COLS; ++c) a[c] = clr_op(a[c], w[u][c]);
    }
    for (; r1 < last; ++r1) {
#pragma unroll
      for (uint c = 0; c < SEG_COLS; ++c) a[c] = clr_op(a[c], SEG_LOAD(base[c] + r1 * step, r1));
    }
  } else {
    for (ulong r1 = first; r1 < last; ++r1)
      for (ulong r2 = 0; r2 < R2; ++r2) {
        const ulong at = r1 * step + r2 * J;
#pragma unroll
        for (uint c = 0; c < SEG_COLS; ++c)
          a[c] = clr_op(a[c], SEG_LOAD(base[c] + at, r1 * R2 + r2));
      }
  }
#pragma unroll
  for (uint c = 0; c < SEG_COLS; ++c) {
    if (q0 + c >= results) break;
    if (pieces == 1)
      out[q0 + c] = clr_result(a[c]);
    else
      partials[p * results + q0 + c] = a[c];
  }
}

// The CPU shape of [O, R1, I, R2, J] with J > 1 (a matrix's columns come as [1, R1, 1, 1, C]):
// work-item g takes tile t = g % tiles of piece p = g / tiles, tiles = O I ceil(J / tile):
// the results (o, i, j0 .. j0 + w - 1), w <= tile, over the rows [p rows, min(R1, (p + 1)
// rows)) of R1 and all of R2. Each row's run of w elements is read front to back into a row of
// w accumulators: the tile's results themselves (one piece) or their partials, kept in the
// destination (a few KiB: in the cache) so that any w fits. Per result, the same operations
// in the same order as reduce_columns.
__kernel void reduce_columns_cpu(EXPR_INPUTS, ulong R1, ulong I, ulong R2, ulong J, ulong results,
                                 ulong pieces, ulong rows, __global acc_t* out,
                                 __global acc_t* partials, ulong tile) {
  EXPR_UNUSED;
  const ulong per = (J + tile - 1) / tile, tiles = results / J * per;
  const ulong g = get_global_id(0);
  if (g >= tiles * pieces) return;
  const ulong t = g % tiles, p = g / tiles;
  const ulong oi = t / per, j0 = (t % per) * tile, w = min(tile, J - j0);
  const ulong o = oi / I, i = oi % I;
  const ulong first = p * rows, last = min(R1, first + rows);
  __global acc_t* d = (pieces == 1 ? out : partials + p * results) + oi * J + j0;
  for (ulong c = 0; c < w; ++c) d[c] = clr_identity();
  for (ulong r1 = first; r1 < last; ++r1)
    for (ulong r2 = 0; r2 < R2; ++r2) {
      const ulong at = (((o * R1 + r1) * I + i) * R2 + r2) * J + j0, k = r1 * R2 + r2;
      ulong c = 0;
#if SEG_SIMD_ON
      // 16 accumulators and elements at a time, the last w mod 16 one by one.
      (void)k;
      for (; c + 16 <= w; c += 16) {
        __global seg_au16* v = (__global seg_au16*)(d + c);
        *v = seg_op16(*v, SEG_VLOAD(16, at + c));
      }
#endif
      for (; c < w; ++c) d[c] = clr_op(d[c], SEG_LOAD(at + c, k));
    }
  if (pieces == 1)
    for (ulong c = 0; c < w; ++c) d[c] = clr_result(d[c]);
}

// Results q0 .. q0 + tile - 1 (q0 = tile g): their pieces (partials[p * results + q]) folded in
// order, from the identity. SEG_TILE 1 (GPUs): a work-item per result (tile is 1), neighbours
// neighbouring; SEG_TILE 0 (CPUs): each piece's run of `tile` results read front to back.
__kernel void reduce_columns_fold(__global const acc_t* partials, ulong results, ulong pieces,
                                  __global acc_t* out, ulong tile) {
#if SEG_TILE == 1
  (void)tile;
  const ulong q0 = get_global_id(0);
  if (q0 >= results) return;
  acc_t a = clr_identity();
  for (ulong p = 0; p < pieces; ++p) a = clr_op(a, partials[p * results + q0]);
  out[q0] = clr_result(a);
#else
  const ulong q0 = get_global_id(0) * tile;
  if (q0 >= results) return;
  const ulong w = min(tile, results - q0);
  __global acc_t* d = out + q0;
  for (ulong c = 0; c < w; ++c) d[c] = clr_identity();
  for (ulong p = 0; p < pieces; ++p) {
    __global const acc_t* s = partials + p * results + q0;
    ulong c = 0;
#if SEG_SIMD_ON
    for (; c + 16 <= w; c += 16) {
      __global seg_au16* v = (__global seg_au16*)(d + c);
      *v = seg_op16(*v, *(__global const seg_au16*)(s + c));
    }
#endif
    for (; c < w; ++c) d[c] = clr_op(d[c], s[c]);
  }
  for (ulong c = 0; c < w; ++c) d[c] = clr_result(d[c]);
#endif
}

#if CLR_OP == CLR_EXPR
// The reference: one work-item, every segment in index order from the identity. columns == 0:
// segment s is [off[s], off[s+1]) of m segments; else the m results of [O, R1, I, R2, J]. With
// absolute (float accumulators), the same fold of |map|, the float bound's scale: a run-time
// flag, so that both folds come from one program.
#if EXPR_WIDTH == 1 && !EXPR_ARG && (CLR_ACC == CLR_FLOAT || CLR_ACC == CLR_DOUBLE)
#define SEG_SEQ_MAP(i) (absolute ? fabs(EXPR_MAP(i)) : EXPR_MAP(i))
#else
#define SEG_SEQ_MAP(i) EXPR_MAP(i)
#endif
__kernel void reduce_segments_seq(EXPR_INPUTS, __global const long* off, ulong m, int columns,
                                  ulong R1, ulong I, ulong R2, ulong J, uint absolute,
                                  __global acc_t* out) {
  EXPR_UNUSED;
  (void)absolute;
  if (get_global_id(0) != 0) return;
  for (ulong q = 0; q < m; ++q) {
    acc_t a = clr_identity();
    if (columns) {
      for (ulong r1 = 0; r1 < R1; ++r1)
        for (ulong r2 = 0; r2 < R2; ++r2) a = clr_op(a, SEG_SEQ_MAP(seg_at(q, r1, r2, R1, I, R2, J)));
    } else {
      for (ulong i = (ulong)off[q]; i < (ulong)off[q + 1]; ++i) a = clr_op(a, SEG_SEQ_MAP(i));
    }
    out[q] = a;
  }
}

// The law check's kernels (sample, laws), so that a user reduction's check runs from this program.
#include "clr_expr_checks.h"

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
