// reduce_interleaved_divergent.cl: ladder kernel 1, the seeds' first CUDA reduction. Each
// work-item loads one element into local memory; at stride s = 1, 2, 4, ... the work-items with
// lid % (2s) == 0 combine s[lid] and s[lid + s]: interleaved addressing, most work-items of a
// warp idle (divergence) and % is slow. One partial per group; the host relaunches over the
// partials until one value remains (ceil(log_wg n) passes, n - 1 operations in all). Any group
// size >= 2 (elements past the end read as the identity). Local memory: one acc_t per work-item,
// a kernel argument. No -D macros beyond clreduce.h's. Needs an associative, commutative OP.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif

inline void interleaved_divergent(__global const T* x, __global const acc_t* y, ulong n,
                                  __global acc_t* out, __local acc_t* s, int first) {
  const uint lid = (uint)get_local_id(0);
  const uint wg = (uint)get_local_size(0);
  const ulong i = get_global_id(0);
  s[lid] = i < n ? clr_fetch(x, y, i, first) : clr_identity();
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint st = 1; st < wg; st *= 2) {
    if (lid % (2 * st) == 0 && lid + st < wg) s[lid] = clr_op(s[lid], s[lid + st]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[get_group_id(0)] = clr_result(s[0]);
}

// First pass: reads the array.
__kernel void reduce_interleaved_divergent_first(__global const T* x, ulong n,
                                                 __global acc_t* out, __local acc_t* s) {
  interleaved_divergent(x, 0, n, out, s, 1);
}

// Later passes: read the previous pass's partials.
__kernel void reduce_interleaved_divergent(__global const acc_t* y, ulong n, __global acc_t* out,
                                           __local acc_t* s) {
  interleaved_divergent(0, y, n, out, s, 0);
}
