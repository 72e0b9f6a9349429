// reduce_interleaved_strided.cl: ladder kernel 2. As kernel 1, but at stride s work-item lid
// combines s[2*s*lid] and s[2*s*lid + s]: the active work-items are contiguous (no divergence
// inside a warp), at the price of strided local-memory addresses (bank conflicts on GPUs).
// One partial per group; the host relaunches over the partials until one value remains. Any
// group size >= 2. Local memory: one acc_t per work-item, a kernel argument. No -D macros beyond
// clreduce.h's. Needs an associative and commutative OP.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif

inline void interleaved_strided(__global const T* x, __global const acc_t* y, ulong n,
                                __global acc_t* out, __local acc_t* s, int first) {
  const uint lid = (uint)get_local_id(0);
  const uint wg = (uint)get_local_size(0);
  const ulong i = get_global_id(0);
  s[lid] = i < n ? clr_fetch(x, y, i, first) : clr_identity();
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint st = 1; st < wg; st *= 2) {
    const uint index = 2 * st * lid;
    if (index + st < wg) s[index] = clr_op(s[index], s[index + st]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[get_group_id(0)] = clr_result(s[0]);
}

// First pass: reads the array.
__kernel void reduce_interleaved_strided_first(__global const T* x, ulong n, __global acc_t* out,
                                               __local acc_t* s) {
  interleaved_strided(x, 0, n, out, s, 1);
}

// Later passes: read the previous pass's partials.
__kernel void reduce_interleaved_strided(__global const acc_t* y, ulong n, __global acc_t* out,
                                         __local acc_t* s) {
  interleaved_strided(0, y, n, out, s, 0);
}
