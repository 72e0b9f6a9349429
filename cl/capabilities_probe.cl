// capabilities_probe.cl: the start-up probes behind Context::caps() (host/capabilities.cpp).
// Each probe is a trial build plus a small numeric check on the host; a probe that fails to
// build, to run or to give the right numbers means "no", so the portable path is used.
// probe_tail runs the CLR_TAIL fold that ladder kernels 5-7 use, exactly as they use it. Host
// sets via -D: PROBE (default 0: probe_tail only; 1 adds probe_nv_lanes, NVIDIA inline PTX;
// 2 adds probe_sub_groups; 3 is probe_wg_collectives alone), CLR_TAIL, CLR_TYPE, CLR_OP.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_tail.h"
#ifndef PROBE
#define PROBE 0
#endif

#if PROBE != 3
// For each group g and t < 4: totals[4g + t] = OP over x[g*wg .. g*wg + w_t), w_t from
// {wg, wg - 1, 33, 1}, folded as kernel 5 folds (barriers down to the tail's limit, then the
// tail). Any group size >= 33; s holds one acc_t per work-item.
__kernel void probe_tail(__global const T* x, __global acc_t* totals, __local acc_t* s) {
  __local uint sg;
  const uint lid = (uint)get_local_id(0);
  const uint wg = (uint)get_local_size(0);
  const uint grp = (uint)get_group_id(0);
  for (uint t = 0; t < 4; ++t) {
    const uint w0 = t == 0 ? wg : t == 1 ? wg - 1 : t == 2 ? 33u : 1u;
    s[lid] = lid < w0 ? clr_load(x, (ulong)grp * wg + lid) : clr_identity();
    clr_tail_setup(&sg);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint limit = clr_tail_limit(&sg);
    uint w = w0;
    while (w > limit) {
      const uint h = (w + 1) / 2;
      if (lid + h < w) s[lid] = clr_op(s[lid], s[lid + h]);
      barrier(CLK_LOCAL_MEM_FENCE);
      w = h;
    }
    clr_tail_fold(s, w, &sg, totals + 4 * grp + t);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
#endif

#if PROBE == 1
// lanes[gid] = the gid of the lane ^ 5 partner: gid ^ 5 when local ids 32k..32k+31 form warp k.
__kernel void probe_nv_lanes(__global uint* lanes) {
  const uint gid = (uint)get_global_id(0);
  uint partner;
  asm volatile("shfl.sync.bfly.b32 %0, %1, 5, 31, 0xffffffff;" : "=r"(partner) : "r"(gid));
  lanes[gid] = partner;
}
#elif PROBE == 2
// Six words per work-item: sub-group size, id, local id, count, and sub_group_reduce_add and
// sub_group_scan_inclusive_add of v = 7 * lid + 1.
__kernel void probe_sub_groups(__global uint* info) {
  const uint gid = (uint)get_global_id(0);
  const uint v = 7u * (uint)get_local_id(0) + 1u;
  info[6 * gid + 0] = get_sub_group_size();
  info[6 * gid + 1] = get_sub_group_id();
  info[6 * gid + 2] = get_sub_group_local_id();
  info[6 * gid + 3] = get_num_sub_groups();
  info[6 * gid + 4] = sub_group_reduce_add(v);
  info[6 * gid + 5] = sub_group_scan_inclusive_add(v);
}
#elif PROBE == 3
// Five values per work-item, v = 3 * lid - 50 and w = v * 2^32 (a long with both words set):
// work_group_reduce_add(v), scan_inclusive_add(w), scan_exclusive_add(w), reduce_max(w),
// broadcast(v, 5).
__kernel void probe_wg_collectives(__global long* out) {
  const uint gid = (uint)get_global_id(0);
  const int v = 3 * (int)get_local_id(0) - 50;
  const long w = (long)v * 4294967296L + 1;
  out[5 * gid + 0] = work_group_reduce_add(v);
  out[5 * gid + 1] = work_group_scan_inclusive_add(w);
  out[5 * gid + 2] = work_group_scan_exclusive_add(w);
  out[5 * gid + 3] = work_group_reduce_max(w);
  out[5 * gid + 4] = work_group_broadcast(v, (size_t)5);
}
#endif
