// reduce_multi_element.cl: ladder kernel 7, cost-optimal. Kernel 6 with few enough work-groups
// (the host sizes the grid from the device's compute units and p = n / log2 n) that each
// work-item first folds many elements: a grid-strided loop, two loads per iteration (i and
// i + WG_SIZE of each 2 * WG_SIZE block). Then the unrolled tree and clr_tail.h's CLR_TAIL. One
// partial per group; a second launch (usually one group) folds the partials. Host sets via -D:
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_tail.h"
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group, 1..4096 (a multiple of 32 for CLR_TAIL 2)
#endif
// CLR_TAIL (default 0, barriers; see clr_tail.h). Needs an associative and commutative OP.
#if WG_SIZE < 1 || WG_SIZE > 4096
#error "WG_SIZE must be 1..4096"
#endif

inline void multi_element(__global const T* x, __global const acc_t* y, ulong n,
                          __global acc_t* out, __local acc_t* s, __local uint* sg, int first) {
  const uint lid = (uint)get_local_id(0);
  const ulong grid = (ulong)get_num_groups(0) * (2 * WG_SIZE);
  acc_t a = clr_identity();
  for (ulong i = (ulong)get_group_id(0) * (2 * WG_SIZE) + lid; i < n; i += grid) {
    a = clr_op(a, clr_fetch(x, y, i, first));
    if (i + WG_SIZE < n) a = clr_op(a, clr_fetch(x, y, i + WG_SIZE, first));
  }
  s[lid] = a;
  clr_tail_setup(sg);
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint w = clr_unrolled_fold(s, WG_SIZE, clr_tail_limit(sg));
  clr_tail_fold(s, w, sg, out + get_group_id(0));
}

// First pass: reads the array.
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void reduce_multi_element_first(
    __global const T* x, ulong n, __global acc_t* out) {
  __local acc_t s[WG_SIZE];
  __local uint sg;
  multi_element(x, 0, n, out, s, &sg, 1);
}

// Later passes: read the previous pass's partials.
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void reduce_multi_element(
    __global const acc_t* y, ulong n, __global acc_t* out) {
  __local acc_t s[WG_SIZE];
  __local uint sg;
  multi_element(0, y, n, out, s, &sg, 0);
}
