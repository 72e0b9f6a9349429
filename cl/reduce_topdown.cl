// reduce_topdown.cl: one launch reduces any n with any number of work-groups. Each work-item
// folds a grid-strided slice, each group folds its work-items in local memory and publishes one
// partial; the last group to finish (an atomic ticket, clr_ticket.h) folds the partials in index
// order. This replaces the seeds' monokernel, whose barrier(CLK_GLOBAL_MEM_FENCE) only
// synchronises one work-group. Needs an associative and commutative OP. Host sets via -D:
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_ticket.h"
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group; any size the device accepts
#endif

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void reduce_topdown(
    __global const T* x, ulong n, __global acc_t* partials, __global volatile uint* ticket,
    __global acc_t* out) {
  __local acc_t s[WG_SIZE];
  __local int is_last;
  const uint groups = (uint)get_num_groups(0);
  const ulong stride = (ulong)groups * WG_SIZE;

  acc_t a = clr_identity();
  for (ulong i = get_global_id(0); i < n; i += stride) a = clr_op(a, clr_load(x, i));
  clr_ticket_reduce(a, s, WG_SIZE, &is_last, partials, ticket, out);
}
