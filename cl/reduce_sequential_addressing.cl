// reduce_sequential_addressing.cl: ladder kernel 3. Sequential addressing: the stride starts at
// half the group and halves, work-item lid combining s[lid] and s[lid + h]; the active
// work-items and their addresses are contiguous (conflict-free), but half the work-items idle
// from the first step. For a group size that is not a power of two h = ceil(w / 2), so no
// element is dropped. One partial per group; the host relaunches over the partials until one
// value remains. Any group size >= 2. Local memory: one acc_t per work-item, a kernel argument.
// No -D macros beyond clreduce.h's. Needs an associative and commutative OP.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif

inline void sequential_addressing(__global const T* x, __global const acc_t* y, ulong n,
                                  __global acc_t* out, __local acc_t* s, int first) {
  const uint lid = (uint)get_local_id(0);
  const ulong i = get_global_id(0);
  s[lid] = i < n ? clr_fetch(x, y, i, first) : clr_identity();
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint w = (uint)get_local_size(0); w > 1;) {
    const uint h = (w + 1) / 2;
    if (lid + h < w) s[lid] = clr_op(s[lid], s[lid + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
    w = h;
  }
  if (lid == 0) out[get_group_id(0)] = clr_result(s[0]);
}

// First pass: reads the array.
__kernel void reduce_sequential_addressing_first(__global const T* x, ulong n,
                                                 __global acc_t* out, __local acc_t* s) {
  sequential_addressing(x, 0, n, out, s, 1);
}

// Later passes: read the previous pass's partials.
__kernel void reduce_sequential_addressing(__global const acc_t* y, ulong n, __global acc_t* out,
                                           __local acc_t* s) {
  sequential_addressing(0, y, n, out, s, 0);
}
