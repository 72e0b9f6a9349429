// reduce_complete_unroll.cl: ladder kernel 6. Kernel 5 with the group size fixed at build time
// (-DWG_SIZE: the run-time compilation that C++ templates gave the seeds), so the whole tree is
// straight-line code with constant widths (clr_unrolled_fold) and local memory is static. Loads
// two elements per work-item as kernel 4; finishes with clr_tail.h's CLR_TAIL. One partial per
// group; the host relaunches over the partials until one value remains. Host sets via -D:
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

inline void complete_unroll(__global const T* x, __global const acc_t* y, ulong n,
                            __global acc_t* out, __local acc_t* s, __local uint* sg, int first) {
  const uint lid = (uint)get_local_id(0);
  const ulong i = (ulong)get_group_id(0) * (2 * WG_SIZE) + lid;
  acc_t a = i < n ? clr_fetch(x, y, i, first) : clr_identity();
  if (i + WG_SIZE < n) a = clr_op(a, clr_fetch(x, y, i + WG_SIZE, first));
  s[lid] = a;
  clr_tail_setup(sg);
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint w = clr_unrolled_fold(s, WG_SIZE, clr_tail_limit(sg));
  clr_tail_fold(s, w, sg, out + get_group_id(0));
}

// First pass: reads the array.
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void reduce_complete_unroll_first(
    __global const T* x, ulong n, __global acc_t* out) {
  __local acc_t s[WG_SIZE];
  __local uint sg;
  complete_unroll(x, 0, n, out, s, &sg, 1);
}

// Later passes: read the previous pass's partials.
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void reduce_complete_unroll(
    __global const acc_t* y, ulong n, __global acc_t* out) {
  __local acc_t s[WG_SIZE];
  __local uint sg;
  complete_unroll(0, y, n, out, s, &sg, 0);
}
