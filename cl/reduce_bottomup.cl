// reduce_bottomup.cl: the seeds' multi-launch pairwise tree. Launch k combines neighbouring
// pairs, out[i] = OP(in[2i], in[2i+1]), halving the array: ceil(log2 n) launches for any n,
// the odd last element carried up unchanged. reduce_bottomup_first reads the input elements;
// reduce_bottomup reads accumulators. Compacting (rather than the seeds' in-place strided
// update) keeps every launch's reads and writes contiguous. One element per work-item.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif

__kernel void reduce_bottomup_first(__global const T* x, ulong m, __global acc_t* out) {
  const ulong i = get_global_id(0);
  const ulong pairs = (m + 1) / 2;
  if (i >= pairs) return;
  const ulong j = 2 * i;
  acc_t a = clr_load(x, j);
  if (j + 1 < m) a = clr_op(a, clr_load(x, j + 1));
  out[i] = clr_result(a);
}

__kernel void reduce_bottomup(__global const acc_t* in, ulong m, __global acc_t* out) {
  const ulong i = get_global_id(0);
  const ulong pairs = (m + 1) / 2;
  if (i >= pairs) return;
  const ulong j = 2 * i;
  acc_t a = in[j];
  if (j + 1 < m) a = clr_op(a, in[j + 1]);
  out[i] = clr_result(a);
}
