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
//   reduce_expr_seq   one work-item applies the expressions in index order: the reference.
//   reduce_expr_post  post(a, n) of m accumulators, one work-item.
//   reduce_expr_sample, reduce_expr_laws: the check of the reduce's laws on sample values.
// Host sets via -D (plus clreduce.h's CLR_ACC, and CLR_OP = CLR_EXPR):
//   CLR_INPUTS 1..4, CLR_T0..CLR_T3 the inputs' OpenCL C types, EXPR_POST 1 when a post is given,
//   WG_SIZE, EXPR_CPU, UNROLL, EXPR_ABS.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
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
#ifndef EXPR_ABS
#define EXPR_ABS 0
#endif
#ifndef EXPR_POST
#define EXPR_POST 0
#endif
#ifndef CLR_INPUTS
#define CLR_INPUTS 1
#endif
#ifndef CLR_T0
#define CLR_T0 int
#endif
#ifndef CLR_T1
#define CLR_T1 CLR_T0
#endif
#ifndef CLR_T2
#define CLR_T2 CLR_T0
#endif
#ifndef CLR_T3
#define CLR_T3 CLR_T0
#endif

// The user's map (defined after this file), and the element-i call of it. Every kernel takes
// four input buffers; those past CLR_INPUTS are not read.
#if CLR_INPUTS == 1
acc_t clr_expr_map(CLR_T0 x);
#define EXPR_MAP(i) clr_expr_map(x0[i])
#elif CLR_INPUTS == 2
acc_t clr_expr_map(CLR_T0 x, CLR_T1 y);
#define EXPR_MAP(i) clr_expr_map(x0[i], x1[i])
#elif CLR_INPUTS == 3
acc_t clr_expr_map(CLR_T0 x, CLR_T1 y, CLR_T2 z);
#define EXPR_MAP(i) clr_expr_map(x0[i], x1[i], x2[i])
#else
acc_t clr_expr_map(CLR_T0 x, CLR_T1 y, CLR_T2 z, CLR_T3 w);
#define EXPR_MAP(i) clr_expr_map(x0[i], x1[i], x2[i], x3[i])
#endif
#define EXPR_INPUTS                                                                   \
  __global const CLR_T0 *restrict x0, __global const CLR_T1 *restrict x1,             \
      __global const CLR_T2 *restrict x2, __global const CLR_T3 *restrict x3
#define EXPR_UNUSED \
  (void)x0;         \
  (void)x1;         \
  (void)x2;         \
  (void)x3

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
#if EXPR_CPU
  // A contiguous run per work-item, as UNROLL streams over its parts, then its remainder.
  const ulong per = (n + items - 1) / items;
  const ulong begin = min(gid * per, n);
  const ulong end = min(begin + per, n);
  const ulong q = (end - begin) / UNROLL;
  for (ulong j = 0; j < q; ++j) {
#pragma unroll
    for (uint k = 0; k < UNROLL; ++k) acc[k] = clr_op(acc[k], EXPR_MAP(begin + k * q + j));
  }
  for (ulong i = begin + UNROLL * q; i < end; ++i) acc[0] = clr_op(acc[0], EXPR_MAP(i));
#else
  // Grid-stride: UNROLL loads in flight per work-item, neighbouring work-items neighbouring
  // elements.
  ulong i = gid;
  for (; n > (UNROLL - 1) * items && i < n - (UNROLL - 1) * items; i += UNROLL * items) {
#pragma unroll
    for (uint k = 0; k < UNROLL; ++k) acc[k] = clr_op(acc[k], EXPR_MAP(i + k * items));
  }
  for (; i < n; i += items) acc[0] = clr_op(acc[0], EXPR_MAP(i));
#endif
#pragma unroll
  for (uint k = 1; k < UNROLL; ++k) acc[0] = clr_op(acc[0], acc[k]);
  clr_ticket_reduce(acc[0], s, WG_SIZE, &is_last, partials, ticket, out);
}

// The reference: one work-item, element by element in index order from the identity (with
// EXPR_ABS, float accumulators: the same fold of |map|).
__kernel void reduce_expr_seq(EXPR_INPUTS, ulong n, __global acc_t* out) {
  EXPR_UNUSED;
  if (get_global_id(0) != 0) return;
  acc_t a = clr_identity();
#if EXPR_ABS
  for (ulong i = 0; i < n; ++i) a = clr_op(a, fabs(EXPR_MAP(i)));  // the float bound's scale
#else
  for (ulong i = 0; i < n; ++i) a = clr_op(a, EXPR_MAP(i));
#endif
  out[0] = a;
}

#if EXPR_POST
acc_t clr_expr_post(acc_t a, long n);
// out[k] = post(in[k], n) for k < m.
__kernel void reduce_expr_post(__global const acc_t* in, uint m, ulong n, __global acc_t* out) {
  if (get_global_id(0) != 0) return;
  for (uint k = 0; k < m; ++k) out[k] = clr_expr_post(in[k], (long)n);
}
#endif

// The map of the elements at idx[0..m): the sample values of the law check.
__kernel void reduce_expr_sample(EXPR_INPUTS, __global const ulong* idx, uint m,
                                 __global acc_t* out) {
  EXPR_UNUSED;
  const uint k = (uint)get_global_id(0);
  if (k < m) out[k] = EXPR_MAP(idx[k]);
}

// For each of m triples (a, b, c) of pool values (indices tri[3k..3k+2]): out[8k..8k+7] =
// ab = op(a, b), bc = op(b, c), op(ab, c), op(a, bc), op(b, a), op(identity, a), op(a, identity),
// identity. The host compares them (associativity, commutativity, the identity's neutrality).
__kernel void reduce_expr_laws(__global const acc_t* pool, __global const uint* tri, uint m,
                               __global acc_t* out) {
  const uint k = (uint)get_global_id(0);
  if (k >= m) return;
  const acc_t a = pool[tri[3 * k]], b = pool[tri[3 * k + 1]], c = pool[tri[3 * k + 2]];
  const acc_t id = clr_identity();
  const acc_t ab = clr_op(a, b), bc = clr_op(b, c);
  __global acc_t* o = out + 8 * (ulong)k;
  o[0] = ab;
  o[1] = bc;
  o[2] = clr_op(ab, c);
  o[3] = clr_op(a, bc);
  o[4] = clr_op(b, a);
  o[5] = clr_op(id, a);
  o[6] = clr_op(a, id);
  o[7] = id;
}
