// scan_hillis_steele.cl: the seeds' naive scan (Hillis & Steele), double-buffered as in their
// Algorithm 2: step d combines element k with element k - 2^d, reading one local buffer and
// writing the other, so no work-item overwrites a value another still has to read. One tile of
// WG_SIZE elements per work-group, one element per work-item; ceil(log2 WG_SIZE) steps and
// about WG_SIZE * log2(WG_SIZE) operations per tile (not work-efficient: that is the point).
// The host scans the tile totals by the same kernel and adds them back (scan_add.cl).
// The combination order is kept (left operand first), so the non-commutative segmented
// operator of clr_scan.h works. Host sets via -D (and clreduce.h's, clr_scan.h's macros):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_scan.h"
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group = elements per tile; any size the device accepts
#endif

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void scan_hillis_steele(__global const T* x, __global const uchar* flags, ulong n,
                        __global acc_t* y, __global acc_t* totals, __global uchar* tile_flags,
                        __global uint* heads) {
  __local acc_t s[2][WG_SIZE];
#if CLR_SEGMENTED
  __local uchar sf[2][WG_SIZE];
#endif
  const uint lid = (uint)get_local_id(0);
  const ulong base = (ulong)get_group_id(0) * WG_SIZE;
  const uint m = (uint)min((ulong)WG_SIZE, n - base);  // elements in this tile, >= 1
  const int live = lid < m;
  uint own = 0;
  s[0][lid] = live ? clr_load(x, base + lid) : clr_identity();
#if CLR_SEGMENTED
  own = live && flags[base + lid] != 0;
  sf[0][lid] = (uchar)own;
#endif
  barrier(CLK_LOCAL_MEM_FENCE);

  uint in = 0;
  for (uint off = 1; off < m; off <<= 1) {  // m is uniform: every work-item meets each barrier
    acc_t v = s[in][lid];
#if CLR_SEGMENTED
    uint f = sf[in][lid];
    if (lid >= off) {
      v = clr_seg_op(s[in][lid - off], v, f);
      f |= sf[in][lid - off];
    }
    sf[1 - in][lid] = (uchar)f;
#else
    if (lid >= off) v = clr_op(s[in][lid - off], v);
#endif
    s[1 - in][lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    in = 1 - in;
  }

  if (live) {
    const acc_t incl = s[in][lid];
    const acc_t excl = lid ? s[in][lid - 1] : clr_identity();
#if CLR_SEGMENTED
    const uint f = sf[in][lid], ef = lid ? sf[in][lid - 1] : 0u;
#else
    const uint f = 0u, ef = 0u;
#endif
    clr_scan_store(base, lid, m, excl, ef, incl, f, own, y, totals, tile_flags, heads);
  }
}
