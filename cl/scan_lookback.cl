// scan_lookback.cl: a single-pass scan with decoupled look-back (Merrill & Garland 2016): one
// launch, each element read once and written once (2n moves against reduce-then-scan's 3n).
// Each work-group takes the next tile id from an atomic counter (so it only ever waits on tiles
// whose groups are already running), loads its tile with VEC-wide loads, scans it (per-vector,
// then raking over the work-group), publishes the tile's aggregate (status A; status P at once
// when the tile is tile 0 or holds a segment start), looks back over its predecessors'
// descriptors (a window of LB_WINDOW of them read at once, aggregates combined until an
// inclusive prefix P is found), publishes its own inclusive prefix (P) and stores the tile.
//
// Descriptors cross groups only through 64-bit atomics: each 32-bit word of a value travels in
// one 64-bit word under a tag (epoch << 2 | status), so a reader needs no fence: it accepts a
// value when every word carries the same tag of this run's epoch. Nothing needs clearing between
// runs: an older epoch's descriptor reads as "not published". The tile counter is reset by the
// last group to finish. Every wait is bounded: past LB_LIMIT window reads a group sets
// err[0] = epoch, marks its tile failed (status X, on which later tiles give up at once) and ends
// without storing; the host sees err and redoes the scan another way.
//
// Layout: a tile is ROWS rows of WG_SIZE * VEC consecutive elements; work-item r loads and stores
// vector r of each row (coalesced, VEC elements wide). Loops over ROWS and VEC are unrolled, so
// the per-work-item arrays live in registers. Operand order is kept (left first), so the
// non-commutative segmented operator of clr_scan.h works. Cost per tile: about 3 operations per
// element, 5 barriers, plus 2 barriers per look-back window. Host sets via -D (and clreduce.h's,
// clr_scan.h's macros):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_scan.h"
#include "clr_types.h"
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group; any size the device accepts
#endif
#ifndef VEC
#define VEC 4  // elements per load and store: 1, 2, 4 or 8
#endif
#ifndef ROWS
#define ROWS 4  // vectors per work-item; a tile is WG_SIZE * VEC * ROWS elements
#endif
#ifndef LB_WINDOW
#define LB_WINDOW (WG_SIZE < 32 ? WG_SIZE : 32)  // descriptors read at once; <= WG_SIZE
#endif
#ifndef LB_LIMIT
#define LB_LIMIT (1u << 22)  // window reads before a group gives up (0: always give up)
#endif

#define TILE (WG_SIZE * VEC * ROWS)
#define RAKERS (WG_SIZE < 32 ? WG_SIZE : 32)    // work-items scanning the vector totals serially
#define SPAN ((WG_SIZE + RAKERS - 1) / RAKERS)  // vector totals per raker
#define LB_WORDS (sizeof(acc_t) / 4)            // 32-bit words per value (1 or 2)

#define ST_A 1u  // the tile's aggregate
#define ST_P 2u  // the tile's inclusive prefix
#define ST_X 3u  // the tile gave up: so do its successors

#if VEC > 1
typedef CLR_VEC(T_NAME, VEC) tvec;
typedef CLR_VEC(A_NAME, VEC) avec;
typedef CLR_VEC(uchar, VEC) fvec;
#else
typedef T tvec;
typedef acc_t avec;
typedef uchar fvec;
#endif
typedef union {
  tvec v;
  T s[VEC];
} tvec_u;
typedef union {
  avec v;
  acc_t s[VEC];
} avec_u;
typedef union {
  fvec v;
  uchar s[VEC];
} fvec_u;

// Publishes value v for `tile` under tag (epoch << 2 | status), word by word.
inline void lb_publish(__global ulong* desc, uint tile, uint tag, acc_t v) {
  clr_words u;
  u.a = v;
  volatile __global ulong* p = (volatile __global ulong*)desc + (size_t)tile * LB_WORDS;
#pragma unroll
  for (uint k = 0; k < LB_WORDS; ++k) atom_xchg(p + k, ((ulong)tag << 32) | (ulong)u.w[k]);
}

// Reads tile's descriptor: its status in this epoch (0 while not, or not wholly, published) and,
// when nonzero, its value in *v.
inline uint lb_read(__global ulong* desc, uint tile, uint epoch, acc_t* v) {
  clr_words u;
  volatile __global ulong* p = (volatile __global ulong*)desc + (size_t)tile * LB_WORDS;
  uint tag = 0u, same = 1u;
#pragma unroll
  for (uint k = 0; k < LB_WORDS; ++k) {
    const ulong w = atom_add(p + k, 0ul);
    const uint t = (uint)(w >> 32);
    u.w[k] = (uint)w;
    if (k == 0) tag = t;
    same &= (uint)(t == tag);
  }
  if (!same || (tag >> 2) != epoch) return 0u;
  *v = u.a;
  return tag & 3u;
}

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void scan_lookback(
    __global const T* x, __global const uchar* flags, ulong n, __global acc_t* y,
    __global ulong* desc, __global uint* counters, __global uint* err, uint epoch) {
  __local uint l_tile, l_state, l_next, l_reads;
  __local acc_t l_prefix;
  __local acc_t sv[ROWS][WG_SIZE];  // vector totals, then their exclusive scan within each raker
  __local acc_t rv[ROWS][RAKERS];   // raker totals, then their exclusive scan
  __local acc_t rowp[ROWS + 1];     // exclusive prefix of each row; [ROWS]: the tile's aggregate
  __local acc_t wv[LB_WINDOW];      // a look-back window: values and statuses
  __local uint ws[LB_WINDOW];
#if CLR_SEGMENTED
  __local uchar sf[ROWS][WG_SIZE];
  __local uchar rf[ROWS][RAKERS];
  __local uchar rowpf[ROWS + 1];
#endif
  const uint lid = (uint)get_local_id(0);

  // 1. The tile: the next id from the counter (counters[0]).
  if (lid == 0) l_tile = atomic_inc(counters);
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint tile = l_tile;
  const ulong base = (ulong)tile * TILE;
  const ulong m = min((ulong)TILE, n - base);  // >= 1: there are ceil(n / TILE) groups

  // 2. Load: vector lid of each row; the identity (flag 0) past the end.
  acc_t v[ROWS][VEC];
  uint f[ROWS][VEC];
#pragma unroll
  for (uint j = 0; j < ROWS; ++j) {
    const uint e0 = (j * WG_SIZE + lid) * VEC;
    if (m == TILE) {
      tvec_u t;
      t.v = ((__global const tvec*)(x + base))[j * WG_SIZE + lid];
#pragma unroll
      for (uint k = 0; k < VEC; ++k) v[j][k] = (acc_t)t.s[k];
#if CLR_SEGMENTED
      fvec_u g;
      g.v = ((__global const fvec*)(flags + base))[j * WG_SIZE + lid];
#pragma unroll
      for (uint k = 0; k < VEC; ++k) f[j][k] = g.s[k] != 0;
#endif
    } else {
#pragma unroll
      for (uint k = 0; k < VEC; ++k) {
        const int in = e0 + k < m;
        v[j][k] = in ? (acc_t)x[base + e0 + k] : clr_identity();
#if CLR_SEGMENTED
        f[j][k] = in ? flags[base + e0 + k] != 0 : 0u;
#endif
      }
    }
#if !CLR_SEGMENTED
#pragma unroll
    for (uint k = 0; k < VEC; ++k) f[j][k] = 0u;
#endif
  }

  // 3. Each vector's total (a pair: value since its last segment start, any start).

#pragma unroll
  for (uint j = 0; j < ROWS; ++j) {
    acc_t a = v[j][0];
    uint af = f[j][0];
#pragma unroll
    for (uint k = 1; k < VEC; ++k) {
      a = clr_seg_op(a, v[j][k], f[j][k]);
      af |= f[j][k];
    }
    sv[j][lid] = a;
#if CLR_SEGMENTED
    sf[j][lid] = (uchar)af;
#endif
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // 4. Raking: raker q scans vector totals q*SPAN .. q*SPAN + SPAN - 1 of each row (exclusive,
  //    in place) and leaves its total in rv; then work-item j scans the raker totals of row j
  //    (its total to rowp[j]), and work-item 0 the row totals, which gives the tile's aggregate.
  if (lid < RAKERS) {
    const uint lo = lid * SPAN, hi = min(lo + SPAN, (uint)WG_SIZE);
#pragma unroll
    for (uint j = 0; j < ROWS; ++j) {
      acc_t a = clr_identity();
      uint af = 0u;
      for (uint i = lo; i < hi; ++i) {
        const acc_t e = sv[j][i];
        sv[j][i] = a;
#if CLR_SEGMENTED
        const uint ef = sf[j][i];
        sf[j][i] = (uchar)af;
        a = clr_seg_op(a, e, ef);
        af |= ef;
#else
        a = clr_op(a, e);
#endif
      }
      rv[j][lid] = a;
#if CLR_SEGMENTED
      rf[j][lid] = (uchar)af;
#endif
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint j = lid; j < ROWS; j += WG_SIZE) {
    acc_t a = clr_identity();
    uint af = 0u;
#pragma unroll
    for (uint q = 0; q < RAKERS; ++q) {
      const acc_t e = rv[j][q];
      rv[j][q] = a;
#if CLR_SEGMENTED
      const uint ef = rf[j][q];
      rf[j][q] = (uchar)af;
      a = clr_seg_op(a, e, ef);
      af |= ef;
#else
      a = clr_op(a, e);
#endif
    }
    rowp[j] = a;
#if CLR_SEGMENTED
    rowpf[j] = (uchar)af;
#endif
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    acc_t p = clr_identity();
    uint pf = 0u;
#pragma unroll
    for (uint j = 0; j < ROWS; ++j) {
      const acc_t a = rowp[j];
      rowp[j] = p;
#if CLR_SEGMENTED
      const uint af = rowpf[j];
      rowpf[j] = (uchar)pf;
#else
      const uint af = 0u;
#endif
      p = clr_seg_op(p, a, af);
      pf |= af;
    }
    rowp[ROWS] = p;
#if CLR_SEGMENTED
    rowpf[ROWS] = (uchar)pf;
#endif
    // 5. Publish: the aggregate, or at once the inclusive prefix when nothing before the tile
    //    can change it (tile 0, or a segment start inside: the aggregate is then the value
    //    since that start).
    lb_publish(desc, tile, (epoch << 2) | (tile == 0 || pf ? ST_P : ST_A), p);
    // 6. Look-back (uniform over the group), unless the tile's first element starts a
    //    segment: the prefix is the combination of the aggregates of tiles tile-1, tile-2, ...
    //    down to and including the first inclusive prefix found. Each round reads LB_WINDOW
    //    descriptors at once; work-item 0 combines them nearest first and stops at an
    //    unpublished one (the next round reads again from there), at a P (done) or at an X
    //    (give up). The loop's state lives in local memory, written by work-item 0 between the
    //    barriers and read by all after them (no private value is carried across them).
#if CLR_SEGMENTED
    l_state = tile == 0 || flags[base] != 0;  // 0 looking back, 1 done, 2 gave up
#else
    l_state = tile == 0;
#endif
    l_next = tile;  // the window covers tiles l_next-1, l_next-2, ..., l_next-LB_WINDOW
    l_reads = 0u;
    l_prefix = clr_identity();  // the combination so far
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#if CLR_SEGMENTED
  const uint published_p = tile == 0 || rowpf[ROWS];
#else
  const uint published_p = tile == 0;
#endif
  while (l_state == 0u) {
    if (lid < LB_WINDOW) {
      const uint next = l_next;
      acc_t val = clr_identity();
      uint s = ST_P;  // below tile 0: the identity, final
      if (lid < next) {
        s = lb_read(desc, next - 1 - lid, epoch, &val);
        if (s == 0u) val = clr_identity();
      }
      wv[lid] = val;
      ws[lid] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
      acc_t run = l_prefix;
      uint st = 0u, used = 0u;
      for (uint l = 0; l < LB_WINDOW; ++l) {
        const uint s = ws[l];
        if (s == 0u) break;
        if (s == ST_X) {
          st = 2u;
          break;
        }
        run = clr_op(wv[l], run);
        ++used;
        if (s == ST_P) {
          st = 1u;
          break;
        }
      }
      if (++l_reads > LB_LIMIT) st = 2u;
      l_state = st;
      l_next -= used;
      l_prefix = run;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const uint state = l_state;
  const acc_t prefix = l_prefix;

  if (state == 2u) {
    // 7a. Gave up: say so to the host and to the tiles after this one; store nothing.
    if (lid == 0) {
      if (!published_p) lb_publish(desc, tile, (epoch << 2) | ST_X, clr_identity());
      atomic_xchg(err, epoch);
    }
  } else {
    // 7b. The inclusive prefix, then the tile: each vector's prefix is the tile's prefix, the
    //     rows before it, the rakers before it and the vectors before it within its raker.
    if (lid == 0 && !published_p)
      lb_publish(desc, tile, (epoch << 2) | ST_P, clr_op(prefix, rowp[ROWS]));
    const uint q = lid / SPAN;
#pragma unroll
    for (uint j = 0; j < ROWS; ++j) {
#if CLR_SEGMENTED
      clr_pair pre, b;
      pre.v = prefix;
      pre.f = 0u;
      b.v = rowp[j];
      b.f = rowpf[j];
      pre = clr_pair_op(pre, b);
      b.v = rv[j][q];
      b.f = rf[j][q];
      pre = clr_pair_op(pre, b);
      b.v = sv[j][lid];
      b.f = sf[j][lid];
      pre = clr_pair_op(pre, b);
      acc_t run = pre.v;
#else
      acc_t run = clr_op(clr_op(clr_op(prefix, rowp[j]), rv[j][q]), sv[j][lid]);
#endif
      avec_u o;
#pragma unroll
      for (uint k = 0; k < VEC; ++k) {
        const acc_t before = run;
        run = clr_seg_op(run, v[j][k], f[j][k]);
#if CLR_EXCLUSIVE
        o.s[k] = f[j][k] ? clr_identity() : before;
#else
        o.s[k] = run;
        (void)before;
#endif
      }
      const uint e0 = (j * WG_SIZE + lid) * VEC;
      if (m == TILE) {
        ((__global avec*)(y + base))[j * WG_SIZE + lid] = o.v;
      } else {
#pragma unroll
        for (uint k = 0; k < VEC; ++k)
          if (e0 + k < m) y[base + e0 + k] = o.s[k];
      }
    }
  }

  // 8. The last group to finish resets the tile counter for the next run.
  if (lid == 0 && atomic_inc(counters + 1) == (uint)get_num_groups(0) - 1u) {
    atomic_xchg(counters, 0u);
    atomic_xchg(counters + 1, 0u);
  }
}
