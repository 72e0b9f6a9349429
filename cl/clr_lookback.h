// clr_lookback.h: the tile descriptors of the decoupled look-back scans (scan_lookback.cl,
// scan_cpu_lookback.cl). Descriptors cross groups only through 64-bit atomics: each 32-bit word of
// a value travels in one 64-bit word under a tag (epoch << 2 | status), so a reader needs no
// fence: it accepts a value when every word carries the same tag of this run's epoch. Nothing
// needs clearing between runs: an older epoch's descriptor reads as "not published".
#ifndef CLR_LOOKBACK_H
#define CLR_LOOKBACK_H
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define LB_WORDS (sizeof(acc_t) / 4)  // 32-bit words per value (1 or 2)

#define ST_A 1u  // the tile's aggregate
#define ST_P 2u  // the tile's inclusive prefix

// Publishes value v for `tile` under tag (epoch << 2 | status), word by word.
inline void lb_publish(__global ulong* desc, uint tile, uint tag, acc_t v) {
  clr_words u;
  u.a = v;
  volatile __global ulong* p = (volatile __global ulong*)desc + (size_t)tile * LB_WORDS;
#pragma unroll
  for (uint k = 0; k < LB_WORDS; ++k) atom_xchg(p + k, ((ulong)tag << 32) | (ulong)u.w[k]);
}

// One 64-bit word of a descriptor, read whole. LB_RELAXED (NVIDIA, set by the host where warps
// shuffle): a volatile load, as CUB reads its tile states (each word is written by one atomic
// exchange, and an aligned 64-bit load sees it whole), so pollers of one descriptor do not queue
// behind each other's read-modify-writes in L2; else an atomic add of 0.
#ifndef LB_RELAXED
#define LB_RELAXED 0
#endif
#if LB_RELAXED
inline ulong lb_load(volatile __global ulong* p) {
  ulong r;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(r) : "l"((ulong)p) : "memory");
  return r;
}
#else
#define lb_load(p) atom_add((p), 0ul)
#endif

// A descriptor's words, already loaded: its status in this epoch (0 while not, or not wholly,
// published) and, when nonzero, its value in *v.
inline uint lb_decode(const ulong* w, uint epoch, acc_t* v) {
  clr_words u;
  const uint tag = (uint)(w[0] >> 32);
  uint same = 1u;
#pragma unroll
  for (uint k = 0; k < LB_WORDS; ++k) {
    u.w[k] = (uint)w[k];
    same &= (uint)((uint)(w[k] >> 32) == tag);
  }
  if (!same || (tag >> 2) != epoch) return 0u;
  *v = u.a;
  return tag & 3u;
}

// Loads tile's descriptor's words into w, for lb_decode.
inline void lb_load_words(__global ulong* desc, uint tile, ulong* w) {
  volatile __global ulong* p = (volatile __global ulong*)desc + (size_t)tile * LB_WORDS;
#pragma unroll
  for (uint k = 0; k < LB_WORDS; ++k) w[k] = lb_load(p + k);
}

// Reads tile's descriptor (lb_decode's status and value).
inline uint lb_read(__global ulong* desc, uint tile, uint epoch, acc_t* v) {
  ulong w[LB_WORDS];
  lb_load_words(desc, tile, w);
  return lb_decode(w, epoch, v);
}

#endif  // CLR_LOOKBACK_H
