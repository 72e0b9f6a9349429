// scan_blelloch.cl: the work-efficient tile scan (Blelloch): an up-sweep builds a reduction tree
// in place in local memory, the root is cleared to the identity, and a down-sweep pushes
// exclusive prefixes back down. 2*(SCAN_P - 1) operations and 2*log2(SCAN_P) barrier steps per
// tile of SCAN_P elements, against Hillis-Steele's SCAN_P*log2(SCAN_P). Local indices are padded
// by one slot every 2^LOG_BANKS so the tree's power-of-two strides do not fall into one memory
// bank. The down-sweep keeps operand order (prefix on the left), so the non-commutative
// segmented operator of clr_scan.h works. The host scans the tile totals by the same kernel and
// adds them back (scan_add.cl). Host sets via -D (and clreduce.h's, clr_scan.h's macros):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_scan.h"
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group; any size the device accepts
#endif
#ifndef SCAN_P
#define SCAN_P 512  // elements per tile: the power of two >= 2 * WG_SIZE
#endif
#ifndef LOG_BANKS
#define LOG_BANKS 5  // log2 of the number of local memory banks padded against
#endif
#define PAD(i) ((i) + ((i) >> LOG_BANKS))

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void scan_blelloch(__global const T* x, __global const uchar* flags, ulong n,
                   __global acc_t* y, __global acc_t* totals, __global uchar* tile_flags,
                   __global uint* heads) {
  __local acc_t s[SCAN_P + (SCAN_P >> LOG_BANKS)];
#if CLR_SEGMENTED
  __local uchar sf[SCAN_P];
#endif
  const uint lid = (uint)get_local_id(0);
  const ulong base = (ulong)get_group_id(0) * SCAN_P;
  const uint m = (uint)min((ulong)SCAN_P, n - base);  // elements in this tile, >= 1

  for (uint k = lid; k < SCAN_P; k += WG_SIZE) {
    s[PAD(k)] = k < m ? clr_load(x, base + k) : clr_identity();
#if CLR_SEGMENTED
    sf[k] = (uchar)(k < m && flags[base + k] != 0);
#endif
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // Up-sweep: node b = (2j + 2)d - 1 takes its left sibling a = b - d.
  for (uint d = 1; d < SCAN_P; d <<= 1) {
    for (uint j = lid; j < SCAN_P / (2 * d); j += WG_SIZE) {
      const uint a = (2 * j + 1) * d - 1, b = a + d;
#if CLR_SEGMENTED
      s[PAD(b)] = clr_seg_op(s[PAD(a)], s[PAD(b)], sf[b]);
      sf[b] |= sf[a];
#else
      s[PAD(b)] = clr_op(s[PAD(a)], s[PAD(b)]);
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    s[PAD(SCAN_P - 1)] = clr_identity();
#if CLR_SEGMENTED
    sf[SCAN_P - 1] = 0;
#endif
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // Down-sweep: b holds the prefix before its subtree; a gets it, b gets prefix OP left subtree.
  for (uint d = SCAN_P / 2; d >= 1; d >>= 1) {
    for (uint j = lid; j < SCAN_P / (2 * d); j += WG_SIZE) {
      const uint a = (2 * j + 1) * d - 1, b = a + d;
      const acc_t t = s[PAD(a)];
      s[PAD(a)] = s[PAD(b)];
#if CLR_SEGMENTED
      const uint tf = sf[a];
      sf[a] = sf[b];
      s[PAD(b)] = clr_seg_op(s[PAD(b)], t, tf);
      sf[b] |= tf;
#else
      s[PAD(b)] = clr_op(s[PAD(b)], t);
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  // s[k] is now the exclusive pair of tile elements 0..k-1; the inclusive one adds element k,
  // read again from global memory rather than kept in a second local array.
  for (uint k = lid; k < m; k += WG_SIZE) {
    const acc_t excl = s[PAD(k)];
#if CLR_SEGMENTED
    const uint own = flags[base + k] != 0, ef = sf[k];
#else
    const uint own = 0u, ef = 0u;
#endif
    const acc_t incl = clr_seg_op(excl, clr_load(x, base + k), own);
    clr_scan_store(base, k, m, excl, ef, incl, ef | own, own, y, totals, tile_flags, heads);
  }
}
