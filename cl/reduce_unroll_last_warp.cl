// reduce_unroll_last_warp.cl: ladder kernel 5. As kernel 4, but once few elements remain the
// group stops paying for work-group barriers: the seeds let the last warp run on without
// __syncthreads through volatile shared memory, a data race on current GPUs. Here the tail is
// clr_tail.h's CLR_TAIL: NVIDIA's shfl.sync through inline PTX (last 64 elements), sub-group
// functions with sub_group_barrier (last 2 * sub-group size), or barriers all the way (then this
// is kernel 4). One partial per group; the host relaunches over the partials until one value
// remains. Any group size >= 1 (a multiple of 32 for CLR_TAIL 2). Local memory: one acc_t per
// work-item, a kernel argument. Host sets via -D: CLR_TAIL (default 0, barriers), and
// -cl-std for CLR_TAIL 1. Needs an associative and commutative OP.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_tail.h"

inline void unroll_last_warp(__global const T* x, __global const acc_t* y, ulong n,
                             __global acc_t* out, __local acc_t* s, __local uint* sg, int first) {
  const uint lid = (uint)get_local_id(0);
  const uint wg = (uint)get_local_size(0);
  const ulong i = (ulong)get_group_id(0) * (2 * wg) + lid;
  acc_t a = i < n ? clr_fetch(x, y, i, first) : clr_identity();
  if (i + wg < n) a = clr_op(a, clr_fetch(x, y, i + wg, first));
  s[lid] = a;
  clr_tail_setup(sg);
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint limit = clr_tail_limit(sg);
  uint w = wg;
  while (w > limit) {
    const uint h = (w + 1) / 2;
    if (lid + h < w) s[lid] = clr_op(s[lid], s[lid + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
    w = h;
  }
  clr_tail_fold(s, w, sg, out + get_group_id(0));
}

// First pass: reads the array.
__kernel void reduce_unroll_last_warp_first(__global const T* x, ulong n, __global acc_t* out,
                                            __local acc_t* s) {
  __local uint sg;
  unroll_last_warp(x, 0, n, out, s, &sg, 1);
}

// Later passes: read the previous pass's partials.
__kernel void reduce_unroll_last_warp(__global const acc_t* y, ulong n, __global acc_t* out,
                                      __local acc_t* s) {
  __local uint sg;
  unroll_last_warp(0, y, n, out, s, &sg, 0);
}
