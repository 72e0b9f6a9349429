// reduce_butterfly.cl: the seeds' XOR (butterfly) all-reduce. Each work-item folds a
// grid-strided slice; then log2(WG_SIZE) butterfly steps, v = OP(v, v of work-item lid ^ b) for
// b = WG_SIZE/2 ... 1, exchange values through a double-buffered local array (one barrier per
// step; a buffer is rewritten only after the next step's barrier, so no step races another).
// Every work-item ends holding its group's total (OP is commutative, so all copies agree). With
// one group that is the answer; otherwise reduce_butterfly_all, on the same grid, has every group
// fold all the partials in the same order and butterfly again: every work-item of the grid ends
// holding the total. 1-2 launches; n + groups^2 loads. Host sets via -D:
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group: a power of two (lid ^ b must stay in the group)
#endif
// Needs an associative and commutative OP.
#if WG_SIZE < 1 || (WG_SIZE & (WG_SIZE - 1)) != 0
#error "WG_SIZE must be a power of two"
#endif

// Returns the group's total in every work-item; buf holds 2 * WG_SIZE accumulators.
inline acc_t butterfly(acc_t v, __local acc_t* buf) {
  const uint lid = (uint)get_local_id(0);
  uint side = 0;  // which half of buf this step writes
  for (uint b = WG_SIZE / 2; b > 0; b /= 2) {
    buf[side + lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    v = clr_op(v, buf[side + (lid ^ b)]);
    side ^= WG_SIZE;
  }
  return v;
}

// Launch 1: partials[g] = group g's total, or, with one group, out[0] = the total. With
// keep_copies, every work-item of a one-group grid also writes its copy to copies[gid].
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void reduce_butterfly(__global const T* x, ulong n, __global acc_t* partials,
                      __global acc_t* out, __global acc_t* copies, uint keep_copies) {
  __local acc_t buf[2 * WG_SIZE];
  const ulong stride = (ulong)get_num_groups(0) * WG_SIZE;
  acc_t v = clr_identity();
  for (ulong i = get_global_id(0); i < n; i += stride) v = clr_op(v, clr_load(x, i));
  v = butterfly(v, buf);
  if (get_num_groups(0) == 1) {
    if (get_local_id(0) == 0) out[0] = v;
    if (keep_copies) copies[get_global_id(0)] = v;
  } else if (get_local_id(0) == 0) {
    partials[get_group_id(0)] = v;
  }
}

// Launch 2 (more than one group): every group folds partials[0..parts) in index order per
// work-item, then butterflies; group 0's work-item 0 writes out[0], every work-item its copy.
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void reduce_butterfly_all(__global const acc_t* partials, uint parts, __global acc_t* out,
                          __global acc_t* copies, uint keep_copies) {
  __local acc_t buf[2 * WG_SIZE];
  const uint lid = (uint)get_local_id(0);
  acc_t v = clr_identity();
  for (uint g = lid; g < parts; g += WG_SIZE) v = clr_op(v, partials[g]);
  v = butterfly(v, buf);
  if (get_group_id(0) == 0 && lid == 0) out[0] = v;
  if (keep_copies) copies[get_global_id(0)] = v;
}
