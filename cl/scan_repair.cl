// scan_repair.cl: the on-device redo of a look-back scan (scan_lookback.cl) for plans that only
// enqueue and never read the look-back's error flag on the host. Enqueued right after the
// look-back on the same in-order queue, with the same data arguments, one work-group: it reads
// err[0], and unless a group of that run gave up (err[0] = the run's epoch) it returns at once.
// Else it scans the whole range again, with no waits: each work-item folds a contiguous chunk
// into a (value, flag) pair, work-item 0 scans the chunk pairs in local memory from the
// carry-in (the identity without one), and each work-item scans its chunk again from its
// prefix and stores it. The results are the look-back's: the same operator, left operand first
// (the segmented operator of clr_scan.h is not commutative), exclusive elements take the
// identity at a segment start, and the carry-in is the running value before element 0 (dropped
// at the first segment start). Host sets via -D (and clreduce.h's, clr_scan.h's macros):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_scan.h"
#ifndef WG_SIZE
#define WG_SIZE 64  // work-items of the one group; any size the device accepts
#endif
// Whether element i starts a segment (never, unsegmented).
#if CLR_SEGMENTED
#define REPAIR_FLAG(i) (uint)(flags[i] != 0)
#else
#define REPAIR_FLAG(i) 0u
#endif

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void scan_repair(
    __global const T* x, __global const uchar* flags, ulong n, __global acc_t* y, acc_t carry,
    uint use_carry, __global const uint* err, uint epoch) {
  __local acc_t tv[WG_SIZE];  // each chunk's value since its last segment start, then its prefix
#if CLR_SEGMENTED
  __local uchar tf[WG_SIZE];  // whether the chunk holds a segment start
#endif
  // The look-back ended before this launch began (in-order queue): its flag is settled. The
  // same value on every work-item, so the group returns whole.
  if (err[0] != epoch) return;
  const uint lid = (uint)get_local_id(0);
  const ulong per = (n + WG_SIZE - 1) / WG_SIZE;
  const ulong b = min(n, (ulong)lid * per), e = min(n, b + per);

  // 1. Each chunk's pair.
  acc_t a = clr_identity();
  uint af = 0u;
  for (ulong i = b; i < e; ++i) {
    const uint f = REPAIR_FLAG(i);
    a = clr_seg_op(a, (acc_t)x[i], f);
    af |= f;
  }
  tv[lid] = a;
#if CLR_SEGMENTED
  tf[lid] = (uchar)af;
#endif
  barrier(CLK_LOCAL_MEM_FENCE);

  // 2. Each chunk's prefix: the carry-in, then the chunks before it, in order.
  if (lid == 0) {
    acc_t run = use_carry ? carry : clr_identity();
    for (uint k = 0; k < WG_SIZE; ++k) {
      const acc_t t = tv[k];
#if CLR_SEGMENTED
      const uint tk = tf[k];
#else
      const uint tk = 0u;
#endif
      tv[k] = run;
      run = clr_seg_op(run, t, tk);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // 3. The chunk again, from its prefix.
  acc_t run = tv[lid];
  for (ulong i = b; i < e; ++i) {
    const uint f = REPAIR_FLAG(i);
    const acc_t before = run;
    run = clr_seg_op(run, (acc_t)x[i], f);
#if CLR_EXCLUSIVE
    y[i] = f ? clr_identity() : before;
#else
    y[i] = run;
    (void)before;
#endif
  }
}
