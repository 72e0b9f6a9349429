// reduce_expr.cl: user-defined reductions. A map expression over up to four input arrays (their
// elements at i are x, y, z, w), a reduce expression over a and b, an identity and an optional
// post expression over the reduced a and the count n, all in OpenCL C. The host appends their
// definitions after this file (host/reduce/expr.cpp), each expression on lines of its own under
// #line, so compiler messages point into the user's text; clreduce.h (CLR_OP == CLR_EXPR) makes
// acc_t the accumulator A and clr_op / clr_identity the user's reduce and identity, so the
// ticket epilogue (clr_ticket.h) is fast's.
//   reduce_expr       one launch, any n: GPU shape (EXPR_CPU 0, grid-stride: neighbouring work-
//                     items read neighbouring elements) or CPU shape (EXPR_CPU 1: a contiguous run
//                     per work-item, read as UNROLL streams), UNROLL accumulators per work-item,
//                     then fast's group fold and last-group ticket. Combines out of index order:
//                     needs a reduce that is associative and commutative (checked first).
//   reduce_expr_seq   one work-item applies the expressions in index order: the reference
//                     (resumed from its last value: an array in chunks, chunk after chunk).
//   reduce_expr_fold  m accumulators (a chunk's each) folded in index order, one work-item.
//   reduce_expr_post  post(a, n) of m accumulators, one work-item.
//   reduce_expr_sample, reduce_expr_laws: the check of the reduce's laws on sample values.
// Every kernel that reads the inputs takes EXPR_INPUTS first: four buffers, clr_shift, a
// run-time value of A the expressions may name, and clr_base, the global index of the buffers'
// element 0 (the arg rows' indices; clr_expr.h).
// Host sets via -D (plus clreduce.h's CLR_ACC, and CLR_OP = CLR_EXPR):
//   CLR_INPUTS 1..4, CLR_T0..CLR_T3 the inputs' OpenCL C types, EXPR_POST 1 when a post is given,
//   EXPR_WHERE 1 when a predicate (--where) is given, WG_SIZE, EXPR_CPU, UNROLL;
//   EXPR_WIDTH 1, 2 or 4: the accumulator is that many values of CLR_ACC (a vector type, e.g.
//   double4; post then gives one value of CLR_ACC);
//   EXPR_VEC 1, 2, 4, 8 or 16: the GPU shape's elements per vector load;
//   EXPR_BLOCK 0 or B: with B, each work-item folds B rounds of its UNROLL accumulators at a
//   time and combines those block values pairwise (a binary counter over a stack), so that an
//   element passes through about B + log2(blocks) operations in the work-item, not
//   n / work-items (the built-in ops' rows: error bounds of pairwise summation's kind);
//   EXPR_FOLD 1: a row's fold of one element into a running accumulator (clr_expr.h);
//   CLR_LSE_EXPF 1 and CLR_LSE_T: logsumexp's fold with a float exp per element, its m moving
//   only past m + CLR_LSE_T (clr_expr.h); CLR_LSE_VFOLD 1 (one float array, no predicate): the
//   GPU shape's vector loads fold their four elements at once (clr_lse_vfold);
//   EXPR_LANES 0 or a lane kind of clr_expr.h: the CPU shape reads each stream 16 elements at
//   a time into the row's vector lanes (a block: EXPR_BLOCK rounds of them).
// The built-in ops of the command line (--op dot, mean, var, norm2, logsumexp, ...) are rows of
// map, reduce, identity and post over the helpers of clr_expr.h (host/reduce/expr_ops.cpp),
// some with a fold and lanes of their own.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_tail.h"
#include "clr_ticket.h"
#ifndef WG_SIZE
#define WG_SIZE 256
#endif
#ifndef EXPR_CPU
#define EXPR_CPU 0
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#include "clr_expr.h"
#ifndef EXPR_BLOCK
#define EXPR_BLOCK 0
#endif
#ifndef EXPR_VEC
#define EXPR_VEC 1
#endif

#if !EXPR_CPU && EXPR_VEC > 1 && !defined(CLR_H0) && !defined(CLR_H1) && !defined(CLR_H2) && \
    !defined(CLR_H3)
// The GPU shape's vector loads (EXPR_VEC > 1, set by the host; not for float16 inputs, read with
// vload_half): each round reads EXPR_VEC consecutive elements of every input with one load per
// input (16 bytes of the widest input, as fast's loads), and maps and folds them lane by lane
// into one accumulator (the arg rows' map takes lane j of vector v as element v EXPR_VEC + j).
// A work-item's chain grows by EXPR_VEC a round over UNROLL accumulators: no longer than the
// scalar loop's, which the host's depth counts; with EXPR_BLOCK, a block closes once its rounds
// hold EXPR_BLOCK elements an accumulator or more (at most EXPR_BLOCK + EXPR_VEC - 1).
#define EXPR_VT_(T, N) T##N
#define EXPR_VT(T, N) EXPR_VT_(T, N)
typedef union {
  EXPR_VT(CLR_T0, EXPR_VEC) v;
  CLR_T0 s[EXPR_VEC];
} expr_l0;
typedef union {
  EXPR_VT(CLR_T1, EXPR_VEC) v;
  CLR_T1 s[EXPR_VEC];
} expr_l1;
typedef union {
  EXPR_VT(CLR_T2, EXPR_VEC) v;
  CLR_T2 s[EXPR_VEC];
} expr_l2;
typedef union {
  EXPR_VT(CLR_T3, EXPR_VEC) v;
  CLR_T3 s[EXPR_VEC];
} expr_l3;
// Loads vector `at` of every input into l0..l3[k]; the lane arguments of element j of it.
#if CLR_INPUTS == 1
#define EXPR_VLOAD(k, at) l0[k].v = ((__global const EXPR_VT(CLR_T0, EXPR_VEC)*)x0)[at]
#define EXPR_LARGS(k, j) l0[k].s[j], clr_shift
#elif CLR_INPUTS == 2
#define EXPR_VLOAD(k, at)                                          \
  l0[k].v = ((__global const EXPR_VT(CLR_T0, EXPR_VEC)*)x0)[at]; \
  l1[k].v = ((__global const EXPR_VT(CLR_T1, EXPR_VEC)*)x1)[at]
#define EXPR_LARGS(k, j) l0[k].s[j], l1[k].s[j], clr_shift
#elif CLR_INPUTS == 3
#define EXPR_VLOAD(k, at)                                          \
  l0[k].v = ((__global const EXPR_VT(CLR_T0, EXPR_VEC)*)x0)[at]; \
  l1[k].v = ((__global const EXPR_VT(CLR_T1, EXPR_VEC)*)x1)[at]; \
  l2[k].v = ((__global const EXPR_VT(CLR_T2, EXPR_VEC)*)x2)[at]
#define EXPR_LARGS(k, j) l0[k].s[j], l1[k].s[j], l2[k].s[j], clr_shift
#else
#define EXPR_VLOAD(k, at)                                          \
  l0[k].v = ((__global const EXPR_VT(CLR_T0, EXPR_VEC)*)x0)[at]; \
  l1[k].v = ((__global const EXPR_VT(CLR_T1, EXPR_VEC)*)x1)[at]; \
  l2[k].v = ((__global const EXPR_VT(CLR_T2, EXPR_VEC)*)x2)[at]; \
  l3[k].v = ((__global const EXPR_VT(CLR_T3, EXPR_VEC)*)x3)[at]
#define EXPR_LARGS(k, j) l0[k].s[j], l1[k].s[j], l2[k].s[j], l3[k].s[j], clr_shift
#endif
#if EXPR_ARG
// Lane j of the vector the loop's v + k items names (the loops below).
#define EXPR_LMAPPED(k, j) \
  clr_expr_map(EXPR_LARGS(k, j), clr_base + (long)((v + (k) * items) * EXPR_VEC + (j)))
#else
#define EXPR_LMAPPED(k, j) clr_expr_map(EXPR_LARGS(k, j))
#endif
#if EXPR_WHERE
#define EXPR_LMAP(k, j) (clr_expr_where(EXPR_LARGS(k, j)) ? EXPR_LMAPPED(k, j) : clr_identity())
#else
#define EXPR_LMAP(k, j) EXPR_LMAPPED(k, j)
#endif
// True when every input starts at a multiple of its vector's size (buffers do; a host pointer
// used in place need not): else the scalar loop runs.
inline bool expr_vec_aligned(__global const CLR_T0* x0, __global const CLR_T1* x1,
                             __global const CLR_T2* x2, __global const CLR_T3* x3) {
  bool ok = (ulong)x0 % (EXPR_VEC * sizeof(CLR_T0)) == 0;
#if CLR_INPUTS >= 2
  ok = ok && (ulong)x1 % (EXPR_VEC * sizeof(CLR_T1)) == 0;
#endif
#if CLR_INPUTS >= 3
  ok = ok && (ulong)x2 % (EXPR_VEC * sizeof(CLR_T2)) == 0;
#endif
#if CLR_INPUTS >= 4
  ok = ok && (ulong)x3 % (EXPR_VEC * sizeof(CLR_T3)) == 0;
#endif
  return ok;
}
#define EXPR_USE_VEC 1
#else
#define EXPR_USE_VEC 0
#endif
// logsumexp of one float array (the host's CLR_LSE_VFOLD): a vector's four elements folded at
// once (clr_expr.h, clr_lse_vfold).
#if EXPR_USE_VEC && CLR_LSE_VFOLD && EXPR_VEC == 4
#define EXPR_LSE_V 1
#else
#define EXPR_LSE_V 0
#endif
#if EXPR_BLOCK
// Levels of the pairwise stack: 2^48 blocks at most.
#define EXPR_LEVELS 48

// The work-item's UNROLL accumulators folded into one, and restarted from the identity.
inline acc_t expr_flush(acc_t* acc) {
  acc_t v = acc[0];
  acc[0] = clr_identity();
  // Unrolled, as every loop over the accumulators: constant indices keep them in registers
  // (an index the compiler cannot resolve puts the array in memory, each fold a store and a
  // load).
#pragma unroll
  for (uint k = 1; k < UNROLL; ++k) {
    v = clr_op(v, acc[k]);
    acc[k] = clr_identity();
  }
  return v;
}

// Pushes block value v as block number *count: a binary counter, level l holding the value of
// 2^l blocks; a carry combines two equal levels (pairwise summation, one block at a time).
inline void expr_push(acc_t* stack, ulong* count, acc_t v) {
  uint level = 0;
  for (ulong c = *count; c & 1; c >>= 1) v = clr_op(stack[level++], v);
  stack[level] = v;
  ++*count;
}

// The stack's levels folded, lowest first (only the levels the count's bits say are held).
inline acc_t expr_stack_fold(const acc_t* stack, ulong count) {
  acc_t a = clr_identity();
  for (uint level = 0; count; ++level, count >>= 1)
    if (count & 1) a = clr_op(stack[level], a);
  return a;
}
#endif

#if EXPR_LANES && (!EXPR_CPU || UNROLL < 2)
#error "EXPR_LANES is the CPU shape's, with UNROLL >= 2"
#endif
#if EXPR_LANES
// The streams' lanes folded into one value (stream k's elements start at base + k qv
// EXPR_LV), and restarted.
inline acc_t expr_lanes_flush(clr_lanes* lanes, long base, ulong qv) {
  acc_t v = clr_lanes_flush(lanes[0], base);
  lanes[0] = clr_lanes_init();
#pragma unroll
  for (uint k = 1; k < UNROLL; ++k) {
    v = clr_op(v, clr_lanes_flush(lanes[k], base + (long)(k * qv * EXPR_LV)));
    lanes[k] = clr_lanes_init();
  }
  return v;
}
#endif

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void reduce_expr(
    EXPR_INPUTS, ulong n, __global acc_t* partials, __global volatile uint* ticket,
    __global acc_t* out) {
  __local acc_t s[WG_SIZE];
  __local int is_last;
  EXPR_UNUSED;
  const ulong items = get_global_size(0);
  const ulong gid = get_global_id(0);
  acc_t acc[UNROLL];
#pragma unroll
  for (uint k = 0; k < UNROLL; ++k) acc[k] = clr_identity();
#if EXPR_BLOCK
  // Every EXPR_BLOCK rounds, the accumulators are folded into one block value, pushed on the
  // pairwise stack and restarted.
  acc_t stack[EXPR_LEVELS];
  ulong blocks = 0;
  uint rounds = 0;
#define EXPR_ROUND_DONE()                          \
  if (++rounds == EXPR_BLOCK) {                    \
    rounds = 0;                                    \
    expr_push(stack, &blocks, expr_flush(acc));    \
  }
#define EXPR_VROUND_DONE()                         \
  if ((rounds += EXPR_VEC) >= EXPR_BLOCK) {        \
    rounds = 0;                                    \
    expr_push(stack, &blocks, expr_flush(acc));    \
  }
#else
#define EXPR_ROUND_DONE()
#define EXPR_VROUND_DONE()
#endif
#if EXPR_CPU
  // A contiguous run per work-item, as UNROLL streams over its parts, then its remainder.
  const ulong per = (n + items - 1) / items;
  const ulong begin = min(gid * per, n);
  const ulong end = min(begin + per, n);
#if EXPR_LANES
  // The streams in whole vectors of EXPR_LV elements, folded into the row's lanes
  // (clr_expr.h); every EXPR_BLOCK rounds (or at the end) the lanes are folded into a block
  // value. The host keeps a stream's vectors below 2^32 (their numbers are uints).
  const ulong qv = (end - begin) / (UNROLL * EXPR_LV);
  clr_lanes lanes[UNROLL];
#pragma unroll
  for (uint k = 0; k < UNROLL; ++k) lanes[k] = clr_lanes_init();
  for (ulong r = 0; r < qv; ++r) {
#pragma unroll
    for (uint k = 0; k < UNROLL; ++k)
      lanes[k] = clr_lanes_step(lanes[k], EXPR_VARGS(begin + (k * qv + r) * EXPR_LV), (uint)r);
#if EXPR_BLOCK
    if (++rounds == EXPR_BLOCK) {
      rounds = 0;
      expr_push(stack, &blocks, expr_lanes_flush(lanes, clr_base + begin, qv));
    }
#endif
  }
#if EXPR_BLOCK
  if (rounds) expr_push(stack, &blocks, expr_lanes_flush(lanes, clr_base + begin, qv));
#else
  if (qv) acc[1] = expr_lanes_flush(lanes, clr_base + begin, qv);  // lanes flush after a step
#endif
  for (ulong i = begin + UNROLL * qv * EXPR_LV; i < end; ++i)
    acc[0] = EXPR_STEP(acc[0], EXPR_MAP(i));
#else
  const ulong q = (end - begin) / UNROLL;
  for (ulong j = 0; j < q; ++j) {
#pragma unroll
    for (uint k = 0; k < UNROLL; ++k) acc[k] = EXPR_STEP(acc[k], EXPR_MAP(begin + k * q + j));
    EXPR_ROUND_DONE();
  }
  for (ulong i = begin + UNROLL * q; i < end; ++i) acc[0] = EXPR_STEP(acc[0], EXPR_MAP(i));
#endif
#else
  // Grid-stride: UNROLL loads in flight per work-item, neighbouring work-items neighbouring
  // elements.
  ulong i = gid;
#if EXPR_USE_VEC
  if (expr_vec_aligned(x0, x1, x2, x3)) {  // uniform across the launch
    const ulong nv = n / EXPR_VEC;
    ulong v = gid;
    expr_l0 l0[UNROLL];
    expr_l1 l1[UNROLL];
    expr_l2 l2[UNROLL];
    expr_l3 l3[UNROLL];
    (void)l1;
    (void)l2;
    (void)l3;
    for (; nv > (UNROLL - 1) * items && v < nv - (UNROLL - 1) * items; v += UNROLL * items) {
#pragma unroll
      for (uint k = 0; k < UNROLL; ++k) {
        EXPR_VLOAD(k, v + k * items);
      }
#pragma unroll
      for (uint k = 0; k < UNROLL; ++k) {
#if EXPR_LSE_V
        acc[k] = clr_lse_vfold(acc[k], l0[k].v);
#else
#pragma unroll
        for (uint j = 0; j < EXPR_VEC; ++j) acc[k] = EXPR_STEP(acc[k], EXPR_LMAP(k, j));
#endif
      }
      EXPR_VROUND_DONE();
    }
    for (; v < nv; v += items) {
      EXPR_VLOAD(0, v);
#if EXPR_LSE_V
      acc[0] = clr_lse_vfold(acc[0], l0[0].v);
#else
#pragma unroll
      for (uint j = 0; j < EXPR_VEC; ++j) acc[0] = EXPR_STEP(acc[0], EXPR_LMAP(0, j));
#endif
    }
    i = nv * EXPR_VEC + gid;  // the last n % EXPR_VEC elements, below
  }
#endif
  for (; n > (UNROLL - 1) * items && i < n - (UNROLL - 1) * items; i += UNROLL * items) {
#pragma unroll
    for (uint k = 0; k < UNROLL; ++k) acc[k] = EXPR_STEP(acc[k], EXPR_MAP(i + k * items));
    EXPR_ROUND_DONE();
  }
  for (; i < n; i += items) acc[0] = EXPR_STEP(acc[0], EXPR_MAP(i));
#endif
#if EXPR_BLOCK
  expr_push(stack, &blocks, expr_flush(acc));
  acc[0] = expr_stack_fold(stack, blocks);
#else
#pragma unroll
  for (uint k = 1; k < UNROLL; ++k) acc[0] = clr_op(acc[0], acc[k]);
#endif
  clr_ticket_reduce(acc[0], s, WG_SIZE, &is_last, partials, ticket, out);
}

// The reference: one work-item, element by element in index order from the identity, or, with
// resume, from out[0] (the value after the chunks before this one); with absolute (float
// accumulators), the same fold of |map|, the float bound's scale. A run-time flag, not a build
// option: both folds come from one program.
__kernel void reduce_expr_seq(EXPR_INPUTS, ulong n, uint resume, uint absolute,
                              __global acc_t* out) {
  EXPR_UNUSED;
  if (get_global_id(0) != 0) return;
  acc_t a = resume ? out[0] : clr_identity();
#if EXPR_WIDTH == 1 && !EXPR_ARG && (CLR_ACC == CLR_FLOAT || CLR_ACC == CLR_DOUBLE)
  if (absolute) {
    for (ulong i = 0; i < n; ++i) a = clr_op(a, fabs(EXPR_MAP(i)));
  } else {
    for (ulong i = 0; i < n; ++i) a = clr_op(a, EXPR_MAP(i));
  }
#else
  (void)absolute;
  for (ulong i = 0; i < n; ++i) a = clr_op(a, EXPR_MAP(i));
#endif
  out[0] = a;
}

// The chunks' accumulators, m >= 1 of them at byte stride `stride` in `in` (each chunk's at an
// aligned place of one buffer), folded in index order: out[0] = op(...op(in[0], in[1])...,
// in[m-1]), as one work-item. Chunk c's indices already count from the array's start.
__kernel void reduce_expr_fold(__global const uchar* in, ulong stride, uint m,
                               __global acc_t* out) {
  if (get_global_id(0) != 0) return;
  acc_t a = *(__global const acc_t*)in;
  for (uint k = 1; k < m; ++k) a = clr_op(a, *(__global const acc_t*)(in + k * stride));
  out[0] = a;
}

#if EXPR_POST
// post gives one value of A (the accumulator itself where it is one value).
A clr_expr_post(acc_t a, long n);
// out[k] = post(in[k], n) for k < m.
__kernel void reduce_expr_post(__global const acc_t* in, uint m, ulong n, __global A* out) {
  if (get_global_id(0) != 0) return;
  for (uint k = 0; k < m; ++k) out[k] = clr_expr_post(in[k], (long)n);
}
#endif

#include "clr_expr_checks.h"
