// reduce_sequential_device.cl: the seeds' "seq GPU" baseline. One work-item walks the whole
// array in index order: n - 1 dependent operations, no parallelism. Launch with one work-item.
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif

__kernel void reduce_sequential_device(__global const T* x, ulong n, __global acc_t* out) {
  acc_t a = clr_identity();
  for (ulong i = 0; i < n; ++i) a = clr_op(a, clr_load(x, i));
  out[0] = a;
}
