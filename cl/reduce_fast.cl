// reduce_fast.cl: one launch reduces any n with wide vector loads. The body of the array is read
// as VEC-element vectors (VT), UNROLL independent loads in flight, into vector accumulators; the
// unaligned head and the tail (< VEC elements) are folded element by element. Each group folds
// its work-items in local memory and publishes one partial; the last group to finish (atomic
// ticket, clr_ticket.h, as reduce_topdown.cl) folds the partials in index order.
// Two shapes, one code path (FAST_CPU picks how vectors are dealt out to work-items):
//   GPU (FAST_CPU 0): grid-stride over vectors, so neighbouring work-items read neighbouring
//     16-byte vectors (coalesced); cost n/VEC loads per work-item / (groups * WG_SIZE).
//   CPU (FAST_CPU 1): each work-item folds its own contiguous run of vectors in a uniform loop
//     (what PoCL compiles to straight SIMD code), as UNROLL streams over the run's parts
//     (FAST_STREAMS; arg ops keep each stream's extremes apart); few work-groups, about one per
//     core.
// Arg ops keep a lane-wise extreme and the vector index it came from (no index comparisons in
// the loop), folding the lanes with their element indices at the end.
// Needs an associative and commutative OP (it combines lanes and work-items out of order).
// Host sets via -D (plus clreduce.h's CLR_TYPE, CLR_ACC, CLR_OP):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_tail.h"
#include "clr_ticket.h"
#include "clr_types.h"
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group; any size the device accepts
#endif
#ifndef FAST_CPU
#define FAST_CPU 0  // 0: GPU shape (grid-stride vectors), 1: CPU shape (contiguous runs)
#endif
#ifndef VEC
#define VEC 4  // elements per vector load: 2, 4, 8 or 16 (16 bytes: 4 for 32-bit T, 2 for 64-bit)
#endif
#ifndef UNROLL
#define UNROLL 4  // independent vector loads (and accumulators) per loop step: 1, 2, 4 or 8
#endif
#ifndef FAST_ACCS
#define FAST_ACCS 1  // vector accumulators: 1 (GPU: fewer registers) or UNROLL (CPU: add latency)
#endif
#ifndef FAST_STREAMS
#define FAST_STREAMS 0  // CPU shape: 1 reads UNROLL far-apart streams of a run
#endif
#ifndef FAST_IDX32
#define FAST_IDX32 0  // 1: vector indices fit in 32 bits (the host checks); cheaper loop arithmetic
#endif
#ifndef FAST_ARG_BLOCK
#define FAST_ARG_BLOCK 32  // CPU shape, arg ops: vectors screened per block (0: no screening)
#endif

typedef CLR_VEC(T_NAME, VEC) VT;  // one vector load of T

#if FAST_IDX32
typedef uint vidx_t;
#else
typedef ulong vidx_t;
#endif

#if FAST_CPU
#define STRIDE 1u  // a work-item's vectors are contiguous
#else
#define STRIDE items  // a work-item's vectors are `items` apart
#endif

#if !CLR_IS_ARG
typedef CLR_VEC(A_NAME, VEC) VA;  // VEC accumulators side by side
#define CONVERT_VA CLR_CONVERT_VEC(A_NAME, VEC)
typedef union {
  VA v;
  A s[VEC];
} fast_lanes;

// The operator on VEC lanes at once, with clr_op's semantics lane by lane.
inline VA fast_vop(VA a, VA b) {
#if CLR_OP == CLR_SUM
#ifdef A_IS_FLOAT
  return a + b;
#else
  return CLR_AS_VEC(A_NAME, VEC)(CLR_AS_VEC(U_NAME, VEC)(a) + CLR_AS_VEC(U_NAME, VEC)(b));
#endif
#elif CLR_OP == CLR_PROD
#ifdef A_IS_FLOAT
  return a * b;
#else
  return CLR_AS_VEC(A_NAME, VEC)(CLR_AS_VEC(U_NAME, VEC)(a) * CLR_AS_VEC(U_NAME, VEC)(b));
#endif
#elif CLR_OP == CLR_MIN
#ifdef A_IS_FLOAT
  return select(b, a, isnan(a) | (a < b));  // a where a is NaN or smaller: NaN propagates
#else
  return min(a, b);
#endif
#else
#ifdef A_IS_FLOAT
  return select(b, a, isnan(a) | (a > b));
#else
  return max(a, b);
#endif
#endif
}
#else
// Arg ops keep, lane by lane, the extreme so far and the vector index it came from. Along one
// lane a work-item sees indices in increasing order, so a tie keeps the earlier element and a
// NaN, once taken, stays: no index comparisons in the loop (clr_op compares them afterwards).
#if CLR_TYPE == CLR_INT64 || CLR_TYPE == CLR_UINT64 || CLR_TYPE == CLR_DOUBLE
#define M_NAME long  // comparison results: integer lanes as wide as T
#else
#define M_NAME int
#endif
#if FAST_IDX32
#define X_NAME uint  // vector indices
#define XM_NAME int
#else
#define X_NAME ulong
#define XM_NAME long
#endif
typedef CLR_VEC(M_NAME, VEC) MT;
typedef CLR_VEC(X_NAME, VEC) VX;
typedef union {
  VT v;
  T s[VEC];
} fast_elems;
typedef union {
  VX v;
  X_NAME s[VEC];
} fast_where;

// Folds vector t, read from vector index w, into (best, at): lanes where t is NaN (and best is
// not) or strictly more extreme take t and w.
inline void fast_arg_step(VT* best, VX* at, VT t, vidx_t w) {
#ifdef T_IS_FLOAT
  // Strictly more extreme, or t NaN (a compare with a NaN is false, so its negation true), where
  // best is not NaN.
#if CLR_OP == CLR_ARGMIN
  const MT take = ~(t >= *best) & ~isnan(*best);
#else
  const MT take = ~(t <= *best) & ~isnan(*best);
#endif
#else
#if CLR_OP == CLR_ARGMIN
  const MT take = t < *best;
#else
  const MT take = t > *best;
#endif
#endif
  *best = select(*best, t, take);
  *at = select(*at, (VX)(w), CLR_CONVERT_VEC(XM_NAME, VEC)(take));
}

// Lanes where fast_arg_step(best, ., t, .) might take t: t strictly more extreme than best, or
// either NaN (a NaN best is masked out afterwards, once per block). One compare per vector.
inline MT fast_arg_hit(VT best, VT t) {
#ifdef T_IS_FLOAT
#if CLR_OP == CLR_ARGMIN
  return ~(t >= best);  // false for NaN operands: true for t < best or a NaN
#else
  return ~(t <= best);
#endif
#else
#if CLR_OP == CLR_ARGMIN
  return t < best;
#else
  return t > best;
#endif
#endif
}

// Folds the lanes of (best, at) into a, each with its element index (clr_op compares indices,
// so runs and streams may meet in any order).
inline acc_t fast_arg_lanes(acc_t a, VT best, VX at, ulong head) {
  fast_elems b;
  b.v = best;
  fast_where w;
  w.v = at;
#pragma unroll
  for (uint j = 0; j < VEC; ++j) {
    acc_t e;
    e.v = b.s[j];
    e.i = (long)(head + (ulong)w.s[j] * VEC + j);
    CLR_ARG_PAD(e);
    a = clr_op(a, e);
  }
  return a;
}
#endif

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void reduce_fast(
    __global const T* restrict x, ulong n, __global acc_t* partials, __global volatile uint* ticket,
    __global acc_t* out, ulong first) {
  __local acc_t s[WG_SIZE];
  __local int is_last;
  x += first;  // the range's first element (any: the head below takes whatever alignment it has)
  const uint groups = (uint)get_num_groups(0);
  const vidx_t items = (vidx_t)groups * WG_SIZE;
  const vidx_t gid = (vidx_t)get_global_id(0);

  // Head: the elements before the first VEC-aligned address (none when x starts a buffer);
  // body: nv whole vectors; tail: the < VEC elements after them.
  const ulong misaligned = ((ulong)x / sizeof(T)) % VEC;
  const ulong head = min(n, (ulong)((VEC - misaligned) % VEC));
  const vidx_t nv = (vidx_t)((n - head) / VEC);
  const ulong body_end = head + (ulong)nv * VEC;
  __global const VT* xv = (__global const VT*)(x + head);

#if FAST_CPU
  const vidx_t per = nv / items + (nv % items != 0);
  vidx_t v = gid * per;
  const vidx_t end = min(v + per, nv);
#else
  vidx_t v = gid;
  const vidx_t end = nv;
#endif

  acc_t a = clr_identity();
#if !CLR_IS_ARG
  VA acc[FAST_ACCS];
#pragma unroll
  for (uint k = 0; k < FAST_ACCS; ++k) acc[k] = (VA)(clr_identity());
#if FAST_CPU && FAST_STREAMS
  {  // UNROLL streams, each over its own part of the run
    const vidx_t q = v < end ? (end - v) / UNROLL : 0;
    for (vidx_t i = 0; i < q; ++i) {
      VT t[UNROLL];
#pragma unroll
      for (uint k = 0; k < UNROLL; ++k) t[k] = xv[v + i + k * q];
#pragma unroll
      for (uint k = 0; k < UNROLL; ++k)
        acc[k % FAST_ACCS] = fast_vop(acc[k % FAST_ACCS], CONVERT_VA(t[k]));
    }
    v += UNROLL * q;
  }
#else
  for (; v < end && end - v > (UNROLL - 1) * STRIDE; v += UNROLL * STRIDE) {
    VT t[UNROLL];
#pragma unroll
    for (uint k = 0; k < UNROLL; ++k) t[k] = xv[v + k * STRIDE];
#pragma unroll
    for (uint k = 0; k < UNROLL; ++k)
      acc[k % FAST_ACCS] = fast_vop(acc[k % FAST_ACCS], CONVERT_VA(t[k]));
  }
#endif
  for (; v < end; v += STRIDE) acc[0] = fast_vop(acc[0], CONVERT_VA(xv[v]));
#pragma unroll
  for (uint k = 1; k < FAST_ACCS; ++k) acc[0] = fast_vop(acc[0], acc[k]);
  fast_lanes lanes;
  lanes.v = acc[0];
#pragma unroll
  for (uint j = 0; j < VEC; ++j) a = clr_op(a, lanes.s[j]);
#else
#if FAST_CPU && FAST_STREAMS && FAST_ARG_BLOCK
  {  // UNROLL streams over the run's parts, side by side (more loads in flight than one), each
     // with its own lane-wise extremes, screened block by block as below; what is left after
     // the streams (< UNROLL vectors) folds in order after them.
    const vidx_t q = v < end ? (end - v) / UNROLL : 0;
    if (q > 0) {
      VT best[UNROLL];
      VX at[UNROLL];
#pragma unroll
      for (uint k = 0; k < UNROLL; ++k) {
        best[k] = xv[v + k * q];
        at[k] = (VX)(v + k * q);
      }
      vidx_t i = 1;
      for (; q - i >= FAST_ARG_BLOCK; i += FAST_ARG_BLOCK) {
        MT hit[UNROLL];
#pragma unroll
        for (uint k = 0; k < UNROLL; ++k) hit[k] = (MT)(0);
        for (uint j = 0; j < FAST_ARG_BLOCK; ++j) {
#pragma unroll
          for (uint k = 0; k < UNROLL; ++k) hit[k] |= fast_arg_hit(best[k], xv[v + k * q + i + j]);
        }
        MT any_hit = (MT)(0);
#pragma unroll
        for (uint k = 0; k < UNROLL; ++k) {
#ifdef T_IS_FLOAT
          hit[k] &= ~isnan(best[k]);  // a NaN lane never takes again
#endif
          any_hit |= hit[k];
        }
        if (any(any_hit)) {
#pragma unroll
          for (uint k = 0; k < UNROLL; ++k)
            if (any(hit[k]))
              for (uint j = 0; j < FAST_ARG_BLOCK; ++j)
                fast_arg_step(&best[k], &at[k], xv[v + k * q + i + j], v + k * q + i + j);
        }
      }
      for (; i < q; ++i) {
#pragma unroll
        for (uint k = 0; k < UNROLL; ++k)
          fast_arg_step(&best[k], &at[k], xv[v + k * q + i], v + k * q + i);
      }
#pragma unroll
      for (uint k = 0; k < UNROLL; ++k) a = fast_arg_lanes(a, best[k], at[k], head);
      v += UNROLL * q;
    }
  }
#endif
  if (v < end) {  // the first vector starts every lane; the rest fold in, in index order
    VT best = xv[v];
    VX at = (VX)(v);
    v += STRIDE;
#if FAST_CPU && FAST_ARG_BLOCK
    // Screened blocks: a compare and an OR per vector against the lane-wise extreme, which the
    // block cannot change unless some lane hits (fast_arg_hit); only then is the block folded
    // step by step as below. On data whose extreme settles early, about 1 block in 100 is.
    for (; end - v >= FAST_ARG_BLOCK; v += FAST_ARG_BLOCK) {
      MT hit = (MT)(0);
#pragma unroll
      for (uint k = 0; k < FAST_ARG_BLOCK; ++k) hit |= fast_arg_hit(best, xv[v + k]);
#ifdef T_IS_FLOAT
      hit &= ~isnan(best);  // a NaN lane never takes again
#endif
      if (any(hit)) {
        for (uint k = 0; k < FAST_ARG_BLOCK; ++k) fast_arg_step(&best, &at, xv[v + k], v + k);
      }
    }
#endif
    for (; v < end && end - v > (UNROLL - 1) * STRIDE; v += UNROLL * STRIDE) {
      VT t[UNROLL];
#pragma unroll
      for (uint k = 0; k < UNROLL; ++k) t[k] = xv[v + k * STRIDE];
#pragma unroll
      for (uint k = 0; k < UNROLL; ++k) fast_arg_step(&best, &at, t[k], v + k * STRIDE);
    }
    for (; v < end; v += STRIDE) fast_arg_step(&best, &at, xv[v], v);
    a = fast_arg_lanes(a, best, at, head);
  }
#endif
  for (ulong i = gid; i < head; i += items) a = clr_op(a, clr_load(x, i));
  for (ulong i = body_end + gid; i < n; i += items) a = clr_op(a, clr_load(x, i));

  clr_ticket_reduce(a, s, WG_SIZE, &is_last, partials, ticket, out);
}
