// scan_lookback.cl: a single-pass scan with decoupled look-back (Merrill & Garland 2016): one
// launch, each element read once and written once (2n moves against reduce-then-scan's 3n).
// Each work-group takes the next tile id from an atomic counter (so it only ever waits on tiles
// whose groups are already running; LB_GROUP_IDS, on NVIDIA, whose groups start in id order: its
// group id), loads its tile with VEC-wide loads, scans it, publishes the
// tile's aggregate (status A; status P at once when the tile is tile 0 or holds a segment start),
// looks back over its predecessors' descriptors (LANES of them read at once, aggregates combined
// until an inclusive prefix P is found), publishes its own inclusive prefix (P) and stores the
// tile.
//
// Descriptors cross groups only through 64-bit atomics: each 32-bit word of a value travels in
// one 64-bit word under a tag (epoch << 2 | status), so a reader needs no fence: it accepts a
// value when every word carries the same tag of this run's epoch. Nothing needs clearing between
// runs: an older epoch's descriptor reads as "not published". The tile counter is reset by the
// last group to finish. LB_RELAXED (NVIDIA): descriptors are read by volatile loads
// (clr_lookback.h). No group waits without bound (the decoupled fallback of Smith, Levien &
// Owens 2025): once the look-back has read an unpublished predecessor's descriptor LB_LIMIT
// rounds in a row without moving, warp 0 folds that tile's input itself and goes on, so a group
// never depends on another group being scheduled, and every run stores every tile.
//
// Layout: a tile is ROWS rows of WG_SIZE * VEC consecutive elements; work-item r loads and stores
// vector r of each row (coalesced, VEC elements wide). The work-items form "warps" of LANES:
//   LB_SHFL 1  LANES = 32, NVIDIA's warps, exchanging registers through inline PTX (shfl.sync;
//              the host sets it only where Context::caps() found shfl.sync working, the group size
//              a multiple of 32, and checks the kernel's numbers at start-up);
//   LB_SHFL 0  LANES = 1, portable: each work-item is its own warp.
// Per tile: each work-item folds each of its vectors; each warp scans its lanes' vector totals
// row by row in registers; the warps' row totals (ROWS * WG_SIZE / LANES of them) go to local
// memory; warp 0 scans them (a few per lane, then across its lanes), publishes, looks back with
// one descriptor per lane and leaves each warp's row prefix in local memory; each work-item then
// scans its vectors from its prefix and stores them. Three barriers per tile, none in the
// look-back. Loops over ROWS and VEC are unrolled, so the per-work-item arrays live in registers.
// Operand order is kept (left first), so the non-commutative segmented operator of clr_scan.h
// works. Host sets via -D (and clreduce.h's, clr_scan.h's macros):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_scan.h"
#include "clr_types.h"
#include "clr_lookback.h"
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group; with LB_SHFL a multiple of 32
#endif
#ifndef VEC
#define VEC 4  // elements per load and store: 1, 2, 4 or 8
#endif
#ifndef ROWS
#define ROWS 4  // vectors per work-item; a tile is WG_SIZE * VEC * ROWS elements
#endif
#ifndef LB_LIMIT
// Look-back rounds without progress on an unpublished predecessor before the group folds that
// tile itself. 0, the test setting: at once, and the LB_NEAR tiles just before each tile are
// folded whatever their descriptors say (so folds run where groups finish in order).
#define LB_LIMIT (1u << 20)
#endif
#define LB_NEAR 3u
#ifndef LB_SHFL
#define LB_SHFL 0
#endif
#ifndef LB_SPAN
#define LB_SPAN 1  // descriptors each lane reads per look-back round
#endif
#ifndef LB_GROUP_IDS
#define LB_GROUP_IDS 0  // tile = group id (NVIDIA: groups start in id order); else a counter
#endif

#if LB_SHFL
#define LANES 32u
#else
#define LANES 1u
#endif
#if WG_SIZE % LANES
#error "scan_lookback.cl: WG_SIZE must be a multiple of the warp width"
#endif
#define TILE (WG_SIZE * VEC * ROWS)
#define WARPS (WG_SIZE / LANES)                // warps per group
#define WTOT (ROWS * WARPS)                    // warp row totals per tile
#define WSPAN ((WTOT + LANES - 1) / LANES)     // of them per lane of warp 0

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

// ---- warp exchanges: all lanes of a warp call them together (with LANES 1, no-ops) ----

#if LB_SHFL
// x of lane (lane - d), or x itself where lane < d.
inline uint lb_up_u32(uint x, uint d) {
  uint r;
  asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(r) : "r"(x), "r"(d));
  return r;
}
// x of lane (lane + d), or x itself where lane + d > 31.
inline uint lb_down_u32(uint x, uint d) {
  uint r;
  asm volatile("shfl.sync.down.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(r) : "r"(x), "r"(d));
  return r;
}
// x of lane src.
inline uint lb_idx_u32(uint x, uint src) {
  uint r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(r) : "r"(x), "r"(src));
  return r;
}
// x of lane (lane ^ d).
inline uint lb_xor_u32(uint x, uint d) {
  uint r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(r) : "r"(x), "r"(d));
  return r;
}
inline acc_t lb_up(acc_t v, uint d) {
  clr_words u;
  u.a = v;
#pragma unroll
  for (uint k = 0; k < LB_WORDS; ++k) u.w[k] = lb_up_u32(u.w[k], d);
  return u.a;
}
inline acc_t lb_down(acc_t v, uint d) {
  clr_words u;
  u.a = v;
#pragma unroll
  for (uint k = 0; k < LB_WORDS; ++k) u.w[k] = lb_down_u32(u.w[k], d);
  return u.a;
}
inline acc_t lb_idx(acc_t v, uint src) {
  clr_words u;
  u.a = v;
#pragma unroll
  for (uint k = 0; k < LB_WORDS; ++k) u.w[k] = lb_idx_u32(u.w[k], src);
  return u.a;
}
#endif

// Inclusive scan of the pairs (v, f) over the warp's lanes, in lane order (clr_scan.h's
// operator; f is 0 and the plain operator is used when not segmented).
inline void lb_warp_scan(acc_t* v, uint* f, uint lane) {
#if LB_SHFL
#pragma unroll
  for (uint d = 1; d < LANES; d <<= 1) {
    const acc_t u = lb_up(*v, d);
#if CLR_SEGMENTED
    const uint uf = lb_up_u32(*f, d);
    if (lane >= d) {
      *v = clr_seg_op(u, *v, *f);
      *f |= uf;
    }
#else
    if (lane >= d) *v = clr_op(u, *v);
#endif
  }
#else
  (void)v;
  (void)f;
  (void)lane;
#endif
}

// The pair of the lane before (the identity pair on lane 0), from each lane's inclusive pair.
inline void lb_warp_shift(acc_t* v, uint* f, uint lane) {
#if LB_SHFL
  const acc_t u = lb_up(*v, 1u);
  *v = lane ? u : clr_identity();
#if CLR_SEGMENTED
  const uint uf = lb_up_u32(*f, 1u);
  *f = lane ? uf : 0u;
#endif
#else
  (void)lane;
  *v = clr_identity();
  *f = 0u;
#endif
}

// The fold of the lanes' values in order from the highest lane to lane 0 (lane l + 1 on the left
// of lane l), returned on lane 0.
inline acc_t lb_warp_fold_down(acc_t v) {
#if LB_SHFL
#pragma unroll
  for (uint d = 1; d < LANES; d <<= 1) v = clr_op(lb_down(v, d), v);
#endif
  return v;
}

// The smallest x over the warp, on every lane.
inline uint lb_warp_min(uint x) {
#if LB_SHFL
#pragma unroll
  for (uint d = 1; d < LANES; d <<= 1) x = min(x, lb_xor_u32(x, d));
#endif
  return x;
}

inline acc_t lb_bcast(acc_t v, uint src) {
#if LB_SHFL
  return lb_idx(v, src);
#else
  (void)src;
  return v;
#endif
}

inline uint lb_bcast_u32(uint x, uint src) {
#if LB_SHFL
  return lb_idx_u32(x, src);
#else
  (void)src;
  return x;
#endif
}

// The decoupled fallback: the pair (value since its last segment start, any start) of whole
// tile t, folded from x by the warp, on every lane. Lane l folds the tile's elements
// [l * TILE / LANES, (l + 1) * TILE / LANES) in order, flags read as the main load reads them;
// the lanes' pairs are then combined in lane order. For a tile whose descriptor is not
// published: the same value as its aggregate, whatever its group has done so far.
inline acc_t lb_fold_tile(__global const T* x, __global const uchar* flags, uint t, uint lane,
                          uint* any_start) {
  const ulong b = (ulong)t * TILE + (ulong)lane * (TILE / LANES);
  acc_t a = clr_identity();
  uint af = 0u;
  for (uint i = 0; i < TILE / LANES; ++i) {
#if CLR_SEGMENTED
    const uint fi = flags[b + i] != 0;
#else
    const uint fi = 0u;
#endif
    a = clr_seg_op(a, (acc_t)x[b + i], fi);
    af |= fi;
  }
#if !CLR_SEGMENTED
  (void)flags;
#endif
  lb_warp_scan(&a, &af, lane);
  *any_start = lb_bcast_u32(af, LANES - 1);
  return lb_bcast(a, LANES - 1);
}

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void scan_lookback(
    __global const T* x, __global const uchar* flags, ulong n, __global acc_t* y, acc_t carry,
    uint use_carry, __global ulong* desc, __global uint* counters, uint epoch) {
  __local uint l_tile;
  __local acc_t wt[WTOT];  // warp row totals (row-major), then each one's prefix in the scan
#if CLR_SEGMENTED
  __local uchar wf[WTOT];
#endif
  const uint lid = (uint)get_local_id(0);
  const uint lane = lid % LANES, warp = lid / LANES;

  // 1. The tile: the next id from the counter (counters[0]); LB_GROUP_IDS (NVIDIA, whose groups
  //    start in id order): the group's own id, with no counter to reset.
#if LB_GROUP_IDS
  const uint tile = (uint)get_group_id(0);
  (void)l_tile;
#else
  if (lid == 0) l_tile = atomic_inc(counters);
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint tile = l_tile;
#endif
  const ulong base = (ulong)tile * TILE;
  const ulong m = min((ulong)TILE, n - base);  // >= 1: there are ceil(n / TILE) groups
  // Whole vectors where the tile is whole and x, y (and flags) start at multiples of their
  // vectors' sizes, as a buffer of their own does; a range may start anywhere in a buffer (a
  // chunk of an array used in place): then element by element, as a partial tile. A tile's
  // bytes are a multiple of each vector's size, so the arrays' starts decide for every tile.
  int whole = m == TILE && (ulong)x % sizeof(tvec) == 0 && (ulong)y % sizeof(avec) == 0;
#if CLR_SEGMENTED
  whole = whole && (ulong)flags % sizeof(fvec) == 0;
#endif

  // 2. Load: vector lid of each row; the identity (flag 0) past the end.
  acc_t v[ROWS][VEC];
  uint f[ROWS][VEC];
#pragma unroll
  for (uint j = 0; j < ROWS; ++j) {
    const uint e0 = (j * WG_SIZE + lid) * VEC;
    if (whole) {
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

  // 3. Each vector's total (a pair: value since its last segment start, any start), scanned
  //    over the warp row by row: ex[j] is the pair of the warp's vectors before this one in row
  //    j, and the warp's last lane leaves the row's total in wt.
  acc_t ex[ROWS];
  uint exf[ROWS];
#pragma unroll
  for (uint j = 0; j < ROWS; ++j) {
    acc_t a = v[j][0];
    uint af = f[j][0];
#pragma unroll
    for (uint k = 1; k < VEC; ++k) {
      a = clr_seg_op(a, v[j][k], f[j][k]);
      af |= f[j][k];
    }
    lb_warp_scan(&a, &af, lane);
    if (lane == LANES - 1) {
      wt[j * WARPS + warp] = a;
#if CLR_SEGMENTED
      wf[j * WARPS + warp] = (uchar)af;
#endif
    }
    lb_warp_shift(&a, &af, lane);
    ex[j] = a;
    exf[j] = af;
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // 4. Warp 0: scans the warp row totals (lane l takes WSPAN consecutive ones, then a scan over
  //    the lanes), publishes the aggregate, looks back, publishes the inclusive prefix and
  //    leaves in wt each total's prefix: the tile's prefix combined with the totals before it.
  if (warp == 0) {
    const uint lo = lane * WSPAN, hi = min(lo + WSPAN, (uint)WTOT);
    acc_t a = clr_identity();
    uint af = 0u;
    for (uint i = lo; i < hi; ++i) {
#if CLR_SEGMENTED
      const uint ef = wf[i];
#else
      const uint ef = 0u;
#endif
      a = clr_seg_op(a, wt[i], ef);
      af |= ef;
    }
    lb_warp_scan(&a, &af, lane);
    const acc_t agg = lb_bcast(a, LANES - 1);  // the tile's aggregate and flag, on every lane
    const uint aggf = lb_bcast_u32(af, LANES - 1);
    lb_warp_shift(&a, &af, lane);  // the pair before this lane's first total

    // 5. Publish: the aggregate, or at once the inclusive prefix when nothing before the tile
    //    can change it (tile 0, or a segment start inside: the aggregate is then the value
    //    since that start).
    //    A carry-in (use_carry: the running value from before the range) is tile 0's prefix.
    const uint published_p = tile == 0 || aggf;
    const acc_t published =
        tile == 0 && use_carry && !aggf ? clr_op(carry, agg) : agg;
    if (lane == 0)
      lb_publish(desc, tile, (epoch << 2) | (published_p ? ST_P : ST_A), published);

    // 6. Look-back, unless the tile's first element starts a segment: the prefix is the
    //    combination of the aggregates of tiles tile-1, tile-2, ... down to and including the
    //    first inclusive prefix found. Lane l reads tile next-1-l; the lanes before the first
    //    one not holding an aggregate are combined (that one too when it holds a P), and the
    //    window moves past them. An unpublished descriptor is read again, up to LB_LIMIT rounds
    //    without the window moving; then warp 0 folds that tile from x (lb_fold_tile) and takes
    //    the result as the descriptor it would have read: an aggregate (the window moves past
    //    it), or an inclusive prefix where the tile holds a segment start or is tile 0 (with
    //    the carry-in, as tile 0 publishes it), which ends the look-back.
#if CLR_SEGMENTED
    uint state = tile == 0 || flags[base] != 0;  // 0 looking back, 1 done
#else
    uint state = tile == 0;
#endif
    //    With LB_SPAN > 1 each lane reads LB_SPAN descriptors a round, position j * LANES + lane
    //    (tile next-1-that) for j < LB_SPAN, so each load instruction reads LANES neighbouring
    //    descriptors (a few cache lines) and a window covers LANES * LB_SPAN tiles per round
    //    trip. A lane folds its positions, then the warp folds the lanes: the aggregates are
    //    combined in another order than left to right, which the operators of unsegmented
    //    tiles allow (a segment start makes a descriptor an inclusive prefix, so the
    //    look-back never combines the segmented operator).
    uint next = tile, waits = 0u;
    // On every lane; tile 0's is the carry-in (dropped at a segment start like any prefix).
    acc_t prefix = tile == 0 && use_carry ? carry : clr_identity();
    // Uniform over the warp: the loop's exit, and every branch around a warp exchange (the
    // fold's included), test values that are the same on every lane.
    while (state == 0u) {
      acc_t vals[LB_SPAN];
      uint ss[LB_SPAN];
      // Every load of the round first, then the decoding (past tile 0: the tile's own
      // descriptor, read and ignored).
      ulong wv[LB_SPAN][LB_WORDS];
#pragma unroll
      for (uint j = 0; j < LB_SPAN; ++j) {
        const uint at = j * LANES + lane;
        lb_load_words(desc, at < next ? next - 1u - at : tile, wv[j]);
      }
#pragma unroll
      for (uint j = 0; j < LB_SPAN; ++j) {
        const uint at = j * LANES + lane;
        vals[j] = clr_identity();
        ss[j] = ST_P;  // below tile 0: the identity, final
        if (at < next) {
#if LB_LIMIT == 0
          ss[j] = 0u;  // the test setting: the tiles just before this one read as unpublished
          if (tile - (next - 1 - at) > LB_NEAR)
#endif
            ss[j] = lb_decode(wv[j], epoch, &vals[j]);
          if (ss[j] == 0u) vals[j] = clr_identity();
        }
      }
      // This lane's first position not holding an aggregate (LANES * LB_SPAN: none).
      uint mine = LANES * LB_SPAN;
#pragma unroll
      for (uint j = LB_SPAN; j-- > 0;)
        if (ss[j] != ST_A) mine = j * LANES + lane;
      const uint first = lb_warp_min(mine);
      uint sf = ST_A;
      if (first < LANES * LB_SPAN) {
        // The status at position first, from the lane that holds it.
        uint s_first = 0u;
#pragma unroll
        for (uint j = 0; j < LB_SPAN; ++j)
          if (j * LANES + lane == first) s_first = ss[j];
        sf = lb_bcast_u32(s_first, first % LANES);
      }
      const uint used = first + (sf == ST_P ? 1u : 0u);
      // The lane's positions below `used`, the earlier tile (higher position) on the left.
      acc_t val = clr_identity();
#pragma unroll
      for (uint j = 0; j < LB_SPAN; ++j)
        if (j * LANES + lane < used) val = clr_op(vals[j], val);
      const acc_t run = lb_warp_fold_down(val);
      prefix = clr_op(lb_bcast(run, 0u), prefix);
      next -= used;
      state = sf == ST_P;
      if (used) waits = 0u;
      if (sf == 0u && ++waits > LB_LIMIT) {
        // The fallback: tile next-1, now at position 0, is still unpublished.
        uint ff;
        const acc_t ft = lb_fold_tile(x, flags, next - 1u, lane, &ff);
        if (ff || next == 1u) {
          prefix = clr_op(next == 1u && use_carry && !ff ? clr_op(carry, ft) : ft, prefix);
          state = 1u;
        } else {
          prefix = clr_op(ft, prefix);
          --next;
        }
        waits = 0u;
      }
    }

    if (lane == 0 && !published_p)
      lb_publish(desc, tile, (epoch << 2) | ST_P, clr_op(prefix, agg));
    // Each total's prefix: the tile's prefix, then the pairs before it.
    for (uint i = lo; i < hi; ++i) {
#if CLR_SEGMENTED
      const uint ef = wf[i];
#else
      const uint ef = 0u;
#endif
      const acc_t e = wt[i];
      wt[i] = af ? a : clr_op(prefix, a);
      a = clr_seg_op(a, e, ef);
      af |= ef;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // 7. The tile: each vector's prefix is its warp's row prefix, then the warp's vectors before
  //    it in the row; then its elements in order.
#pragma unroll
  for (uint j = 0; j < ROWS; ++j) {
    acc_t run = clr_seg_op(wt[j * WARPS + warp], ex[j], exf[j]);
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
    if (whole) {
      ((__global avec*)(y + base))[j * WG_SIZE + lid] = o.v;
    } else {
#pragma unroll
      for (uint k = 0; k < VEC; ++k)
        if (e0 + k < m) y[base + e0 + k] = o.s[k];
    }
  }

  // 8. The last group to finish resets the tile counter for the next run.
#if LB_GROUP_IDS
  (void)counters;
#else
  if (lid == 0 && atomic_inc(counters + 1) == (uint)get_num_groups(0) - 1u) {
    atomic_xchg(counters, 0u);
    atomic_xchg(counters + 1, 0u);
  }
#endif
}
