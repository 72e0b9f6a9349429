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
//   EXPR_WHERE 1 when a predicate (--where) is given, WG_SIZE, EXPR_CPU, UNROLL, EXPR_ABS;
//   EXPR_WIDTH 1, 2 or 4: the accumulator is that many values of CLR_ACC (a vector type, e.g.
//   double4; post then gives one value of CLR_ACC);
//   EXPR_BLOCK 0 or B: with B, each work-item folds B rounds of its UNROLL accumulators at a
//   time and combines those block values pairwise (a binary counter over a stack), so that an
//   element passes through about B + log2(blocks) operations in the work-item, not
//   n / work-items (the built-in ops' rows: error bounds of pairwise summation's kind).
// The built-in ops of the command line (--op dot, mean, var, norm2, logsumexp, ...) are rows of
// map, reduce, identity and post over the helpers below (host/reduce/expr_ops.cpp).
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
#ifndef EXPR_WIDTH
#define EXPR_WIDTH 1
#endif
#ifndef EXPR_BLOCK
#define EXPR_BLOCK 0
#endif
#ifndef EXPR_WHERE
#define EXPR_WHERE 0
#endif

#if EXPR_WIDTH > 1 && defined(A_IS_FLOAT)
// Helpers of the built-in ops' rows (two- and four-value accumulators of a float type A).
typedef CLR_EXPR_VEC(A_NAME, 2) clr_a2;

// Knuth's TwoSum: s = fl(a + b) and the exact error, a + b = s + e.
inline clr_a2 clr_two_sum(A a, A b) {
  const A s = a + b;
  const A bb = s - a;
  return (clr_a2)(s, (a - (s - bb)) + (b - bb));
}

// Compensated sums: (s, c) pairs whose value is s + c; two combine by TwoSum of the s, every
// error gathered in c (Ogita, Rump and Oishi's Sum2, in any tree).
inline clr_a2 clr_csum(clr_a2 a, clr_a2 b) {
  const clr_a2 t = clr_two_sum(a.x, b.x);
  return (clr_a2)(t.x, t.y + (a.y + b.y));
}

// The value of a compensated sum: s + c, or s where s is inf or NaN (c then means nothing).
inline A clr_csum_value(clr_a2 a) { return isfinite(a.x) ? a.x + a.y : a.x; }

// x*y as a compensated pair: the product and its exact error (fma), 0 where it is not finite.
inline clr_a2 clr_two_prod(A x, A y) {
  const A p = x * y;
  return (clr_a2)(p, isfinite(p) ? fma(x, y, -p) : (A)0);
}

#if EXPR_WIDTH == 2
// norm2: (scale, ssq) with value scale * sqrt(ssq), as BLAS nrm2 keeps it: no square of a value
// is formed, only squares of ratios <= 1, so nothing overflows or underflows where the norm
// does not. An element x is (|x|, 1) (0: (0, 0)); NaN anywhere gives NaN, else inf gives inf.
inline acc_t clr_nrm_map(A x) {
  const A ax = fabs(x);
  return isnan(ax) ? (acc_t)(NAN, NAN) : ax == 0 ? (acc_t)(0, 0) : (acc_t)(ax, 1);
}

inline acc_t clr_nrm_op(acc_t a, acc_t b) {
  if (isnan(a.x) || isnan(b.x)) return (acc_t)(NAN, NAN);
  if (a.x < b.x) {
    const acc_t t = a;
    a = b;
    b = t;
  }
  if (b.x == 0) return a;
  if (isinf(a.x)) return (acc_t)(a.x, 1);
  const A r = b.x / a.x;
  return (acc_t)(a.x, a.y + b.y * (r * r));
}

// logsumexp: (m, s) with value m + log(s), s the sum of exp(x - m) over the elements, m their
// largest: two combine by rescaling the smaller one's s. The identity (-inf, 0); NaN anywhere
// gives NaN, +inf gives +inf.
inline acc_t clr_lse_op(acc_t a, acc_t b) {
  if (isnan(a.x) || isnan(b.x)) return (acc_t)(NAN, NAN);
  const A m = fmax(a.x, b.x);
  if (m == -INFINITY) return (acc_t)(m, a.y + b.y);
  if (m == INFINITY) return (acc_t)(m, 1);
  return (acc_t)(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}
#endif

#if EXPR_WIDTH == 4
// mean: (s, c, count, 0): a compensated sum and the count of its elements.
inline acc_t clr_mean_op(acc_t a, acc_t b) {
  return (acc_t)(clr_csum(a.xy, b.xy), a.z + b.z, 0);
}

// var, std: (count, mean, M2, 0) of values shifted by a constant, combined pairwise (Chan,
// Golub and LeVeque's parallel variance). An element d is (1, d, d - d, 0): M2 is NaN for an
// infinite d, as NumPy's x - mean is.
inline acc_t clr_var_map(A d) { return (acc_t)(1, d, d - d, 0); }

inline acc_t clr_var_op(acc_t a, acc_t b) {
  if (b.x == 0) return a;
  if (a.x == 0) return b;
  const A n = a.x + b.x;
  const A d = b.y - a.y;
  const A f = b.x / n;
  return (acc_t)(n, a.y + d * f, (a.z + b.z) + d * d * (a.x * f), 0);
}
#endif
#endif

// The user's map (defined after this file), and the element-i call of it. Every kernel takes
// four input buffers; those past CLR_INPUTS are not read. With EXPR_WHERE, the user's predicate
// over the same elements: where it is false, the element is the identity (NumPy's where=).
#if CLR_INPUTS == 1
#define EXPR_PARAMS CLR_T0 x
#define EXPR_ARGS(i) x0[i]
#elif CLR_INPUTS == 2
#define EXPR_PARAMS CLR_T0 x, CLR_T1 y
#define EXPR_ARGS(i) x0[i], x1[i]
#elif CLR_INPUTS == 3
#define EXPR_PARAMS CLR_T0 x, CLR_T1 y, CLR_T2 z
#define EXPR_ARGS(i) x0[i], x1[i], x2[i]
#else
#define EXPR_PARAMS CLR_T0 x, CLR_T1 y, CLR_T2 z, CLR_T3 w
#define EXPR_ARGS(i) x0[i], x1[i], x2[i], x3[i]
#endif
acc_t clr_expr_map(EXPR_PARAMS);
#if EXPR_WHERE
int clr_expr_where(EXPR_PARAMS);
#define EXPR_MAP(i) (clr_expr_where(EXPR_ARGS(i)) ? clr_expr_map(EXPR_ARGS(i)) : clr_identity())
#else
#define EXPR_MAP(i) clr_expr_map(EXPR_ARGS(i))
#endif
#define EXPR_INPUTS                                                                   \
  __global const CLR_T0 *restrict x0, __global const CLR_T1 *restrict x1,             \
      __global const CLR_T2 *restrict x2, __global const CLR_T3 *restrict x3
#define EXPR_UNUSED \
  (void)x0;         \
  (void)x1;         \
  (void)x2;         \
  (void)x3

#if EXPR_BLOCK
// Levels of the pairwise stack: 2^48 blocks at most.
#define EXPR_LEVELS 48

// The work-item's UNROLL accumulators folded into one, and restarted from the identity.
inline acc_t expr_flush(acc_t* acc) {
  acc_t v = acc[0];
  acc[0] = clr_identity();
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
#else
#define EXPR_ROUND_DONE()
#endif
#if EXPR_CPU
  // A contiguous run per work-item, as UNROLL streams over its parts, then its remainder.
  const ulong per = (n + items - 1) / items;
  const ulong begin = min(gid * per, n);
  const ulong end = min(begin + per, n);
  const ulong q = (end - begin) / UNROLL;
  for (ulong j = 0; j < q; ++j) {
#pragma unroll
    for (uint k = 0; k < UNROLL; ++k) acc[k] = clr_op(acc[k], EXPR_MAP(begin + k * q + j));
    EXPR_ROUND_DONE();
  }
  for (ulong i = begin + UNROLL * q; i < end; ++i) acc[0] = clr_op(acc[0], EXPR_MAP(i));
#else
  // Grid-stride: UNROLL loads in flight per work-item, neighbouring work-items neighbouring
  // elements.
  ulong i = gid;
  for (; n > (UNROLL - 1) * items && i < n - (UNROLL - 1) * items; i += UNROLL * items) {
#pragma unroll
    for (uint k = 0; k < UNROLL; ++k) acc[k] = clr_op(acc[k], EXPR_MAP(i + k * items));
    EXPR_ROUND_DONE();
  }
  for (; i < n; i += items) acc[0] = clr_op(acc[0], EXPR_MAP(i));
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

// The reference: one work-item, element by element in index order from the identity (with
// EXPR_ABS, float accumulators: the same fold of |map|).
__kernel void reduce_expr_seq(EXPR_INPUTS, ulong n, __global acc_t* out) {
  EXPR_UNUSED;
  if (get_global_id(0) != 0) return;
  acc_t a = clr_identity();
#if EXPR_ABS && EXPR_WIDTH == 1
  for (ulong i = 0; i < n; ++i) a = clr_op(a, fabs(EXPR_MAP(i)));  // the float bound's scale
#else
  for (ulong i = 0; i < n; ++i) a = clr_op(a, EXPR_MAP(i));
#endif
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
