// scan_carry.cl: a scan's carry-in, applied after any variant has scanned a range: every element
// before the range's first segment start (every element when unsegmented) becomes carry OP y,
// carry the left operand, as the seeds' flag operator combines a value no flag separates from
// what came before. scan_carry_heads (segmented only): each work-group writes the first flagged
// position its work-items meet, each walking its grid-strided elements until the first flag.
// scan_carry: each work-item takes the least of those and combines its grid-strided elements
// below it (CLR_CARRY_BLOCKED: a contiguous block each, for CPUs, in both kernels). One read and
// one write per element carried. Host sets via -D (and clreduce.h's):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#ifndef WG_SIZE
#define WG_SIZE 64  // work-items per group; any size the device accepts
#endif
#ifndef CLR_SEGMENTED
#define CLR_SEGMENTED 0  // 1: stop at the first flagged element
#endif
#ifndef CLR_CARRY_BLOCKED
#define CLR_CARRY_BLOCKED 0  // 1: a contiguous block per work-item (CPUs); 0: a grid stride
#endif

// This work-item's elements of [0, n): [*begin, *end) step *step.
inline void clr_carry_range(ulong n, ulong* begin, ulong* end, ulong* step) {
#if CLR_CARRY_BLOCKED
  const ulong items = get_global_size(0);
  const ulong per = (n + items - 1) / items;
  *begin = min(n, get_global_id(0) * per);
  *end = min(n, *begin + per);
  *step = 1;
#else
  *begin = get_global_id(0);
  *end = n;
  *step = get_global_size(0);
#endif
}

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void scan_carry_heads(__global const uchar* flags, ulong n, __global ulong* heads) {
  __local ulong first[WG_SIZE];
  ulong f = n, b, e, s;
  clr_carry_range(n, &b, &e, &s);
  for (ulong i = b; i < e; i += s) {
    if (flags[i]) {
      f = i;  // this work-item's elements increase: its first flag is its least
      break;
    }
  }
  const uint l = (uint)get_local_id(0);
  first[l] = f;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    for (uint k = 1; k < WG_SIZE; ++k) f = min(f, first[k]);
    heads[get_group_id(0)] = f;
  }
}

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void scan_carry(__global acc_t* y, ulong n, acc_t carry, __global const ulong* heads,
                uint groups) {
  ulong stop = n;
#if CLR_SEGMENTED
  for (uint g = 0; g < groups; ++g) stop = min(stop, heads[g]);
#else
  (void)heads;
  (void)groups;
#endif
  ulong b, e, s;
  clr_carry_range(stop, &b, &e, &s);
  for (ulong i = b; i < e; i += s) y[i] = clr_op(carry, y[i]);
}
