// clr_scan.h: what every scan kernel shares: the seeds' segmented-scan flag operator on
// (value, flag) pairs, and the store that writes one element of a tile together with what the
// host's recursion over tile totals needs (the tile's total, its flag, its first segment start).
// Spliced in after clreduce.h by the host; a kernel compiled alone finds it with -I. Host sets:
//   CLR_SEGMENTED  1: flags mark segment starts, the pair operator is used (default 0)
//   CLR_EXCLUSIVE  1: element i gets OP over the elements before it in its segment (default 0)
#ifndef CLR_SCAN_H
#define CLR_SCAN_H

#ifndef CLR_SEGMENTED
#define CLR_SEGMENTED 0
#endif
#ifndef CLR_EXCLUSIVE
#define CLR_EXCLUSIVE 0
#endif

// heads[g] when tile g holds no segment start.
#define CLR_NO_HEAD 0xFFFFFFFFu

// The seeds' flag operator, left operand first, on the value part:
//   (s_i, f_i) + (s_j, f_j) = (f_j ? s_j : s_i OP s_j, f_i | f_j)
// (the flag part is f_i | f_j). Associative but not commutative, for every OP of clreduce.h:
// its sum, prod, min and max forms. Without CLR_SEGMENTED the flags are 0 and this is OP.
inline acc_t clr_seg_op(acc_t a, acc_t b, uint fb) {
#if CLR_SEGMENTED
  return fb ? b : clr_op(a, b);
#else
  return clr_op(a, b);
#endif
}

// The same operator on a pair held in registers, for kernels that keep pairs together.
typedef struct {
  acc_t v;
  uint f;
} clr_pair;

inline clr_pair clr_pair_identity(void) {
  clr_pair r;
  r.v = clr_identity();
  r.f = 0u;
  return r;
}

inline clr_pair clr_pair_op(clr_pair a, clr_pair b) {
  clr_pair r;
  r.v = b.f ? b.v : clr_op(a.v, b.v);
  r.f = a.f | b.f;
  return r;
}

// Stores element k (0 <= k < m) of this work-group's tile, which starts at element `base` of
// the level's array. excl/ef: the pair over the tile's elements before k (the identity pair for
// k = 0); incl/f: the pair up to and including k; own: k's flag. The work-item storing k = m - 1
// also stores the tile's total and flag. heads[g] receives the tile position of the first segment
// start, or CLR_NO_HEAD: exactly one work-item of the tile writes it. Without CLR_SEGMENTED,
// pass 0 for the flags; tile_flags and heads are not touched.
inline void clr_scan_store(ulong base, uint k, uint m, acc_t excl, uint ef, acc_t incl, uint f,
                           uint own, __global acc_t* y, __global acc_t* totals,
                           __global uchar* tile_flags, __global uint* heads) {
  const size_t g = get_group_id(0);
#if CLR_EXCLUSIVE
  y[base + k] = own ? clr_identity() : excl;
#else
  y[base + k] = incl;
#endif
#if CLR_SEGMENTED
  if (f && !ef) heads[g] = k;
#endif
  if (k == m - 1) {
    totals[g] = incl;
#if CLR_SEGMENTED
    tile_flags[g] = (uchar)(f != 0);
    if (!f) heads[g] = CLR_NO_HEAD;
#endif
  }
}

#endif  // CLR_SCAN_H
