// scan_add.cl: the second half of every scan variant's recursion over tile totals. After the
// tile totals have been scanned (inclusively), work-group g adds carry[g] = the scan of tiles
// 0..g into each element of tile g + 1, up to the tile's first segment start (heads[], from
// clr_scan_store): the element is combined as carry OP y, left operand first, which is the
// seeds' flag operator for an element no flag separates from the carry. One read and one write
// per element. Host sets via -D (and clreduce.h's, clr_scan.h's macros):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_scan.h"
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group; any size the device accepts
#endif

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void scan_add(__global acc_t* y, ulong n, ulong tile, __global const acc_t* carry,
              __global const uint* heads) {
  const ulong g = (ulong)get_group_id(0) + 1;  // tile 0 has nothing before it
  const ulong base = g * tile;
  ulong stop = min(tile, n - base);
#if CLR_SEGMENTED
  stop = min(stop, (ulong)heads[g]);
#endif
  const acc_t c = carry[g - 1];
  for (ulong k = get_local_id(0); k < stop; k += WG_SIZE) y[base + k] = clr_op(c, y[base + k]);
}
