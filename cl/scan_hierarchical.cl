// scan_hierarchical.cl: the lecture's warp -> block -> grid scan. A tile of WG_SIZE * ITEMS
// elements is loaded coalesced into local memory; each work-item scans its ITEMS consecutive
// elements sequentially (the cost-optimal block of the lecture); the work-item totals are scanned
// within lane groups (the lecture's warps), the lane-group totals within the work-group (the
// block), and each work-item adds its prefix back to its elements. The host scans the tile
// totals by the same kernel and adds them back (scan_add.cl): the grid level.
// Lane groups are sub-groups where the device has them (CLR_SUBGROUPS=1, sub_group_barrier);
// otherwise fixed groups of CLR_LANES work-items synchronised by work-group barriers. No step
// relies on work-items running in lock-step. Operand order is kept (left first), so the
// non-commutative segmented operator of clr_scan.h works. Cost per tile: about 2 * WG_SIZE *
// ITEMS operations and 2 * (log2(lane width) + log2(lane groups)) + 4 barriers.
// Host sets via -D (and clreduce.h's, clr_scan.h's macros):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_scan.h"
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group; any size the device accepts
#endif
#ifndef ITEMS
#define ITEMS 4  // consecutive elements each work-item scans sequentially; >= 1
#endif
#ifndef CLR_LANES
#define CLR_LANES 32  // lane-group width on the barrier path (the lecture's warp); >= 1
#endif
#ifndef CLR_SUBGROUPS
#define CLR_SUBGROUPS 0  // 1: lane groups are the device's sub-groups (needs cl_khr_subgroups)
#endif

#define TILE (WG_SIZE * ITEMS)
// Work-item r reads elements r*ITEMS .. r*ITEMS + ITEMS - 1: one padding slot per ITEMS elements
// makes that stride odd, so the reads spread over the local memory banks.
#if ITEMS > 1
#define HP(i) ((i) + (i) / ITEMS)
#define TILE_SLOTS (TILE + WG_SIZE)
#else
#define HP(i) (i)
#define TILE_SLOTS TILE
#endif

#if CLR_SUBGROUPS
#if __OPENCL_C_VERSION__ < 300
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
// Sub-group i holds work-items of rank i*max_size .. (all but the last sub-group are full).
#define LANE_ID() ((uint)get_sub_group_local_id())
#define LANE_GROUP() ((uint)get_sub_group_id())
#define LANE_WIDTH() ((uint)get_max_sub_group_size())
#define LANE_GROUPS() ((uint)get_num_sub_groups())
#define LANE_BARRIER() sub_group_barrier(CLK_LOCAL_MEM_FENCE)
#else
#define LANE_ID() (lid % CLR_LANES)
#define LANE_GROUP() (lid / CLR_LANES)
#define LANE_WIDTH() ((uint)CLR_LANES)
#define LANE_GROUPS() ((uint)((WG_SIZE + CLR_LANES - 1) / CLR_LANES))
#define LANE_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#endif

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void scan_hierarchical(__global const T* x, __global const uchar* flags, ulong n,
                       __global acc_t* y, __global acc_t* totals, __global uchar* tile_flags,
                       __global uint* heads) {
  __local acc_t s[TILE_SLOTS];  // the tile
  __local acc_t w[WG_SIZE];     // work-item totals, then their scan within lane groups
  __local acc_t wt[WG_SIZE];    // lane-group totals, then their scan (at most WG_SIZE groups)
#if CLR_SEGMENTED
  __local uchar sf[TILE];
  __local uchar wf[WG_SIZE];
  __local uchar wtf[WG_SIZE];
#endif
  const uint lid = (uint)get_local_id(0);
  const uint lane = LANE_ID(), group = LANE_GROUP(), groups = LANE_GROUPS();
  const uint r = group * LANE_WIDTH() + lane;  // rank: lane groups hold consecutive ranks
  const ulong base = (ulong)get_group_id(0) * TILE;
  const uint m = (uint)min((ulong)TILE, n - base);  // elements in this tile, >= 1

  // 1. Coalesced load; the identity (flag 0) past the end.
  for (uint k = lid; k < TILE; k += WG_SIZE) {
    s[HP(k)] = k < m ? clr_load(x, base + k) : clr_identity();
#if CLR_SEGMENTED
    sf[k] = (uchar)(k < m && flags[base + k] != 0);
#endif
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // 2. Work-item r scans its ITEMS elements in place; its total goes to w[r].
  acc_t a = clr_identity();
  uint af = 0;
  for (uint j = 0; j < ITEMS; ++j) {
    const uint k = r * ITEMS + j;
#if CLR_SEGMENTED
    a = clr_seg_op(a, s[HP(k)], sf[k]);
    af |= sf[k];
    sf[k] = (uchar)af;
#else
    a = clr_op(a, s[HP(k)]);
#endif
    s[HP(k)] = a;
  }
  w[r] = a;
#if CLR_SEGMENTED
  wf[r] = (uchar)af;
#endif
  LANE_BARRIER();

  // 3. Lane-group level: Hillis-Steele in place, every step read, fence, write, fence.
  for (uint off = 1; off < LANE_WIDTH(); off <<= 1) {
    const int take = lane >= off;
    acc_t left = a;
    uint lf = 0;
    if (take) {
      left = w[r - off];
#if CLR_SEGMENTED
      lf = wf[r - off];
#endif
    }
    LANE_BARRIER();
    if (take) {
      a = clr_seg_op(left, a, af);
      af |= lf;
      w[r] = a;
#if CLR_SEGMENTED
      wf[r] = (uchar)af;
#endif
    }
    LANE_BARRIER();
  }
  if (lane == LANE_WIDTH() - 1 || r == WG_SIZE - 1) {
    wt[group] = a;
#if CLR_SEGMENTED
    wtf[group] = (uchar)af;
#endif
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // 4. Block level: the lane-group totals, Hillis-Steele in place with work-group barriers.
  for (uint off = 1; off < groups; off <<= 1) {
    const int take = lid < groups && lid >= off;
    acc_t left = a, v = a;
    uint lf = 0, vf = 0;
    if (take) {
      left = wt[lid - off];
      v = wt[lid];
#if CLR_SEGMENTED
      lf = wtf[lid - off];
      vf = wtf[lid];
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (take) {
      wt[lid] = clr_seg_op(left, v, vf);
#if CLR_SEGMENTED
      wtf[lid] = (uchar)(vf | lf);
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  // 5. Work-item r's prefix over ranks 0..r-1 (lane groups before its own, then the lanes
  //    before it), applied to its elements.
  acc_t p = clr_identity();
  uint pf = 0;
  if (group > 0) {
    p = wt[group - 1];
#if CLR_SEGMENTED
    pf = wtf[group - 1];
#endif
  }
  if (lane > 0) {
#if CLR_SEGMENTED
    p = clr_seg_op(p, w[r - 1], wf[r - 1]);
    pf |= wf[r - 1];
#else
    p = clr_op(p, w[r - 1]);
#endif
  }
  if (group > 0 || lane > 0) {
    for (uint j = 0; j < ITEMS; ++j) {
      const uint k = r * ITEMS + j;
#if CLR_SEGMENTED
      s[HP(k)] = clr_seg_op(p, s[HP(k)], sf[k]);
      sf[k] |= (uchar)pf;
#else
      s[HP(k)] = clr_op(p, s[HP(k)]);
#endif
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // 6. Coalesced store.
  for (uint k = lid; k < m; k += WG_SIZE) {
    const acc_t incl = s[HP(k)];
    const acc_t excl = k ? s[HP(k - 1)] : clr_identity();
#if CLR_SEGMENTED
    const uint f = sf[k], ef = k ? sf[k - 1] : 0u, own = flags[base + k] != 0;
#else
    const uint f = 0u, ef = 0u, own = 0u;
#endif
    clr_scan_store(base, k, m, excl, ef, incl, f, own, y, totals, tile_flags, heads);
  }
}
