// reduce_first_add_during_load.cl: ladder kernel 4. As kernel 3, but each work-item combines two
// elements while loading (lid and lid + group size of its group's 2*wg slice), so half the
// work-groups do the same work and no work-item idles in the first step. One partial per group;
// the host relaunches over the partials until one value remains. Any group size >= 1. Local
// memory: one acc_t per work-item, a kernel argument. No -D macros beyond clreduce.h's.
// Needs an associative and commutative OP.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif

inline void first_add_during_load(__global const T* x, __global const acc_t* y, ulong n,
                                  __global acc_t* out, __local acc_t* s, int first) {
  const uint lid = (uint)get_local_id(0);
  const uint wg = (uint)get_local_size(0);
  const ulong i = (ulong)get_group_id(0) * (2 * wg) + lid;
  acc_t a = i < n ? clr_fetch(x, y, i, first) : clr_identity();
  if (i + wg < n) a = clr_op(a, clr_fetch(x, y, i + wg, first));
  s[lid] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint w = wg; w > 1;) {
    const uint h = (w + 1) / 2;
    if (lid + h < w) s[lid] = clr_op(s[lid], s[lid + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
    w = h;
  }
  if (lid == 0) out[get_group_id(0)] = clr_result(s[0]);
}

// First pass: reads the array.
__kernel void reduce_first_add_during_load_first(__global const T* x, ulong n,
                                                 __global acc_t* out, __local acc_t* s) {
  first_add_during_load(x, 0, n, out, s, 1);
}

// Later passes: read the previous pass's partials.
__kernel void reduce_first_add_during_load(__global const acc_t* y, ulong n, __global acc_t* out,
                                           __local acc_t* s) {
  first_add_during_load(0, y, n, out, s, 0);
}
