// scan_cpu_lookback.cl: the CPU-shaped single-pass scan: decoupled look-back (as
// scan_lookback.cl) over cache-sized tiles, one work-item per group. Each group takes the next
// tile id from an atomic counter (so it only waits on tiles whose groups are already running on
// other threads), folds its tile (reading it into the core's cache), publishes the fold (status
// A; status P at once for tile 0 or a tile holding a segment start), walks back over its
// predecessors' descriptors one by one until it meets a P, publishes its own inclusive prefix
// and scans its tile from there, rereading it from cache: about 2n element moves from memory
// where the two-pass scan (scan_cpu_two_pass.cl) makes 3n, and one launch. No group waits
// without bound (the decoupled fallback of Smith, Levien & Owens 2025): once it has read an
// unpublished predecessor's descriptor LB_LIMIT times in a row, a group folds that tile's input
// itself and goes on, so every run stores every tile. Host sets via -D (and clreduce.h's,
// clr_scan.h's, clr_cpu_scan.h's macros):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_scan.h"
#include "clr_types.h"
#include "clr_lookback.h"
#include "clr_cpu_scan.h"
#ifndef LB_LIMIT
// Reads of an unpublished predecessor's descriptor before the group folds that tile itself. 0,
// the test setting: at once, and the LB_NEAR tiles just before each tile are folded whatever
// their descriptors say (so folds run where groups finish in order).
#define LB_LIMIT (1u << 24)
#endif
#define LB_NEAR 3u

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void scan_cpu_lookback(
    __global const T* x, __global const uchar* flags, ulong n, ulong tile_len, __global acc_t* y,
    __global ulong* desc, __global uint* counters, uint epoch) {
  // 1. The tile: the next id from the counter (counters[0]).
  const uint tile = atomic_inc(counters);
  const ulong b = (ulong)tile * tile_len;
  const ulong e = min(n, b + tile_len);  // b < n: there are ceil(n / tile_len) groups

  // 2. The tile's fold, published: as the inclusive prefix when nothing before can change it.
  uint af = 0u;
  const acc_t agg = clr_cpu_fold(x, flags, b, e, &af);
  const uint published_p = tile == 0 || af;
  lb_publish(desc, tile, (epoch << 2) | (published_p ? ST_P : ST_A), agg);

  // 3. Look-back, unless the tile's first element starts a segment: the prefix combines the
  //    folds of tiles tile-1, tile-2, ... down to and including the first inclusive prefix. A
  //    descriptor still unpublished after LB_LIMIT reads: that tile folded here from x, taken
  //    as the descriptor it would have published (an aggregate, or an inclusive prefix where it
  //    holds a segment start or is tile 0).
#if CLR_SEGMENTED
  uint done = tile == 0 || flags[b] != 0;
#else
  uint done = tile == 0;
#endif
  acc_t prefix = clr_identity();
  uint t = tile, waits = 0u;
  while (!done) {
    acc_t v = clr_identity();
#if LB_LIMIT == 0
    // The test setting: the tiles just before this one read as unpublished.
    const uint s = tile - (t - 1) > LB_NEAR ? lb_read(desc, t - 1, epoch, &v) : 0u;
#else
    const uint s = lb_read(desc, t - 1, epoch, &v);
#endif
    if (s == 0u && ++waits > LB_LIMIT) {
      // The fallback: tile t-1 is still unpublished; its fold, as it would publish it.
      const ulong tb = (ulong)(t - 1) * tile_len;
      uint ff = 0u;
      v = clr_cpu_fold(x, flags, tb, tb + tile_len, &ff);
      done = ff || t == 1;
      prefix = clr_op(v, prefix);
      --t;
      waits = 0u;
    } else if (s != 0u) {
      prefix = clr_op(v, prefix);
      --t;
      done = s == ST_P;
      waits = 0u;
    }
  }

  // 4. The inclusive prefix for the tiles after, then the tile from the prefix.
  if (!published_p) lb_publish(desc, tile, (epoch << 2) | ST_P, clr_op(prefix, agg));
  clr_cpu_scan(x, flags, y, b, e, prefix);
#if CLR_NT_STORES
  __builtin_ia32_sfence();  // streaming stores are weakly ordered: drain them before the end
#endif

  // 5. The last group to finish resets the tile counter for the next run.
  if (atomic_inc(counters + 1) == (uint)get_num_groups(0) - 1u) {
    atomic_xchg(counters, 0u);
    atomic_xchg(counters + 1, 0u);
  }
}
