// clr_expr.h: what every kernel of a user-defined reduction shares (reduce_expr.cl,
// reduce_segments.cl): the defaults of the host's -D options (CLR_INPUTS, CLR_T0..CLR_T3,
// EXPR_POST, EXPR_WIDTH, EXPR_WHERE), the helpers of the built-in ops' rows (two- and four-value
// accumulators of a float type), and the user's map and predicate, declared here and defined
// after the kernel file by the host: EXPR_MAP(i) is element i mapped (the identity where the
// predicate is false), over the four input buffers EXPR_INPUTS. Included after clreduce.h with
// CLR_OP == CLR_EXPR.
#ifndef CLR_EXPR_H
#define CLR_EXPR_H
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
#ifndef EXPR_WHERE
#define EXPR_WHERE 0
#endif
#ifndef EXPR_ARG
#define EXPR_ARG 0
#endif

#if EXPR_ARG
// Helpers of the argmin, argmax and minmax rows (EXPR_ARG 1: a value and its index; 2: the
// least and greatest values and their indices; the map gets the element's index i). NaN wins
// and the first index wins a tie, as NumPy's argmin: the first NaN if there is one.
#ifdef A_IS_FLOAT
#define CLR_A_ISNAN(v) isnan(v)
#define CLR_A_MAX ((A)INFINITY)
#define CLR_A_LOWEST ((A)-INFINITY)
#elif CLR_ACC == CLR_INT64
#define CLR_A_ISNAN(v) 0
#define CLR_A_MAX LONG_MAX
#define CLR_A_LOWEST LONG_MIN
#else
#define CLR_A_ISNAN(v) 0
#define CLR_A_MAX ULONG_MAX
#define CLR_A_LOWEST 0ul
#endif
// Whether (av, ai) wins over (bv, bi): the least (lo) or the greatest value.
inline int clr_arg_wins(A av, long ai, A bv, long bi, int lo) {
  const int an = CLR_A_ISNAN(av), bn = CLR_A_ISNAN(bv);
  if (an || bn) return an && (!bn || ai < bi);
  if (av == bv) return ai < bi;
  return lo ? av < bv : av > bv;
}
#if EXPR_ARG == 1
// (value, index): x at index i; the identity loses to every element (index LONG_MAX).
inline acc_t clr_arg_map(A v, long i) {
  acc_t r;
  r.v = v;
#if CLR_ACC == CLR_FLOAT || CLR_ACC == CLR_INT32 || CLR_ACC == CLR_UINT32
  r.pad = 0u;
#endif
  r.i = i;
  return r;
}
inline acc_t clr_arg_op(acc_t a, acc_t b, int lo) {
  return clr_arg_wins(a.v, a.i, b.v, b.i, lo) ? a : b;
}
inline acc_t clr_arg_identity(int lo) {
  return clr_arg_map(lo ? CLR_A_MAX : CLR_A_LOWEST, LONG_MAX);
}
#else
inline acc_t clr_minmax_map(A v, long i) {
  acc_t r;
  r.lo = v;
  r.hi = v;
  r.ilo = i;
  r.ihi = i;
  return r;
}
inline acc_t clr_minmax_identity(void) {
  acc_t r;
  r.lo = CLR_A_MAX;
  r.hi = CLR_A_LOWEST;
  r.ilo = LONG_MAX;
  r.ihi = LONG_MAX;
  return r;
}
inline acc_t clr_minmax_op(acc_t a, acc_t b) {
  acc_t r;
  const int l = clr_arg_wins(a.lo, a.ilo, b.lo, b.ilo, 1);
  const int h = clr_arg_wins(a.hi, a.ihi, b.hi, b.ihi, 0);
  r.lo = l ? a.lo : b.lo;
  r.ilo = l ? a.ilo : b.ilo;
  r.hi = h ? a.hi : b.hi;
  r.ihi = h ? a.ihi : b.ihi;
  return r;
}

// The fold of one element b (clr_minmax_map, or the identity where --where leaves it out) into
// a, whose elements all come before it (a work-item's elements arrive in increasing index
// order): b takes a side where it is strictly beyond a's value, where it is NaN and a's is not,
// or where a holds no element yet (index LONG_MAX). A tie keeps a's first index and a NaN
// stays, with no index compared.
inline acc_t clr_minmax_fold(acc_t a, acc_t b) {
  acc_t r;
  const int empty = a.ilo == LONG_MAX;
  const int l = empty | (b.lo < a.lo) | (CLR_A_ISNAN(b.lo) & !CLR_A_ISNAN(a.lo));
  const int h = empty | (b.hi > a.hi) | (CLR_A_ISNAN(b.hi) & !CLR_A_ISNAN(a.hi));
  r.lo = l ? b.lo : a.lo;
  r.ilo = l ? b.ilo : a.ilo;
  r.hi = h ? b.hi : a.hi;
  r.ihi = h ? b.ihi : a.ihi;
  return r;
}
#endif
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
// largest (or, after CLR_LSE_EXPF's fold, one within CLR_LSE_T of it): two combine by rescaling
// to the larger m, neither exp's argument above 0. The identity (-inf, 0); NaN anywhere gives
// NaN, +inf gives +inf.
inline acc_t clr_lse_op(acc_t a, acc_t b) {
  if (isnan(a.x) || isnan(b.x)) return (acc_t)(NAN, NAN);
  const A m = fmax(a.x, b.x);
  if (m == -INFINITY) return (acc_t)(m, a.y + b.y);
  if (m == INFINITY) return (acc_t)(m, 1);
  return (acc_t)(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

#ifndef CLR_LSE_EXPF
#define CLR_LSE_EXPF 0
#endif
#ifndef CLR_LSE_VFOLD
#define CLR_LSE_VFOLD 0
#endif
#if CLR_LSE_EXPF
// The lazy max's margin (below).
#ifndef CLR_LSE_T
#define CLR_LSE_T 8
#endif
// The fold of one element b ((x, 1), or the identity (-inf, 0) where --where leaves it out) into
// a, for float and float16 arrays in double (the host's CLR_LSE_EXPF): m moves only where b.x is
// past a.x + CLR_LSE_T, its s rescaled by a double exp (rare: an element past every one before
// it by that margin); else m stays, though b.x may be up to CLR_LSE_T above it, and the term
// exp(x - m), at most e^CLR_LSE_T, is a float exp of the difference rounded to float (one
// element's whole cost). m stays one of the accumulator's elements (or -inf), whose own term
// is 1, and s at most e^CLR_LSE_T times the count (far inside double), so clr_lse_op takes it
// as it is. NaN and inf as the other fold: a NaN x makes m NaN; equal infinities (d NaN) add
// their s; -inf (or the identity) adds exp(-inf) = 0; +inf moves m and s is 1.
// b.x and a.x are float values (a float or float16 element, +-inf or NaN), so the difference is
// taken in float, rounded once, and nothing but the term goes through double arithmetic: on GPUs
// a conversion between float and double costs several of the element's other operations.
inline acc_t clr_lse_fold(acc_t a, acc_t b) {
  const float d = (float)b.x - (float)a.x;
  if (d > (float)CLR_LSE_T) return (acc_t)(b.x, a.y * exp(a.x - b.x) + b.y);
  const float e = isnan(d) ? 1.0f : exp(d);
  return (acc_t)(isnan(b.x) ? b.x : a.x, a.y + b.y * (A)e);
}

#if CLR_LSE_VFOLD
// Four neighbouring elements of one float array (the GPU shape's vector load, no predicate)
// folded into a at once: where none of them is past m + CLR_LSE_T and none is NaN (a NaN
// difference fails the comparison), their terms are four float exps summed pairwise in float
// (relative error 2^-23 at most, all four positive) and added to s in double: one conversion
// each way for four elements. Else (m moves, a NaN, the identity's -inf) they go one at a time
// through clr_lse_fold, in index order.
inline acc_t clr_lse_vfold(acc_t a, float4 v) {
  const float4 d = v - (float4)((float)a.x);
  if (all(d <= (float4)((float)CLR_LSE_T))) {
    const float4 e = exp(d);
    return (acc_t)(a.x, a.y + (A)((e.x + e.y) + (e.z + e.w)));
  }
  a = clr_lse_fold(a, (acc_t)((A)v.x, 1));
  a = clr_lse_fold(a, (acc_t)((A)v.y, 1));
  a = clr_lse_fold(a, (acc_t)((A)v.z, 1));
  return clr_lse_fold(a, (acc_t)((A)v.w, 1));
}
#endif
#else
// The fold of one element b ((x, 1), or the identity where --where leaves it out) into a: the
// same rescaling with one exp, of -|x - m| (the side that does not move has exp(0) = 1, which
// clr_lse_op computes too), and no branch. Equal inf and -inf (x - m NaN) add their s; a NaN x
// makes m NaN, as clr_lse_op's (NaN, NaN) does.
inline acc_t clr_lse_fold(acc_t a, acc_t b) {
  const A d = b.x - a.x;
  const A e = isnan(d) ? (A)1 : exp(-fabs(d));
  const int up = b.x > a.x;
  const A m = up || isnan(b.x) ? b.x : a.x;
  return (acc_t)(m, up ? a.y * e + b.y : a.y + b.y * e);
}
#endif

// var, std: the shifted sums' element d = x - clr_shift, (d, d^2).
inline acc_t clr_shifted2(A d) { return (acc_t)(d, d * d); }
#endif

// var and std of float and float16 arrays in double: (s1, s2) or (s1, s2, count, 0), the plain
// sums of d and d^2, d = x - clr_shift (one rounding in double at most, and no square leaves
// double's normal range: float's range squared stays inside it), every combine an addition. post:
// M2 = s2 - s1^2 / count (a negative M2 is a rounding: 0; NaN stays NaN), over count - ddof.
inline A clr_shifted_var(A s1, A s2, A count, A ddof) {
  A m2 = s2 - s1 * s1 / count;
  m2 = m2 < (A)0 ? (A)0 : m2;
  return m2 / fmax(count - ddof, (A)0);
}

#if EXPR_WIDTH == 4
// var, std with --where: (d, d^2, 1, 0), the count summed too.
inline acc_t clr_shifted4(A d) { return (acc_t)(d, d * d, 1, 0); }

// mean: (s, c, count, 0): a compensated sum and the count of its elements.
inline acc_t clr_mean_op(acc_t a, acc_t b) { return (acc_t)(clr_csum(a.xy, b.xy), a.z + b.z, 0); }

// var, std: (count, mean, M2, 0) of values shifted by a constant (the map's clr_shift, a kernel
// argument), combined pairwise (Chan, Golub and LeVeque's parallel variance). An element d is
// (1, d, d - d, 0): M2 is NaN for an infinite d, as NumPy's x - mean is.
inline acc_t clr_var_map(A d) { return (acc_t)(1, d, d - d, 0); }

#if EXPR_CPU
// 1 / k for k < 32, correctly rounded (constant folding is): on CPUs an element's fold into a
// work-item's accumulator (b.x = 1, a.x below a block's length) reads its f = 1 / n here
// instead of dividing. (On GPUs the lookup at an index that varies across a warp cost more
// than the division it saves: measured, not used there.)
__constant A clr_var_inv[32] = {
    0,         1,         (A)1 / 2,  (A)1 / 3,  (A)1 / 4,  (A)1 / 5,  (A)1 / 6,  (A)1 / 7,
    (A)1 / 8,  (A)1 / 9,  (A)1 / 10, (A)1 / 11, (A)1 / 12, (A)1 / 13, (A)1 / 14, (A)1 / 15,
    (A)1 / 16, (A)1 / 17, (A)1 / 18, (A)1 / 19, (A)1 / 20, (A)1 / 21, (A)1 / 22, (A)1 / 23,
    (A)1 / 24, (A)1 / 25, (A)1 / 26, (A)1 / 27, (A)1 / 28, (A)1 / 29, (A)1 / 30, (A)1 / 31};
#define CLR_VAR_F(b, n) ((b).x == 1 && (n) < 32 ? clr_var_inv[(int)(n)] : (b).x / (n))
#else
#define CLR_VAR_F(b, n) ((b).x / (n))
#endif

inline acc_t clr_var_op(acc_t a, acc_t b) {
  if (b.x == 0) return a;
  if (a.x == 0) return b;
  const A n = a.x + b.x;
  const A d = b.y - a.y;
  const A f = CLR_VAR_F(b, n);
  return (acc_t)(n, a.y + d * f, (a.z + b.z) + d * d * (a.x * f), 0);
}
#endif
#endif

// The user's map (defined after this file), and the element-i call of it. Every kernel takes
// four input buffers; those past CLR_INPUTS are not read; then clr_shift, a run-time value of A
// that the map and predicate may name (var and std: the value subtracted from every element, so
// that another value needs no new program). An input k built with -DCLR_Hk=1 is float16 ('half'
// buffers, read with vload_half: no cl_khr_fp16 needed), and its CLR_Tk is float, the type the
// expressions see. With EXPR_WHERE, the user's predicate over the same elements:
// where it is false, the element is the identity (NumPy's where=). With EXPR_ARG the map also
// takes the element's index i, counted from clr_base (a kernel argument after clr_shift: the
// global index of the buffers' element 0, so that a chunk's or a share's indices are the whole
// array's).
#ifdef A_IS_FLOAT
// norm2's term for float and float16 arrays in double (host/reduce/expr_ops.cpp, plain_double):
// the element's square, exact in double and inside its range.
inline A clr_sq(A x) { return x * x; }
#endif

#ifdef CLR_H0
#define CLR_B0 half
#define CLR_LD0(i) vload_half((i), x0)
#else
#define CLR_B0 CLR_T0
#define CLR_LD0(i) x0[i]
#endif
#ifdef CLR_H1
#define CLR_B1 half
#define CLR_LD1(i) vload_half((i), x1)
#else
#define CLR_B1 CLR_T1
#define CLR_LD1(i) x1[i]
#endif
#ifdef CLR_H2
#define CLR_B2 half
#define CLR_LD2(i) vload_half((i), x2)
#else
#define CLR_B2 CLR_T2
#define CLR_LD2(i) x2[i]
#endif
#ifdef CLR_H3
#define CLR_B3 half
#define CLR_LD3(i) vload_half((i), x3)
#else
#define CLR_B3 CLR_T3
#define CLR_LD3(i) x3[i]
#endif
#if CLR_INPUTS == 1
#define EXPR_PARAMS CLR_T0 x, A clr_shift
#define EXPR_ARGS(i) CLR_LD0(i), clr_shift
#elif CLR_INPUTS == 2
#define EXPR_PARAMS CLR_T0 x, CLR_T1 y, A clr_shift
#define EXPR_ARGS(i) CLR_LD0(i), CLR_LD1(i), clr_shift
#elif CLR_INPUTS == 3
#define EXPR_PARAMS CLR_T0 x, CLR_T1 y, CLR_T2 z, A clr_shift
#define EXPR_ARGS(i) CLR_LD0(i), CLR_LD1(i), CLR_LD2(i), clr_shift
#else
#define EXPR_PARAMS CLR_T0 x, CLR_T1 y, CLR_T2 z, CLR_T3 w, A clr_shift
#define EXPR_ARGS(i) CLR_LD0(i), CLR_LD1(i), CLR_LD2(i), CLR_LD3(i), clr_shift
#endif
#if EXPR_ARG
acc_t clr_expr_map(EXPR_PARAMS, long i);
#define EXPR_MAPPED(i) clr_expr_map(EXPR_ARGS(i), clr_base + (long)(i))
#else
acc_t clr_expr_map(EXPR_PARAMS);
#define EXPR_MAPPED(i) clr_expr_map(EXPR_ARGS(i))
#endif
#ifndef EXPR_FOLD
#define EXPR_FOLD 0
#endif
#if EXPR_FOLD
// A row's fold of one mapped element b into a running accumulator a whose elements all come
// before it (a work-item's accumulators take their elements in increasing index order): what
// the reduce gives, more cheaply (clr_minmax_fold, clr_lse_fold). Trees and blocks combine by
// the reduce.
acc_t clr_expr_fold(acc_t a, acc_t b);
#define EXPR_STEP(a, b) clr_expr_fold((a), (b))
#else
#define EXPR_STEP(a, b) clr_op((a), (b))
#endif
#if EXPR_WHERE
int clr_expr_where(EXPR_PARAMS);
#define EXPR_MAP(i) (clr_expr_where(EXPR_ARGS(i)) ? EXPR_MAPPED(i) : clr_identity())
#else
#define EXPR_MAP(i) EXPR_MAPPED(i)
#endif
#define EXPR_INPUTS                                                       \
  __global const CLR_B0 *restrict x0, __global const CLR_B1 *restrict x1, \
      __global const CLR_B2 *restrict x2, __global const CLR_B3 *restrict x3, const A clr_shift, \
      const long clr_base
#define EXPR_UNUSED \
  (void)x0;         \
  (void)x1;         \
  (void)x2;         \
  (void)x3;         \
  (void)clr_shift;  \
  (void)clr_base

#ifndef EXPR_LANES
#define EXPR_LANES 0
#endif
#if EXPR_LANES
// The CPU shape's lanes (EXPR_LANES, set by the host for some built-in rows over float and
// float16 arrays, no predicate): every stream of a work-item reads EXPR_LV consecutive elements
// of each input at a time (one 64-byte load of floats) and folds them into EXPR_LV lanes of the
// row's own state in vector arithmetic, lane j taking the vector's element j; lanes are folded
// into one accumulator (clr_lanes_flush) by the reduce. Each lane's elements come in increasing
// index order. The kinds:
//   1, 2, 3  plain sums in double of x, x*y, x*x (mean, dot, norm2: width 1)
//   4        the shifted sums of d and d*d, d = x - clr_shift (var, std: width 2)
//   5        minmax (float accumulator): each lane's extremes and the vector numbers they came
//            from, taken as clr_minmax_fold takes them
//   6        logsumexp in double: each lane's (m, s), as clr_lse_fold folds
#define EXPR_LV 16
#ifdef CLR_H0
#define CLR_VLD0(at) vload_half16(0, x0 + (at))
#else
#define CLR_VLD0(at) vload16(0, x0 + (at))
#endif
#ifdef CLR_H1
#define CLR_VLD1(at) vload_half16(0, x1 + (at))
#else
#define CLR_VLD1(at) vload16(0, x1 + (at))
#endif
#if CLR_INPUTS == 1
#define EXPR_VPARAMS float16 x, A clr_shift
#define EXPR_VARGS(at) CLR_VLD0(at), clr_shift
#else
#define EXPR_VPARAMS float16 x, float16 y, A clr_shift
#define EXPR_VARGS(at) CLR_VLD0(at), CLR_VLD1(at), clr_shift
#endif

#if EXPR_LANES <= 4 || EXPR_LANES == 6
typedef double16 clr_ld;
// The 16 lanes' sum, pairwise (halves). Through an array: Oclgrind 21.10 takes the halves of a
// vector (.lo, .hi) as uninitialised.
inline double clr_lanes_sum(clr_ld v) {
  union {
    double16 v;
    double s[16];
  } u;
  u.v = v;
#pragma unroll
  for (uint w = 8; w > 0; w /= 2) {
#pragma unroll
    for (uint j = 0; j < w; ++j) u.s[j] += u.s[j + w];
  }
  return u.s[0];
}
#endif

#if EXPR_LANES <= 4
typedef struct {
  clr_ld s, q;  // q: kind 4's sum of squares
} clr_lanes;
inline clr_lanes clr_lanes_init(void) {
  clr_lanes r;
  r.s = (clr_ld)0;
  r.q = (clr_ld)0;
  return r;
}
inline clr_lanes clr_lanes_step(clr_lanes r, EXPR_VPARAMS, uint v) {
  (void)v;
  (void)clr_shift;
#if EXPR_LANES == 1
  r.s += convert_double16(x);
#elif EXPR_LANES == 2
  r.s += convert_double16(x) * convert_double16(y);
#elif EXPR_LANES == 3
  const clr_ld c = convert_double16(x);
  r.s += c * c;
#else
  const clr_ld d = convert_double16(x) - clr_shift;
  r.s += d;
  r.q += d * d;
#endif
  return r;
}
// base: the global index of the stream's first element (unused by sums).
inline acc_t clr_lanes_flush(clr_lanes r, long base) {
  (void)base;
#if EXPR_LANES == 4
  return (acc_t)(clr_lanes_sum(r.s), clr_lanes_sum(r.q));
#else
  return clr_lanes_sum(r.s);
#endif
}

#elif EXPR_LANES == 5
// Flushed only after one step or more (the kernel's), so every lane holds an element: one that
// is still at (inf, -inf) from the start has met only inf (-inf), first at vector 0.
typedef struct {
  float16 lo, hi;
  uint16 vlo, vhi;  // the vector number (of the stream) of each lane's extremes
} clr_lanes;
inline clr_lanes clr_lanes_init(void) {
  clr_lanes r;
  r.lo = (float16)INFINITY;
  r.hi = (float16)-INFINITY;
  r.vlo = (uint16)0;
  r.vhi = (uint16)0;
  return r;
}
inline clr_lanes clr_lanes_step(clr_lanes r, EXPR_VPARAMS, uint v) {
  (void)clr_shift;
  const int16 l = (x < r.lo) | (isnan(x) & ~isnan(r.lo));
  const int16 h = (x > r.hi) | (isnan(x) & ~isnan(r.hi));
  r.lo = select(r.lo, x, l);
  r.vlo = select(r.vlo, (uint16)v, l);
  r.hi = select(r.hi, x, h);
  r.vhi = select(r.vhi, (uint16)v, h);
  return r;
}
inline acc_t clr_lanes_flush(clr_lanes r, long base) {
  union {
    float16 v;
    float s[16];
  } lo, hi;
  union {
    uint16 v;
    uint s[16];
  } vlo, vhi;
  lo.v = r.lo;
  hi.v = r.hi;
  vlo.v = r.vlo;
  vhi.v = r.vhi;
  acc_t a = clr_identity();
  for (uint j = 0; j < EXPR_LV; ++j) {
    acc_t e;
    e.lo = lo.s[j];
    e.hi = hi.s[j];
    e.ilo = base + (long)vlo.s[j] * EXPR_LV + j;
    e.ihi = base + (long)vhi.s[j] * EXPR_LV + j;
    a = clr_op(a, e);
  }
  return a;
}

#else  // 6: logsumexp
typedef struct {
  clr_ld m, s;
} clr_lanes;
inline clr_lanes clr_lanes_init(void) {
  clr_lanes r;
  r.m = (clr_ld)-INFINITY;
  r.s = (clr_ld)0;
  return r;
}
inline clr_lanes clr_lanes_step(clr_lanes r, EXPR_VPARAMS, uint v) {
  (void)v;
  (void)clr_shift;
  const clr_ld c = convert_double16(x);
  const clr_ld d = c - r.m;
  const clr_ld e = select(exp(-fabs(d)), (clr_ld)1, isnan(d));
  const long16 up = c > r.m;
  r.s = select(r.s + e, r.s * e + 1, up);
  r.m = select(r.m, c, up | isnan(c));
  return r;
}
// The lanes rescaled to their largest m at once (one vector exp) and summed pairwise; where that
// m is not finite (or a lane is NaN), lane by lane by the reduce.
inline acc_t clr_lanes_flush(clr_lanes r, long base) {
  (void)base;
  union {
    double16 v;
    double s[16];
  } m, s;
  m.v = r.m;
  double top = -INFINITY;
  int nan = 0;
  for (uint j = 0; j < EXPR_LV; ++j) {
    top = fmax(top, m.s[j]);
    nan |= isnan(m.s[j]);
  }
  if (!nan && isfinite(top)) return (acc_t)(top, clr_lanes_sum(r.s * exp(r.m - top)));
  s.v = r.s;
  acc_t a = clr_identity();
  for (uint j = 0; j < EXPR_LV; ++j) a = clr_op(a, (acc_t)(m.s[j], s.s[j]));
  return a;
}
#endif
#endif  // EXPR_LANES

#endif  // CLR_EXPR_H
