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
#ifndef LANES
#define LANES 8  // float folds: independent accumulators (integer folds are vectorised as written)
#endif
#ifndef CLR_NT_STORES
#define CLR_NT_STORES 0  // 1: stream the output past the caches (x86; a host trial build decides)
#endif

// The output store: non-temporal where the compiler has the builtin (the output is not reread,
// and a streaming store skips reading each line before writing it: a third of the traffic).
#if CLR_NT_STORES
#define CLR_PUT(i, v) __builtin_nontemporal_store((v), y + (i))
#else
#define CLR_PUT(i, v) (y[i] = (v))
#endif
// One element of an unsegmented chunk: store and advance the running value `run`.
#if CLR_EXCLUSIVE
#define CLR_STEP(i) (CLR_PUT(i, run), run = clr_op(run, (acc_t)x[i]))
#else
#define CLR_STEP(i) (run = clr_op(run, (acc_t)x[i]), CLR_PUT(i, run))
#endif

// The unsegmented scan runs 8 elements at a time in vector registers (log-step scan inside the
// vector, then the carry), between scalar head and tail loops that align the vector stores.
#ifndef VSCAN
#define VSCAN 8  // 8: vector scan of unsegmented chunks; 1: scalar only
#endif
#if VSCAN == 8
typedef CLR_VEC(A_NAME, 8) avec;
#define AS_AVEC CLR_AS_VEC(A_NAME, 8)
#define AS_UVEC CLR_AS_VEC(U_NAME, 8)
#define CONVERT_AVEC CLR_CONVERT_VEC(A_NAME, 8)

// clr_op on 8 lanes at once (the same wrapping integers, NaN rules and operand order).
inline avec clr_vop(avec a, avec b) {
#if CLR_OP == CLR_SUM
#ifdef A_IS_FLOAT
  return a + b;
#else
  return AS_AVEC(AS_UVEC(a) + AS_UVEC(b));
#endif
#elif CLR_OP == CLR_PROD
#ifdef A_IS_FLOAT
  return a * b;
#else
  return AS_AVEC(AS_UVEC(a) * AS_UVEC(b));
#endif
#elif CLR_OP == CLR_MIN
#ifdef A_IS_FLOAT
  return select(b, a, isnan(a) | (a < b));
#else
  return select(b, a, a < b);
#endif
#else
#ifdef A_IS_FLOAT
  return select(b, a, isnan(a) | (a > b));
#else
  return select(b, a, a > b);
#endif
#endif
}

// Inclusive scan of the 8 lanes of v (the carry is applied by the caller, as clr_vop(carry, v)).
inline avec clr_vscan(avec v) {
  const acc_t i = clr_identity();
  v = clr_vop((avec)(i, v.s0, v.s1, v.s2, v.s3, v.s4, v.s5, v.s6), v);
  v = clr_vop((avec)(i, i, v.s0, v.s1, v.s2, v.s3, v.s4, v.s5), v);
  return clr_vop((avec)(i, i, i, i, v.s0, v.s1, v.s2, v.s3), v);
}
#if CLR_NT_STORES
#define CLR_VPUT(i, v) __builtin_nontemporal_store((v), (__global avec*)(y + (i)))
#else
#define CLR_VPUT(i, v) (*(__global avec*)(y + (i)) = (v))
#endif
#endif

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
  ulong b = lo + chunk_begin(len, c, chunks);
  const ulong e = lo + chunk_begin(len, c + 1, chunks);
  uint f = 0u;
#if CLR_SEGMENTED
  // Only the elements from the chunk's last segment start on count: find it from the end.
  for (ulong i = e; i > b; --i) {
    if (flags[i - 1]) {
      b = i - 1;
      f = 1u;
      break;
    }
  }
#endif
#ifdef A_IS_FLOAT
  // Floats are not reassociated by the compiler: LANES accumulators break the chain of adds.
  acc_t a[LANES];
  for (uint k = 0; k < LANES; ++k) a[k] = clr_identity();
  ulong i = b;
  for (; i + LANES <= e; i += LANES)
    for (uint k = 0; k < LANES; ++k) a[k] = clr_op(a[k], (acc_t)x[i + k]);
  for (uint k = 0; i < e; ++i, ++k) a[k] = clr_op(a[k], (acc_t)x[i]);
  for (uint w = LANES / 2; w > 0; w /= 2)
    for (uint k = 0; k < w; ++k) a[k] = clr_op(a[k], a[k + w]);
  totals[c] = a[0];
#else
  acc_t a = clr_identity();
  for (ulong i = b; i < e; ++i) a = clr_op(a, (acc_t)x[i]);
  totals[c] = a;
#endif
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
#if CLR_SEGMENTED
  for (ulong i = b; i < e; ++i) {
    const acc_t v = (acc_t)x[i];
    const uint f = flags[i] != 0;
#if CLR_EXCLUSIVE
    CLR_PUT(i, f ? clr_identity() : run);
#endif
    run = f ? v : clr_op(run, v);
#if !CLR_EXCLUSIVE
    CLR_PUT(i, run);
#endif
  }
#else
  (void)flags;
  (void)tile_flags;
  ulong i = b;
#if VSCAN == 8
  // Scalar up to a multiple of 8 (the buffer is aligned, so the vector stores are), then vectors.
  const ulong head = min(e, (b + 7) / 8 * 8);
  for (; i < head; ++i) CLR_STEP(i);
  // The carry stays in a vector, every lane alike, and advances by the splat of the vector's
  // own total: lane 7 of clr_vop(runv, v) is clr_vop(runv.s7, v.s7), and so is every lane of
  // the next carry, bit for bit. The loop-carried chain is then one clr_vop per 8 elements (the
  // splat is off it), not an extract, a broadcast and two clr_vops.
  avec runv = (avec)(run);
  for (; i + 8 <= e; i += 8) {
    const avec v = clr_vscan(CONVERT_AVEC(vload8(0, x + i)));
#if CLR_EXCLUSIVE
    const avec o = clr_vop(runv, v);
    CLR_VPUT(i, ((avec)(runv.s0, o.s0, o.s1, o.s2, o.s3, o.s4, o.s5, o.s6)));
#else
    CLR_VPUT(i, clr_vop(runv, v));
#endif
    runv = clr_vop(runv, (avec)(v.s7));
  }
  run = runv.s0;
#endif
  for (; i < e; ++i) CLR_STEP(i);
#endif
  if (c == chunks - 1) carry[sb + 1] = run;
#if CLR_NT_STORES
  __builtin_ia32_sfence();  // streaming stores are weakly ordered: drain them before the end
#endif
}
