// clreduce.h: the element type T, the accumulator acc_t and the operator shared by every kernel.
// The host splices this file in front of each .cl file (with #line, so messages point at the
// right file) and selects type and operator with -D; the defaults make any kernel compile alone.
//   CLR_TYPE  element type, a type code below (default CLR_INT32)
//   CLR_ACC   accumulator type, a type code (default: int64 for int32, uint64 for uint32, else T)
//   CLR_OP    operator, an operator code below (default CLR_SUM)
// Operators: integer sum/prod wrap (computed in the unsigned type: no undefined behaviour);
// float min/max propagate NaN; argmin/argmax keep the first index of the extreme, the first NaN
// if any. Every operator is associative and commutative (arg ops compare indices), so kernels
// may combine elements in any fixed order.
// What only some kernels need is in headers they include after this one (a line
// `#include "clr_NAME.h"`, spliced by the host like this file): clr_types.h (vector types),
// clr_ticket.h (the one-launch reductions' hand-off between groups), clr_scan.h (the scans'
// segmented operator and tile store).
#ifndef CLREDUCE_H
#define CLREDUCE_H

// The codes CLR_TYPE, CLR_ACC and CLR_OP take. They are the values of the host's DType and Op
// enums, which the host checks at compile time: its C++ includes this file with CLR_CODES_ONLY
// defined, reads this table alone and static_asserts each enumerator against it.
#define CLR_INT32 0
#define CLR_UINT32 1
#define CLR_INT64 2
#define CLR_UINT64 3
#define CLR_FLOAT 4
#define CLR_DOUBLE 5

#define CLR_SUM 0
#define CLR_PROD 1
#define CLR_MIN 2
#define CLR_MAX 3
#define CLR_ARGMIN 4
#define CLR_ARGMAX 5

#ifndef CLR_CODES_ONLY

#ifndef CLR_TYPE
#define CLR_TYPE CLR_INT32
#endif
#ifndef CLR_OP
#define CLR_OP CLR_SUM
#endif
#ifndef CLR_ACC
#if (CLR_OP == CLR_SUM || CLR_OP == CLR_PROD) && CLR_TYPE == CLR_INT32
#define CLR_ACC CLR_INT64
#elif (CLR_OP == CLR_SUM || CLR_OP == CLR_PROD) && CLR_TYPE == CLR_UINT32
#define CLR_ACC CLR_UINT64
#else
#define CLR_ACC CLR_TYPE
#endif
#endif

#if CLR_TYPE == CLR_DOUBLE || CLR_ACC == CLR_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

// T: the element type, with its extremes (for min/max identities); A: the scalar accumulator
// type; U: its unsigned twin, for wrapping integer arithmetic (integer accumulators only).
// T_NAME, A_NAME, U_NAME: their OpenCL C names, from which clr_types.h builds vector types.
#if CLR_TYPE == CLR_INT32
#define T_NAME int
#define T_MAX INT_MAX
#define T_LOWEST INT_MIN
#elif CLR_TYPE == CLR_UINT32
#define T_NAME uint
#define T_MAX UINT_MAX
#define T_LOWEST 0u
#elif CLR_TYPE == CLR_INT64
#define T_NAME long
#define T_MAX LONG_MAX
#define T_LOWEST LONG_MIN
#elif CLR_TYPE == CLR_UINT64
#define T_NAME ulong
#define T_MAX ULONG_MAX
#define T_LOWEST 0ul
#elif CLR_TYPE == CLR_FLOAT
#define T_NAME float
#define T_MAX INFINITY
#define T_LOWEST (-INFINITY)
#define T_IS_FLOAT 1
#else
#define T_NAME double
#define T_MAX ((double)INFINITY)
#define T_LOWEST ((double)-INFINITY)
#define T_IS_FLOAT 1
#endif
typedef T_NAME T;

#if CLR_ACC == CLR_INT32
#define A_NAME int
#define U_NAME uint
#define AS_A as_int
#elif CLR_ACC == CLR_UINT32
#define A_NAME uint
#define U_NAME uint
#define AS_A as_uint
#elif CLR_ACC == CLR_INT64
#define A_NAME long
#define U_NAME ulong
#define AS_A as_long
#elif CLR_ACC == CLR_UINT64
#define A_NAME ulong
#define U_NAME ulong
#define AS_A as_ulong
#elif CLR_ACC == CLR_FLOAT
#define A_NAME float
#define A_IS_FLOAT 1
#else
#define A_NAME double
#define A_IS_FLOAT 1
#endif
typedef A_NAME A;
#ifdef U_NAME
typedef U_NAME U;
#endif

#ifdef T_IS_FLOAT
#define CLR_ISNAN(x) isnan(x)
#else
#define CLR_ISNAN(x) 0
#endif

#define CLR_IS_ARG (CLR_OP == CLR_ARGMIN || CLR_OP == CLR_ARGMAX)

#if CLR_IS_ARG
// acc_t for arg ops: the value and its index; the host reads 16 bytes, index at offset 8.
// 32-bit T gets an explicit zeroed pad, so no byte of acc_t is ever uninitialised.
typedef struct {
  T v;
#if CLR_TYPE == CLR_INT32 || CLR_TYPE == CLR_UINT32 || CLR_TYPE == CLR_FLOAT
  uint pad;
#define CLR_ARG_PAD(r) (r).pad = 0u
#else
#define CLR_ARG_PAD(r)
#endif
  long i;
} acc_t;
#else
typedef A acc_t;
#endif

// The identity: OP(identity, x) == x for every x.
inline acc_t clr_identity(void) {
#if CLR_OP == CLR_SUM
  return (acc_t)0;
#elif CLR_OP == CLR_PROD
  return (acc_t)1;
#elif CLR_OP == CLR_MIN
  return (acc_t)T_MAX;
#elif CLR_OP == CLR_MAX
  return (acc_t)T_LOWEST;
#else
  acc_t r;
  r.v = CLR_OP == CLR_ARGMIN ? T_MAX : T_LOWEST;
  r.i = LONG_MAX;  // loses every tie against a real element
  CLR_ARG_PAD(r);
  return r;
#endif
}

// Element i of x as an accumulator.
inline acc_t clr_load(__global const T* x, ulong i) {
#if CLR_IS_ARG
  acc_t r;
  r.v = x[i];
  r.i = (long)i;
  CLR_ARG_PAD(r);
  return r;
#else
  return (acc_t)x[i];
#endif
}

// The operator. Associative and commutative.
inline acc_t clr_op(acc_t a, acc_t b) {
#if CLR_OP == CLR_SUM
#ifdef A_IS_FLOAT
  return a + b;
#else
  return AS_A((U)((U)a + (U)b));
#endif
#elif CLR_OP == CLR_PROD
#ifdef A_IS_FLOAT
  return a * b;
#else
  return AS_A((U)((U)a * (U)b));
#endif
#elif CLR_OP == CLR_MIN
  return (CLR_ISNAN(a) || a < b) ? a : b;
#elif CLR_OP == CLR_MAX
  return (CLR_ISNAN(a) || a > b) ? a : b;
#else
  // a wins when it is NaN and b is not, when both are NaN or equal and a has the lower index,
  // or when it is strictly more extreme.
  const int an = CLR_ISNAN(a.v), bn = CLR_ISNAN(b.v);
  int a_wins;
  if (an || bn) {
    a_wins = an && (!bn || a.i < b.i);
  } else if (a.v == b.v) {
    a_wins = a.i < b.i;
  } else {
    a_wins = CLR_OP == CLR_ARGMIN ? a.v < b.v : a.v > b.v;
  }
  return a_wins ? a : b;
#endif
}

// An accumulator as 32-bit words: how it crosses work-groups through atomics (clr_ticket.h,
// scan_lookback.cl) and warps through shuffles (CLR_TAIL 2 below).
typedef union {
  acc_t a;
  uint w[sizeof(acc_t) / 4];
} clr_words;

// ---------------------------------------------------------------------------------------------
// Multi-pass kernels (the ladder, kernels 1-7): element j of a pass's input, read from the array
// on the first pass (x, with its index for arg ops) or from the previous pass's partials (y).
// `first` is a constant at every call site, so the test folds away.
inline acc_t clr_fetch(__global const T* x, __global const acc_t* y, ulong j, int first) {
  return first ? clr_load(x, j) : y[j];
}

// Group-fold tails: how ladder kernels 5-7 finish a work-group's fold once few elements remain.
// The seeds' "unroll the last warp" dropped the barriers and relied on a warp running in
// lock-step through volatile shared memory: a data race on current GPUs, and no meaning in
// OpenCL. The host picks one of these from Context::caps() (trial builds and numeric checks at
// start-up, never extension strings) and sets it with -D:
//   CLR_TAIL 0  barriers all the way down (portable; the default)
//            1  sub-group functions: sub-group 0 folds the last 2*S elements (S its size, anything
//               from 1 to the whole group) with sub_group_barrier between steps; needs the
//               -cl-std option that Capabilities::subgroups_options names
//            2  NVIDIA's warp shuffle through inline PTX (shfl.sync.bfly.b32): work-items 0..31,
//               one full warp, fold the last 64 elements in registers; needs a group size that is
//               a multiple of 32
#ifndef CLR_TAIL
#define CLR_TAIL 0
#endif
#if CLR_TAIL == 1 && defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

#if CLR_TAIL == 2
// v = OP(v, v of the work-item whose lane is lane ^ B), B an immediate (16, 8, 4, 2, 1): the
// accumulator travels as 32-bit words, each through one shfl.sync over the full warp.
#define CLR_SHFL_BFLY(v, B)                                                             \
  do {                                                                                  \
    clr_words u_, r_;                                                                   \
    u_.a = (v);                                                                         \
    for (uint k_ = 0; k_ < sizeof(acc_t) / 4; ++k_) {                                   \
      uint t_;                                                                          \
      asm volatile("shfl.sync.bfly.b32 %0, %1, " #B ", 31, 0xffffffff;"                 \
                   : "=r"(t_)                                                           \
                   : "r"(u_.w[k_]));                                                    \
      r_.w[k_] = t_;                                                                    \
    }                                                                                   \
    (v) = clr_op((v), r_.a);                                                            \
  } while (0)
#endif

// Call with every work-item before the barrier that publishes the loaded s[]: the sub-group
// tail records sub-group 0's size in *sg (no assumption about which work-items form it).
inline void clr_tail_setup(__local uint* sg) {
#if CLR_TAIL == 1
  if (get_sub_group_id() == 0 && get_sub_group_local_id() == 0) *sg = get_sub_group_size();
#else
  (void)sg;
#endif
}

// The group folds with work-group barriers while more elements than this remain; uniform.
inline uint clr_tail_limit(__local const uint* sg) {
#if CLR_TAIL == 1
  return 2u * *sg;
#elif CLR_TAIL == 2
  (void)sg;
  return 64u;
#else
  (void)sg;
  return 1u;
#endif
}

// Folds s[0..w), w <= clr_tail_limit(sg), visible to the whole group after a barrier, and
// writes the total to *out from exactly one work-item. Call with every work-item of the group.
inline void clr_tail_fold(__local acc_t* s, uint w, __local const uint* sg, __global acc_t* out) {
  const uint lid = (uint)get_local_id(0);
#if CLR_TAIL == 1
  (void)lid;
  (void)sg;
  if (get_sub_group_id() == 0) {  // uniform within the sub-group
    const uint sl = get_sub_group_local_id();
    for (uint k = w; k > 1;) {
      const uint h = (k + 1) / 2;
      if (sl + h < k) s[sl] = clr_op(s[sl], s[sl + h]);
      sub_group_barrier(CLK_LOCAL_MEM_FENCE);
      k = h;
    }
    if (sl == 0) *out = s[0];
  }
#elif CLR_TAIL == 2
  (void)sg;
  if (lid < 32) {  // warp 0, whole: the group size is a multiple of 32
    acc_t v = lid < w ? s[lid] : clr_identity();
    if (lid + 32 < w) v = clr_op(v, s[lid + 32]);
    CLR_SHFL_BFLY(v, 16);
    CLR_SHFL_BFLY(v, 8);
    CLR_SHFL_BFLY(v, 4);
    CLR_SHFL_BFLY(v, 2);
    CLR_SHFL_BFLY(v, 1);
    if (lid == 0) *out = v;
  }
#else
  (void)w;
  (void)sg;
  if (lid == 0) *out = s[0];
#endif
}

// The completely unrolled tree of kernels 6 and 7: folds s[0..W) down to at most `limit`
// elements and returns how many remain. Inlined with W = WG_SIZE (a -D constant, <= 4096) and
// a constant limit, every width below is a constant: twelve straight-line steps, no loop.
inline uint clr_unrolled_fold(__local acc_t* s, const uint W, const uint limit) {
  const uint lid = (uint)get_local_id(0);
  uint w = W;
#define CLR_STEP                                                        \
  if (w > limit) {                                                      \
    const uint h = (w + 1) / 2;                                         \
    if (lid + h < w) s[lid] = clr_op(s[lid], s[lid + h]);               \
    barrier(CLK_LOCAL_MEM_FENCE);                                       \
    w = h;                                                              \
  }
  CLR_STEP CLR_STEP CLR_STEP CLR_STEP CLR_STEP CLR_STEP
  CLR_STEP CLR_STEP CLR_STEP CLR_STEP CLR_STEP CLR_STEP
#undef CLR_STEP
  return w;
}

#endif  // CLR_CODES_ONLY
#endif  // CLREDUCE_H
