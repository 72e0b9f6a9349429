// scan_cpu_two_pass.cl: the CPU-shaped reduce-then-scan of scan-fast (OpenMP's two-pass scheme):
// a few work-groups of a few work-items, each work-item owning one contiguous chunk of a
// superblock. scan_cpu_two_pass_reduce: each work-item folds its chunk into a pair (value since
// its last segment start, any start) in simple uniform loops the compiler can vectorise.
// scan_cpu_two_pass_scan: each work-item combines the carry of the superblocks before and the
// pairs of the chunks before its own (a few dozen), then scans its chunk sequentially from there
// and stores it; the last chunk's work-item leaves the carry for the next superblock. The host
// runs the two kernels per superblock, sized so the second pass rereads its input from cache:
// about 2n element moves. No work-item ever waits on another. Host sets via -D (and clreduce.h's,
// clr_scan.h's macros):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_scan.h"
#include "clr_types.h"
#ifndef WG_SIZE
#define WG_SIZE 4  // work-items per group; any size the device accepts
#endif
#ifndef CLR_ALIGN
#define CLR_ALIGN 16  // inner chunk edges are multiples of this many elements
#endif
#include "clr_cpu_scan.h"

// First element of chunk c of `chunks` over a superblock of len elements: inner edges are
// multiples of CLR_ALIGN, the last chunk takes the remainder.
inline ulong chunk_begin(ulong len, ulong c, ulong chunks) {
  if (c >= chunks) return len;
  return c * ((len / chunks) / CLR_ALIGN * CLR_ALIGN);
}

// Pass 1: chunk c of the superblock [lo, lo + len) into totals[c] and tile_flags[c].
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void scan_cpu_two_pass_reduce(
    __global const T* x, __global const uchar* flags, ulong lo, ulong len, __global acc_t* totals,
    __global uchar* tile_flags) {
  const ulong c = get_global_id(0), chunks = get_global_size(0);
  const ulong b = lo + chunk_begin(len, c, chunks);
  const ulong e = lo + chunk_begin(len, c + 1, chunks);
  uint f = 0u;
  totals[c] = clr_cpu_fold(x, flags, b, e, &f);
#if CLR_SEGMENTED
  tile_flags[c] = (uchar)f;
#else
  (void)tile_flags;
#endif
}

// Pass 2: chunk c of superblock sb, [lo, lo + len), scanned from the carry of the superblocks
// before (carry[sb]; none for sb = 0) and the pairs of the chunks before c; the last chunk
// stores the carry for the next superblock in carry[sb + 1].
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void scan_cpu_two_pass_scan(
    __global const T* x, __global const uchar* flags, ulong lo, ulong len, __global acc_t* y,
    __global const acc_t* totals, __global const uchar* tile_flags, __global acc_t* carry,
    ulong sb) {
  const ulong c = get_global_id(0), chunks = get_global_size(0);
  const ulong b = lo + chunk_begin(len, c, chunks);
  const ulong e = lo + chunk_begin(len, c + 1, chunks);
  acc_t run = sb ? carry[sb] : clr_identity();
  for (ulong k = 0; k < c; ++k) {
#if CLR_SEGMENTED
    run = clr_seg_op(run, totals[k], tile_flags[k]);
#else
    run = clr_op(run, totals[k]);
#endif
  }
  (void)tile_flags;
  run = clr_cpu_scan(x, flags, y, b, e, run);
  if (c == chunks - 1) carry[sb + 1] = run;
#if CLR_NT_STORES
  __builtin_ia32_sfence();  // streaming stores are weakly ordered: drain them before the end
#endif
}
