// scan_cpu_lookback.cl: the CPU-shaped single-pass scan: decoupled look-back (as
// scan_lookback.cl) over cache-sized tiles, one work-item per group. Each group takes the next
// tile id from an atomic counter (so it only waits on tiles whose groups are already running on
// other threads), folds its tile (reading it into the core's cache), publishes the fold (status
// A; status P at once for tile 0 or a tile holding a segment start), walks back over its
// predecessors' descriptors one by one until it meets a P, publishes its own inclusive prefix
// and scans its tile from there, rereading it from cache: about 2n element moves from memory
// where the two-pass scan (scan_cpu_two_pass.cl) makes 3n, and one launch. Every wait is
// bounded: past LB_LIMIT descriptor reads a group sets err[0] = epoch, marks its tile failed
// (status X, on which later tiles give up at once) and ends without storing; the host sees err
// and redoes the scan another way. Host sets via -D (and clreduce.h's, clr_scan.h's,
// clr_cpu_scan.h's macros):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_scan.h"
#include "clr_types.h"
#include "clr_lookback.h"
#include "clr_cpu_scan.h"
#ifndef LB_LIMIT
#define LB_LIMIT (1u << 24)  // descriptor reads before a group gives up (0: always give up)
#endif

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void scan_cpu_lookback(
    __global const T* x, __global const uchar* flags, ulong n, ulong tile_len, __global acc_t* y,
    __global ulong* desc, __global uint* counters, __global uint* err, uint epoch) {
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
  //    folds of tiles tile-1, tile-2, ... down to and including the first inclusive prefix.
#if CLR_SEGMENTED
  uint state = tile == 0 || flags[b] != 0;  // 0 looking back, 1 done, 2 gave up
#else
  uint state = tile == 0;
#endif
  acc_t prefix = clr_identity();
  uint t = tile, reads = 0u;
  while (state == 0u) {
    acc_t v = clr_identity();
    const uint s = lb_read(desc, t - 1, epoch, &v);
    if (s == ST_A || s == ST_P) {
      prefix = clr_op(v, prefix);
      --t;
      if (s == ST_P) state = 1u;
    } else if (s == ST_X) {
      state = 2u;
    }
    if (state == 0u && ++reads > LB_LIMIT) state = 2u;
  }
#if LB_LIMIT == 0
  if (tile != 0) state = 2u;  // the test setting: every look-back gives up
#endif

  if (state == 2u) {
    // 4a. Gave up: say so to the host and to the tiles after this one; store nothing.
    if (!published_p) lb_publish(desc, tile, (epoch << 2) | ST_X, clr_identity());
    atomic_xchg(err, epoch);
  } else {
    // 4b. The inclusive prefix for the tiles after, then the tile from the prefix.
    if (!published_p) lb_publish(desc, tile, (epoch << 2) | ST_P, clr_op(prefix, agg));
    clr_cpu_scan(x, flags, y, b, e, prefix);
#if CLR_NT_STORES
    __builtin_ia32_sfence();  // streaming stores are weakly ordered: drain them before the end
#endif
  }

  // 5. The last group to finish resets the tile counter for the next run.
  if (atomic_inc(counters + 1) == (uint)get_num_groups(0) - 1u) {
    atomic_xchg(counters, 0u);
    atomic_xchg(counters + 1, 0u);
  }
}
