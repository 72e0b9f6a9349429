// reduce_topdown.cl: one launch reduces any n with any number of work-groups. Each work-item
// folds a grid-strided slice, each group folds its work-items in local memory and writes one
// partial; the last group to finish (an atomic ticket) folds the partials in index order and
// resets the ticket. This replaces the seeds' monokernel, whose barrier(CLK_GLOBAL_MEM_FENCE)
// only synchronises one work-group. Needs an associative and commutative OP. Host sets via -D:
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group; any size the device accepts
#endif

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void reduce_topdown(__global const T* x, ulong n, __global acc_t* partials,
                    __global volatile uint* ticket, __global acc_t* out) {
  __local acc_t s[WG_SIZE];
  __local int is_last;
  const uint lid = (uint)get_local_id(0);
  const uint groups = (uint)get_num_groups(0);
  const ulong stride = (ulong)groups * WG_SIZE;

  acc_t a = clr_identity();
  for (ulong i = get_global_id(0); i < n; i += stride) a = clr_op(a, clr_load(x, i));
  s[lid] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  clr_local_fold(s, WG_SIZE);

  if (lid == 0) {
    clr_publish(partials + get_group_id(0), s[0]);
    mem_fence(CLK_GLOBAL_MEM_FENCE);  // the partial is visible before the ticket is taken
    is_last = atomic_inc(ticket) == groups - 1;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (!is_last) return;  // uniform across the group

  mem_fence(CLK_GLOBAL_MEM_FENCE);
  a = clr_identity();
  for (uint g = lid; g < groups; g += WG_SIZE) a = clr_op(a, clr_collect(partials + g));
  s[lid] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  clr_local_fold(s, WG_SIZE);
  if (lid == 0) {
    out[0] = s[0];
    atomic_xchg(ticket, 0u);  // ready for the next launch
  }
}
