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
// clr_ticket.h (the one-launch reductions' hand-off between groups), clr_tail.h (the ladder's
// group-fold tails), clr_scan.h (the scans' segmented operator and tile store).
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
// Input types of the reduction engine (reduce_expr.cl, clr_expr.h) alone: never CLR_TYPE or
// CLR_ACC. A float16 input is read with vload_half (no cl_khr_fp16 needed).
#define CLR_HALF 6
#define CLR_BOOL 7
#define CLR_INT8 8
#define CLR_UINT8 9
#define CLR_INT16 10
#define CLR_UINT16 11

#define CLR_SUM 0
#define CLR_PROD 1
#define CLR_MIN 2
#define CLR_MAX 3
#define CLR_ARGMIN 4
#define CLR_ARGMAX 5
// A user-defined reduction (reduce_expr.cl): acc_t is the accumulator type CLR_ACC, and the
// identity and operator are the user's expressions, which the host appends to the program.
#define CLR_EXPR 6

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
#elif CLR_OP == CLR_EXPR && defined(EXPR_ARG) && EXPR_ARG == 1
// The engine's argmin and argmax rows: a value of A and its index (16 bytes; A float gets an
// explicit zeroed pad, so no byte is uninitialised).
typedef struct {
  A v;
#if CLR_ACC == CLR_FLOAT || CLR_ACC == CLR_INT32 || CLR_ACC == CLR_UINT32
  uint pad;
#endif
  long i;
} acc_t;
#elif CLR_OP == CLR_EXPR && defined(EXPR_ARG) && EXPR_ARG == 2
// The engine's minmax row: the least and the greatest value of A and their indices (no padding:
// two values of A, then two longs).
typedef struct {
  A lo;
  A hi;
  long ilo;
  long ihi;
} acc_t;
#elif CLR_OP == CLR_EXPR && defined(EXPR_WIDTH) && EXPR_WIDTH > 1
// A user-defined reduction whose accumulator is EXPR_WIDTH values of A (2 or 4): the vector type
// (double2, float4, ...), so its expressions combine several running values at once.
#define CLR_EXPR_VEC_(a, b) a##b
#define CLR_EXPR_VEC(a, b) CLR_EXPR_VEC_(a, b)
typedef CLR_EXPR_VEC(A_NAME, EXPR_WIDTH) acc_t;
#else
typedef A acc_t;
#endif

#if CLR_OP == CLR_EXPR
// The user's identity and reduce (defined after the kernel file; checked on the device for
// neutrality, associativity and commutativity before a tree is trusted with them).
acc_t clr_expr_identity(void);
acc_t clr_expr_reduce(acc_t a, acc_t b);
#endif

// The identity: OP(identity, x) == x for every x.
inline acc_t clr_identity(void) {
#if CLR_OP == CLR_EXPR
  return clr_expr_identity();
#elif CLR_OP == CLR_SUM
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
#elif CLR_OP == CLR_EXPR && defined(EXPR_ARG) && EXPR_ARG
  (void)x;  // the engine's map reads its own inputs (clr_expr.h)
  (void)i;
  return clr_identity();
#else
  return (acc_t)x[i];
#endif
}

// The operator. Associative and commutative.
inline acc_t clr_op(acc_t a, acc_t b) {
#if CLR_OP == CLR_EXPR
  return clr_expr_reduce(a, b);
#elif CLR_OP == CLR_SUM
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
  // or when it is strictly more extreme. Without branches: the branching form cost about 1 us
  // of a 2^20 float argmax on an H200, in the groups' folds (docs/PERF.md).
  const int an = CLR_ISNAN(a.v), bn = CLR_ISNAN(b.v);
#if CLR_OP == CLR_ARGMIN
  const int more = a.v < b.v;  // false where either is NaN
#else
  const int more = a.v > b.v;
#endif
  const int a_wins = more | (an & !bn) | (((a.v == b.v) | (an & bn)) & (a.i < b.i));
  return a_wins ? a : b;
#endif
}

// A group's result as it leaves the group: a float sum + 0, which turns -0 into +0 and leaves every
// other value as it is. A float sum is -0 only where every element is -0 and the elements were
// added without the identity (pairs, a group's tree): NumPy's sum, which adds from +0, says +0,
// and so does every variant. Other operators: the value itself.
inline acc_t clr_result(acc_t a) {
#if CLR_OP == CLR_SUM && defined(A_IS_FLOAT)
  return a + (acc_t)0;
#else
  return a;
#endif
}

// An accumulator as 32-bit words: how it crosses work-groups through atomics (clr_ticket.h,
// scan_lookback.cl) and warps through shuffles (clr_tail.h).
typedef union {
  acc_t a;
  uint w[sizeof(acc_t) / 4];
} clr_words;

// Multi-pass kernels (the ladder, kernels 1-7): element j of a pass's input, read from the array
// on the first pass (x, with its index for arg ops) or from the previous pass's partials (y).
// `first` is a constant at every call site, so the test folds away.
inline acc_t clr_fetch(__global const T* x, __global const acc_t* y, ulong j, int first) {
  return first ? clr_load(x, j) : y[j];
}

#endif  // CLR_CODES_ONLY
#endif  // CLREDUCE_H
