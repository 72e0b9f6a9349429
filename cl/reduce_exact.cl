// reduce_exact.cl: one launch returns the correctly rounded sum of float or double elements: the
// exact real sum, rounded once to nearest-even, so the bits are the same for any grid, group size,
// chunking or device. The scheme is ExBLAS's (Collange, Defour, Graillat, Iakymchuk 2015):
//  1. Each work-item keeps, per lane, a floating-point expansion of FPE_TERMS doubles. An element
//     is added by a cascade of TwoSums (each term keeps the rounding error of the one before), so
//     nothing is lost; what is left after the last term (non-zero only when the data's bits span
//     more than FPE_TERMS doubles) goes to the superaccumulator. Elements the expansion must not
//     take (|x| >= 2^960, near overflow; 0 < |x| < 2^-960; inf, NaN) and the unaligned head and
//     the tail go there directly.
//  2. The superaccumulator is a fixed-point number of SA_LIMBS 32-bit digits in 64-bit integers
//     in local memory (one per work-group), its unit the type's smallest subnormal (2^-149,
//     2^-1074), so every finite element is an integer in it; a value m * 2^s lands in 3 adjacent
//     limbs by (atomic, integer, hence order-free) additions of pieces below 2^32: 2^31 additions
//     per limb before an int64 could overflow (the host keeps a group below 2^29 elements).
//  3. At the end, each work-item folds its lanes into one expansion, the group folds those in a
//     tree in local memory, and the last expansion is deposited. Each group adds its limbs, after
//     one carry step, into a global superaccumulator with 64-bit atomics; the last group to finish
//     (atomic ticket, as reduce_fast.cl) normalises it and rounds it to T on the device (round
//     half to even, subnormals, overflow to infinity, IEEE's specials), and clears it. After the
//     rounded value it leaves the exact state (the limbs and the flags) for the host to fold the
//     pieces of a larger array exactly and round once.
// Data over a wide range of exponents misses the expansions nearly element by element, and one
// local atomic per element is slow; so the GPU shape gives each work-item its own store in local
// memory (EX_DIRECT, EX_LANE_LIMBS: floats, 16 bins of doubles keyed by exponent; doubles, a
// whole superaccumulator), updated with plain loads and stores and added up once per group.
// The GPU shape tests every vector (a branch taken rarely). The CPU shape, where a test per
// vector costs as much as the additions, works in blocks taken optimistically and redone on the
// careful path when they may not have been exact: doubles through the TwoSum cascade, checked
// once per block; floats added in plain double arithmetic, kept when the block's exponents lie
// in a window where that is exact (Demmel and Hida 2003), then added to the expansions.
// A NaN, or +inf with -inf, gives NaN; an infinity gives itself; an exact zero is +0 (as NumPy's
// sum, which adds from +0, gives it, even for elements that are all -0). Exactness rests on TwoSum being exact when nothing overflows (an overflow leaves
// an inf or NaN, which is seen) and on IEEE subnormals: the device must not flush them (in float
// to double conversions, or double additions). The host checks the whole kernel at start-up on
// inputs with subnormals against its own exact sum, bit for bit, and skips `exact` if it fails.
// Host sets via -D (plus clreduce.h's CLR_TYPE, 4 or 5; CLR_OP must be 0, sum):
#ifndef CLREDUCE_H
#include "clreduce.h"
#endif
#include "clr_types.h"
#ifndef WG_SIZE
#define WG_SIZE 256  // work-items per group; any size the device accepts
#endif
#ifndef EXACT_CPU
#define EXACT_CPU 0  // 0: GPU shape (grid-stride vectors), 1: CPU shape (a contiguous run each)
#endif
#ifndef VEC
#define VEC 4  // elements per vector load: 1, 2, 4, 8 or 16
#endif
#ifndef UNROLL
#define UNROLL 4  // GPU shape: vector loads in flight per loop step
#endif
#ifndef STREAMS
#define STREAMS 1  // CPU shape: far-apart parts of a run read side by side, each its own expansions
#endif
#ifndef FPE_TERMS
#define FPE_TERMS 2  // doubles per expansion: 2, 3 or 4
#endif
#ifndef EX_BLOCK_LOG2
#define EX_BLOCK_LOG2 6  // CPU shape: 2^this loop steps (STREAMS vectors each) per block
#endif
#define EX_BLOCK (1u << EX_BLOCK_LOG2)
#ifndef EX_SKIP
#define EX_SKIP 7  // CPU shape: blocks taken straight to the careful path after one that failed
#endif

#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#if CLR_TYPE == 4
typedef uint TB;   // an element's bits
#define T_PREC 24  // significand bits
#define T_EXP_BITS 8
#define SA_UNIT_SHIFT 925  // the unit 2^-149 is 2^925 double units (2^-1074)
#define SA_LIMBS 12        // 384 bits: 2^-149 up to beyond 2^128 * 2^64
#define AS_T(b) as_float((uint)(b))
#define TB_NAME uint
#else
typedef ulong TB;
#define T_PREC 53
#define T_EXP_BITS 11
#define SA_UNIT_SHIFT 0
#define SA_LIMBS 68  // 2176 bits: 2^-1074 up to beyond 2^1024 * 2^64
#define AS_T(b) as_double((ulong)(b))
#define TB_NAME ulong
#endif
#define T_MAX_BIASED ((1 << T_EXP_BITS) - 1)  // the biased exponent of inf and NaN

#if VEC == 1
typedef T VT;       // one load
typedef double DV;  // its elements as doubles, one lane each
typedef TB VB;      // its bits
typedef long LV;    // a DV's bits, or a comparison of DVs (0 or 1)
#define CONVERT_DV convert_double
#define AS_LV as_long
#define AS_VB CLR_CAT(as_, TB_NAME)
#define EX_ANY(c) (c)
#define EX_ANYI(c) (c)
#else
typedef CLR_VEC(T_NAME, VEC) VT;
typedef CLR_VEC(double, VEC) DV;
typedef CLR_VEC(TB_NAME, VEC) VB;
typedef CLR_VEC(long, VEC) LV;  // a DV's bits, or a comparison of DVs (0 or -1 per lane)
#define CONVERT_DV CLR_CONVERT_VEC(double, VEC)
#define AS_LV CLR_AS_VEC(long, VEC)
#define AS_VB CLR_AS_VEC(TB_NAME, VEC)
// Whether any lane of a comparison is set: its lanes narrowed to bytes and read as one integer
// (a branch-free any(), which compilers turn into a mask test).
inline int ex_any2(long2 m) { return as_ushort(convert_char2(m)) != 0; }
inline int ex_any4(long4 m) { return as_uint(convert_char4(m)) != 0u; }
inline int ex_any8(long8 m) { return as_ulong(convert_char8(m)) != 0ul; }
inline int ex_any16(long16 m) {
  const ulong2 w = as_ulong2(convert_char16(m));
  return (w.x | w.y) != 0ul;
}
#define EX_ANY(c) CLR_CAT(ex_any, VEC)(c)
// The same for a comparison of 32-bit lanes.
inline int ex_anyi2(int2 m) { return as_ushort(convert_char2(m)) != 0; }
inline int ex_anyi4(int4 m) { return as_uint(convert_char4(m)) != 0u; }
inline int ex_anyi8(int8 m) { return as_ulong(convert_char8(m)) != 0ul; }
inline int ex_anyi16(int16 m) {
  const ulong2 w = as_ulong2(convert_char16(m));
  return (w.x | w.y) != 0ul;
}
#define EX_ANYI(c) CLR_CAT(ex_anyi, VEC)(c)
#endif
typedef union {
  DV v;
  double s[VEC];
} ex_lanes;
typedef union {
  VB v;
  TB s[VEC];
} ex_bits;

// Flags: what the result must say besides the finite sum.
#define EX_NAN 1u
#define EX_PINF 2u
#define EX_NINF 4u

#if WG_SIZE == 1  // one work-item per group: nothing to race with
#define SA_ADD(p, v) (*(p) += (v))
#define FLAG_OR(p, v) (*(p) |= (v))
#else
#define SA_ADD(p, v) atom_add((p), (v))
#define FLAG_OR(p, v) atomic_or((p), (v))
#endif

// Adds (neg ? -1 : 1) * m * 2^s units to the superaccumulator: m < 2^53, three pieces < 2^32.
inline void sa_add(__local long* sa, ulong m, uint s, uint neg) {
  const uint k = s >> 5, r = s & 31u;
  const ulong lo = m << r;
  const ulong hi = r ? m >> (64u - r) : 0ul;
  long p0 = (long)(lo & 0xFFFFFFFFul), p1 = (long)(lo >> 32), p2 = (long)hi;
  if (neg) {
    p0 = -p0;
    p1 = -p1;
    p2 = -p2;
  }
#if WG_SIZE == 1
  // Plain additions (adding a zero piece costs less than a mispredicted branch), one limb at a
  // time: volatile keeps a compiler from fusing two into a wide load, which would wait on the
  // narrow stores of the element before (a store-forwarding stall on x86).
  __local volatile long* l = sa + k;
  l[0] += p0;
  l[1] += p1;
  l[2] += p2;
#else  // atomics: skip the zero pieces
  if (p0) SA_ADD(sa + k, p0);
  if (p1) SA_ADD(sa + k + 1, p1);
  if (p2) SA_ADD(sa + k + 2, p2);
#endif
}

// Adds a finite double d, an integer multiple of the unit (an expansion term or what is left of
// one), to the superaccumulator.
inline void sa_add_double(__local long* sa, double d) {
  const ulong b = as_ulong(d);
  const uint e = (uint)(b >> 52) & 0x7FFu;
  ulong m = b & 0xFFFFFFFFFFFFFul;
  if (e) m |= 1ul << 52;
  int s = (int)max(e, 1u) - 1 - SA_UNIT_SHIFT;
  if (s < 0) {  // float units: the low bits dropped here are zero
    m = s > -64 ? m >> (uint)(-s) : 0ul;
    s = 0;
  }
  if (m) sa_add(sa, m, (uint)s, (uint)(b >> 63));
}

// Adds one element, given by its bits (so no float rounding mode or flushing can touch it), to
// the superaccumulator, or records it in *flags when it is inf or NaN.
inline void sa_add_elem(__local long* sa, TB b, uint* flags) {
  const uint neg = (uint)(b >> (8 * sizeof(TB) - 1));
  const uint e = (uint)(b >> (T_PREC - 1)) & (uint)T_MAX_BIASED;
  TB m = b & (((TB)1 << (T_PREC - 1)) - 1);
  if (e == (uint)T_MAX_BIASED) {
    *flags |= m ? EX_NAN : neg ? EX_NINF : EX_PINF;
    return;
  }
  if (e) m |= (TB)1 << (T_PREC - 1);
  sa_add(sa, (ulong)m, max(e, 1u) - 1, neg);
}

// EX_ADD(a, b, one) is a + b, rounded once. With EX_FMA_ADDS it is written fma(a, one, b), one
// being 1.0 passed in at run time (so the compiler cannot turn it back into a + b): the same
// result, issued on the multiply-add units, which CPUs with separate add and FMA pipes
// (AVX-512 on Zen 4, for one) run beside the adders.
#ifndef EX_FMA_ADDS
#define EX_FMA_ADDS 0
#endif
#if EX_FMA_ADDS
#define EX_ADD(a, b, one) fma((a), (one), (b))
#else
#define EX_ADD(a, b, one) ((a) + (b))
#endif

// (a, b) <- (fl(a + b), the rounding error of that addition): a + b unchanged, exactly (TwoSum,
// Knuth; no branch, no assumption on which is larger). Half the additions through EX_ADD.
#define EX_TWO_SUM(TY, a, b, one)                               \
  do {                                                          \
    const TY s_ = (a) + (b);                                    \
    const TY bb_ = EX_ADD(s_, -(a), (TY)(one));                 \
    const TY da_ = (a) - (s_ - bb_);                            \
    (b) = EX_ADD(da_, EX_ADD((b), -bb_, (TY)(one)), (TY)(one)); \
    (a) = s_;                                                   \
  } while (0)

// The lanes of t that the expansions e[0..FPE_TERMS) may take: |x| < 2^960 (finite, far from
// overflow) and, for doubles, |x| >= 2^-960 or a zero (by its bits: a flushed subnormal is not).
inline LV ex_fits(VT t) {
  const DV mag = fabs(CONVERT_DV(t));
#if CLR_TYPE == 4
  return mag < 0x1p960;  // every finite float fits (2^-149 <= |x| < 2^128); not inf, NaN
#else
  return (mag < 0x1p960) & ((mag >= 0x1p-960) | ((AS_VB(t) << 1) == (VB)0));
#endif
}

// Adds the VEC elements of t to the expansions e (one per lane) and ORs into *bad, per lane, the
// bits of what may not have been exact: what is left after the last term (its bits, sign aside,
// are zero exactly when it is 0), and (doubles) all bits where an element is 2^960 or more, kept
// out of the expansions so that they never come near overflow. Where *bad ends non-zero, the
// caller restores the expansions and takes the careful path. No other test is needed: an inf or
// NaN element, or any overflow inside a TwoSum, leaves an inf or NaN behind; subnormals are exact
// in TwoSum (the start-up check would catch a device that flushes them).
inline void ex_try(DV* e, VT t, double one, LV* bad) {
  DV r = CONVERT_DV(t);
#if CLR_TYPE == 5
  *bad |= (LV)(!(fabs(r) < 0x1p960));
#endif
#pragma unroll
  for (uint k = 0; k < FPE_TERMS; ++k) EX_TWO_SUM(DV, e[k], r, one);
  *bad |= AS_LV(r) << 1;
}

// Adds the VEC elements of t to the expansions e exactly: what does not fit goes to sa.
inline void ex_add_vec(DV* e, VT t, __local long* sa, uint* flags) {
  if (EX_ANY(!ex_fits(t))) {  // each lane's element to the superaccumulator, by its bits
    ex_bits b;
    b.v = AS_VB(t);
#pragma unroll
    for (uint j = 0; j < VEC; ++j) sa_add_elem(sa, b.s[j], flags);
    return;
  }
  DV r = CONVERT_DV(t);
#pragma unroll
  for (uint k = 0; k < FPE_TERMS; ++k) EX_TWO_SUM(DV, e[k], r, 1.0);
  if (EX_ANY(r != (DV)0.0)) {  // the expansion is full: keep what is left
    ex_lanes l;
    l.v = r;
#pragma unroll
    for (uint j = 0; j < VEC; ++j)
      if (l.s[j] != 0.0) sa_add_double(sa, l.s[j]);
  }
}

// Adds the lanes of r, finite doubles below 2^1000 that are multiples of the unit, to the
// expansions e exactly: what does not fit goes to sa.
inline void ex_add_dv(DV* e, DV r, __local long* sa) {
#pragma unroll
  for (uint k = 0; k < FPE_TERMS; ++k) EX_TWO_SUM(DV, e[k], r, 1.0);
  if (EX_ANY(r != (DV)0.0)) {
    ex_lanes l;
    l.v = r;
#pragma unroll
    for (uint j = 0; j < VEC; ++j)
      if (l.s[j] != 0.0) sa_add_double(sa, l.s[j]);
  }
}

// Adds a double (an expansion term) to the scalar expansion f; what does not fit goes to sa.
inline void ex_add_scalar(double* f, double r, __local long* sa) {
#pragma unroll
  for (uint k = 0; k < FPE_TERMS; ++k) EX_TWO_SUM(double, f[k], r, 1.0);
  if (r != 0.0) sa_add_double(sa, r);
}

// The work-item's own store: what would otherwise go to the group's superaccumulator through
// local atomics, element by element, on data that the expansions cannot hold (a wide range of
// exponents). Each work-item owns its slots in local memory, laid out slot-major ([slot][item]:
// neighbouring work-items in neighbouring banks whatever slot they touch), so an element costs a
// few integer operations and plain loads and stores; the group adds the slots up once, at the end.
#ifndef EX_DIRECT
#define EX_DIRECT 0  // GPU shape: 1: no expansions, every element into the work-item's store
#endif
#ifndef EX_LANE_LIMBS
#define EX_LANE_LIMBS 0  // GPU shape, doubles: 1: the expansions' leftovers into the store too
#endif
#define EX_NO_FPE (EX_DIRECT && !EXACT_CPU)  // the expansions (and their tree) unused
#ifndef EX_SKIP_GPU
#define EX_SKIP_GPU 16  // GPU shape, expansions store: vectors into the limbs after one that missed
#endif

#if CLR_TYPE == 4 && (EX_DIRECT || EXACT_CPU)
// Floats: 16 bins of doubles, keyed by the top 4 bits of the exponent field (bin k takes biased
// exponents 16k..16k+15; bin 15 also inf and NaN, which a double sum carries as IEEE says). A float
// in bin k is an integer multiple of the bin's unit, 2^(16k - 150) (2^-149 for k = 0), and below
// 2^39 of them, so a double holds the exact sum of 2^14 such (Demmel and Hida's window, fixed in
// advance instead of found): converted to double and added, exactly, with no test. A set of bins
// is flushed to the superaccumulator after BIN_FLUSH elements (rare), so each stays below 2^52
// units. The GPU shape keeps one set per work-item (128 bytes of local memory); the CPU shape one
// per vector lane, so that consecutive elements do not wait on each other's stores.
#define EX_BINS 1
#define BIN_COUNT 16u
#if EXACT_CPU
#define BIN_LANES VEC
#else
#define BIN_LANES 1
#endif
#define BIN_SETS (WG_SIZE * BIN_LANES)
#define BIN_PER_VEC (VEC / BIN_LANES)  // elements per set per vector
#define BIN_FLUSH 8192u                // elements per set between flushes: below 2^52 units
#define BIN_CHUNK 64u                  // sets summed by one work-item at the end: below 2^58
#define BIN_PARTS ((BIN_SETS + BIN_CHUNK - 1) / BIN_CHUNK)
#define BIN_EMPTY 0l  // +0.0: nothing added yet

// Bin k's unit is 2^bin_shift(k) superaccumulator units; bin_scale(k) = 2^(149 - bin_shift(k))
// turns a bin's sum into its integer count of units, exactly.
inline uint bin_shift(uint k) { return k ? 16u * k - 1u : 0u; }
inline double bin_scale(uint k) { return as_double((ulong)(1172u - bin_shift(k)) << 52); }

// Adds the VEC floats of t to the bins at my (my[k * BIN_SETS + lane]).
inline void bin_add_vec(__local long* my, VT t) {
  ex_bits b;
  b.v = AS_VB(t);
  ex_lanes d;
  d.v = CONVERT_DV(t);
#pragma unroll
  for (uint j = 0; j < VEC; ++j) {
    __local long* p = my + ((b.s[j] >> 27) & 15u) * BIN_SETS + (BIN_LANES > 1 ? j : 0u);
    *p = as_long(as_double(*p) + d.s[j]);
  }
}

// A bin's sum as its integer count of units; inf and NaN go to *flags.
inline long bin_units(long bits, uint k, uint* flags) {
  const ulong b = (ulong)bits;
  if (((b >> 52) & 0x7FFul) == 0x7FFul) {
    *flags |= (b << 12) ? EX_NAN : (b >> 63) ? EX_NINF : EX_PINF;
    return 0;
  }
  return convert_long(as_double(b) * bin_scale(k));
}

// Adds u * 2^s units (|u| < 2^63) to the superaccumulator.
inline void sa_add_units(__local long* sa, long u, uint s) {
  if (u) sa_add(sa, (ulong)(u < 0 ? -u : u), s, u < 0);
}

// Empties the work-item's bins into the superaccumulator (every BIN_FLUSH elements per set).
inline void bin_flush(__local long* sa, __local long* my, uint* flags) {
  for (uint k = 0; k < BIN_COUNT; ++k)
    for (uint j = 0; j < BIN_LANES; ++j) {
      __local long* p = my + k * BIN_SETS + j;
      sa_add_units(sa, bin_units(*p, k, flags), bin_shift(k));
      *p = BIN_EMPTY;
    }
}

// The group's bins into the superaccumulator: work-item q takes bin q % 16 of BIN_CHUNK sets.
// After a barrier; integer sums, so the order is free.
inline void bin_merge(__local long* sa, __local long* bins, uint lid, uint* flags) {
  for (uint q = lid; q < BIN_COUNT * BIN_PARTS; q += WG_SIZE) {
    const uint k = q % BIN_COUNT, c = q / BIN_COUNT;
    const uint end = min(c * BIN_CHUNK + BIN_CHUNK, (uint)BIN_SETS);
    long u = 0;
    for (uint i = c * BIN_CHUNK; i < end; ++i) u += bin_units(bins[k * BIN_SETS + i], k, flags);
    sa_add_units(sa, u, bin_shift(k));
  }
}
#endif

#if CLR_TYPE == 5 && !EXACT_CPU && (EX_DIRECT || EX_LANE_LIMBS)
// Doubles: a whole superaccumulator per work-item (SA_LIMBS limbs of 32-bit digits in 64-bit
// integers, 544 bytes of local memory; the GPU shape's groups of doubles are small for it). An
// element adds its 3 pieces with plain loads and stores; a limb takes at most one piece per
// element, so no carry is needed before the group's 2^29 elements.
#define EX_LIMBS 1
#define LIMB_CHUNK 64u
#define LIMB_PARTS ((WG_SIZE + LIMB_CHUNK - 1) / LIMB_CHUNK)

// Adds (neg ? -1 : 1) * m * 2^s units (m < 2^53) to the limbs at my (my[j * WG_SIZE]).
inline void lane_add(__local long* my, ulong m, uint s, uint neg) {
  const uint r = s & 31u;
  const ulong lo = m << r;
  const long hi = (long)((m >> 1) >> (63u - r));  // m >> (64 - r), 0 when r = 0
  const long mask = -(long)neg;                   // (p ^ mask) - mask: p or -p
  __local long* p = my + (s >> 5) * WG_SIZE;
  p[0] += ((long)(lo & 0xFFFFFFFFul) ^ mask) - mask;
  p[WG_SIZE] += ((long)(lo >> 32) ^ mask) - mask;
  p[2 * WG_SIZE] += (hi ^ mask) - mask;
}

// Adds one element, by its bits, to the limbs at my; inf and NaN to *flags.
inline void lane_add_elem(__local long* my, ulong b, uint* flags) {
  const uint e = (uint)(b >> 52) & 0x7FFu;
  ulong m = b & 0xFFFFFFFFFFFFFul;
  if (e == 0x7FFu) *flags |= m ? EX_NAN : (b >> 63) ? EX_NINF : EX_PINF;
  m = e == 0x7FFu ? 0ul : e ? m | (1ul << 52) : m;
  lane_add(my, m, max(e, 1u) - 1u, (uint)(b >> 63));
}

// Adds the VEC elements of t to the limbs at my.
inline void lane_add_vec(__local long* my, VT t, uint* flags) {
  ex_bits b;
  b.v = AS_VB(t);
#pragma unroll
  for (uint j = 0; j < VEC; ++j) lane_add_elem(my, b.s[j], flags);
}

#if !EX_DIRECT
// ex_add_vec with the work-item's limbs in place of the group's superaccumulator: the elements
// the expansions must not take and what is left after the last term go to my. Returns whether
// anything did.
inline int ex_add_vec_lane(DV* e, VT t, __local long* my, uint* flags) {
  if (EX_ANY(!ex_fits(t))) {
    lane_add_vec(my, t, flags);
    return 1;
  }
  DV r = CONVERT_DV(t);
#pragma unroll
  for (uint k = 0; k < FPE_TERMS; ++k) EX_TWO_SUM(DV, e[k], r, 1.0);
  if (EX_ANY(r != (DV)0.0)) {
    ex_lanes l;
    l.v = r;
#pragma unroll
    for (uint j = 0; j < VEC; ++j) {
      const ulong b = as_ulong(l.s[j]);  // finite, a multiple of the unit; 0 adds nothing
      const uint e2 = (uint)(b >> 52) & 0x7FFu;
      const ulong m = (b & 0xFFFFFFFFFFFFFul) | (e2 ? 1ul << 52 : 0ul);
      lane_add(my, m, max(e2, 1u) - 1u, (uint)(b >> 63));
    }
    return 1;
  }
  return 0;
}
#endif

// The group's limbs into the superaccumulator: work-item q takes limb q % SA_LIMBS of
// LIMB_CHUNK work-items. After a barrier.
inline void limb_merge(__local long* sa, __local long* limbs, uint lid) {
  for (uint q = lid; q < SA_LIMBS * LIMB_PARTS; q += WG_SIZE) {
    const uint j = q % SA_LIMBS, c = q / SA_LIMBS;
    const uint end = min(c * LIMB_CHUNK + LIMB_CHUNK, (uint)WG_SIZE);
    long u = 0;
    for (uint i = c * LIMB_CHUNK; i < end; ++i) u += limbs[j * WG_SIZE + i];
    if (u) SA_ADD(sa + j, u);
  }
}
#endif

// Normalises sa[0..SA_LIMBS): limbs below the top in [0, 2^32), the top one signed.
inline void sa_normalise(__local long* sa) {
  long carry = 0;
  for (uint j = 0; j + 1 < SA_LIMBS; ++j) {
    const long v = sa[j] + carry;
    sa[j] = v & 0xFFFFFFFFl;
    carry = v >> 32;  // arithmetic: floor(v / 2^32)
  }
  sa[SA_LIMBS - 1] += carry;
}

inline uint sa_bit(__local const long* sa, uint i) { return (uint)(sa[i >> 5] >> (i & 31u)) & 1u; }

// The result: the specials from flags, else sa (the whole sum, not normalised) rounded to T,
// to nearest, ties to even. Bits of T, as ulong.
inline ulong ex_round(__local long* sa, uint flags) {
  const ulong sign_bit = 1ul << (8 * sizeof(TB) - 1);
  const ulong inf = (ulong)T_MAX_BIASED << (T_PREC - 1);
  if ((flags & EX_NAN) || ((flags & EX_PINF) && (flags & EX_NINF)))
    return inf | (1ul << (T_PREC - 2));
  if (flags & EX_PINF) return inf;
  if (flags & EX_NINF) return sign_bit | inf;
  sa_normalise(sa);
  const ulong sign = sa[SA_LIMBS - 1] < 0 ? sign_bit : 0ul;
  if (sign) {
    for (uint j = 0; j < SA_LIMBS; ++j) sa[j] = -sa[j];
    sa_normalise(sa);
  }
  int t = SA_LIMBS - 1;
  while (t >= 0 && sa[t] == 0) --t;
  if (t < 0) return 0ul;  // an exact zero: +0, as NumPy's sum (which adds from +0) gives
  uint top = 32u * (uint)t + 31u - clz((uint)sa[t]);             // the leading bit
  if (top < T_PREC) {  // below 2^T_PREC units: subnormal or the first binade, exact; bits = value
    return sign | (ulong)sa[0] | (t > 0 ? (ulong)sa[1] << 32 : 0ul);
  }
  const uint lsb = top - (T_PREC - 1);  // the significand is bits lsb..top
  ulong mant = 0;
  for (uint i = top + 1; i-- > lsb;) mant = (mant << 1) | sa_bit(sa, i);
  const uint round = sa_bit(sa, lsb - 1);
  uint sticky = (uint)(sa[(lsb - 1) >> 5] & ((1l << ((lsb - 1) & 31u)) - 1));
  for (uint j = 0; j < ((lsb - 1) >> 5); ++j) sticky |= sa[j] != 0;
  if (round && (sticky || (mant & 1ul))) {
    ++mant;
    if (mant >> T_PREC) {  // rounded up to the next binade
      mant >>= 1;
      ++top;
    }
  }
  const uint biased = top - (T_PREC - 2);
  if (biased >= (uint)T_MAX_BIASED) return sign | inf;  // beyond the largest finite value
  return sign | ((ulong)biased << (T_PREC - 1)) | (mant & ((1ul << (T_PREC - 1)) - 1));
}

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void reduce_exact(
    __global const T* restrict x, ulong n, __global long* gacc, __global volatile uint* gstate,
    __global T* out, double one, ulong first) {
  // gacc[0..SA_LIMBS): the global superaccumulator; gstate[0]: flags, gstate[1]: the ticket.
  // All zero between launches: each launch's last group clears them. one: 1.0 (EX_ADD).
  // out: the result (T), then at byte 8 the exact state (below); 8-byte aligned.
  // first: the range's first element in x (any: the head below takes whatever alignment it has).
  __local long sa[SA_LIMBS];
  __local uint lflags;
  __local int is_last;
#if WG_SIZE > 1 && !EX_NO_FPE
  __local double tree[FPE_TERMS * WG_SIZE];
#endif
#ifdef EX_BINS
  __local long bins[BIN_COUNT * BIN_SETS];
#endif
#ifdef EX_LIMBS
  __local long limbs[SA_LIMBS * WG_SIZE];
#endif
  x += first;
  const uint lid = (uint)get_local_id(0);
  const uint groups = (uint)get_num_groups(0);
  const ulong items = (ulong)groups * WG_SIZE;
  const ulong gid = (ulong)get_global_id(0);
  for (uint j = lid; j < SA_LIMBS; j += WG_SIZE) sa[j] = 0;
  if (lid == 0) lflags = 0u;
#ifdef EX_BINS
  __local long* const my_bins = bins + lid * BIN_LANES;
  for (uint k = 0; k < BIN_COUNT; ++k)
    for (uint j = 0; j < BIN_LANES; ++j) my_bins[k * BIN_SETS + j] = BIN_EMPTY;
  uint binned = 0;  // elements per set since the last flush
#endif
#ifdef EX_LIMBS
  __local long* const my_limbs = limbs + lid;
  for (uint j = 0; j < SA_LIMBS; ++j) my_limbs[j * WG_SIZE] = 0;
#endif
  barrier(CLK_LOCAL_MEM_FENCE);

  uint flags = 0u;
  DV e[STREAMS][FPE_TERMS];
#pragma unroll
  for (uint s = 0; s < STREAMS; ++s)
#pragma unroll
    for (uint k = 0; k < FPE_TERMS; ++k) e[s][k] = (DV)(0.0);

  // Head: the elements before the first VEC-aligned address (none when x starts a buffer);
  // body: nv whole vectors; tail: the < VEC elements after them.
  const ulong misaligned = ((ulong)x / sizeof(T)) % VEC;
  const ulong head = min(n, (ulong)((VEC - misaligned) % VEC));
  const ulong nv = (n - head) / VEC;
  const ulong body_end = head + nv * VEC;
  __global const VT* xv = (__global const VT*)(x + head);
  __global const TB* xb = (__global const TB*)x;
  for (ulong i = gid; i < head; i += items) sa_add_elem(sa, xb[i], &flags);
  for (ulong i = body_end + gid; i < n; i += items) sa_add_elem(sa, xb[i], &flags);

#if EXACT_CPU
  {  // a contiguous run per work-item, read as STREAMS far-apart parts side by side, in blocks
    // of EX_BLOCK steps taken optimistically, with no test per vector; a block where that may
    // not have been exact is done again from its start, vector by vector, on the careful path.
    const ulong per = nv / items + (nv % items != 0);
    ulong v = min(gid * per, nv);
    const ulong end = min(v + per, nv);
    const ulong q = (end - v) / STREAMS;
    uint skip = 0;  // blocks still to take straight to the careful path
    for (ulong b0 = 0; b0 < q; b0 += EX_BLOCK) {
      const ulong b1 = min(b0 + EX_BLOCK, q);
      if (skip) {  // the data was wide a block ago: no optimistic try (the careful path is exact)
        --skip;
      } else {
#if CLR_TYPE == 4
        // Floats: each lane adds its block's floats in plain double arithmetic, which is exact
        // when all of them lie within a window of binades (Demmel and Hida 2003): a float of
        // biased exponent E >= Emin is a multiple of 2^(Emin - 150) and below 2^(Emax - 126), so
        // 2^k of them sum exactly in 53 bits when Emax - Emin <= 29 - k. Per vector: a
        // conversion, an addition and 4 integer operations tracking the extreme exponents.
        DV p[STREAMS];
        VB hi = (VB)0u, lo = (VB)0xFFFFFFFFu;  // of (bits << 1): the exponent in the top byte
#pragma unroll
        for (uint s = 0; s < STREAMS; ++s) p[s] = (DV)(0.0);
        for (ulong i = b0; i < b1; ++i) {
          VT t[STREAMS];
#pragma unroll
          for (uint s = 0; s < STREAMS; ++s) t[s] = xv[v + i + s * q];
#pragma unroll
          for (uint s = 0; s < STREAMS; ++s) {
            p[s] += CONVERT_DV(t[s]);
            const VB b2 = AS_VB(t[s]) << 1;
            hi = max(hi, b2);
            lo = min(lo, b2 - (VB)1u);  // zeros wrap to 255; powers of two read one binade low
          }
        }
        // Largest exponent (255: an inf or NaN was there) and smallest (subnormals count as 1).
        const VB emax = hi >> 24, emin = max(lo >> 24, (VB)1u);
        if (!EX_ANYI(emax > emin + (VB)(29u - EX_BLOCK_LOG2))) {  // 255 never passes
#pragma unroll
          for (uint s = 0; s < STREAMS; ++s) ex_add_dv(e[s], p[s], sa);
          continue;
        }
        // Wider than the window: through the expansions, unless wider than they would hold.
        if (!EX_ANYI(emax > emin + (VB)60u))
#endif
        {  // Each element through the TwoSum cascade; the block is kept when nothing was left
           // over and (doubles) no element was huge (ex_try).
          DV saved[STREAMS][FPE_TERMS];
#pragma unroll
          for (uint s = 0; s < STREAMS; ++s)
#pragma unroll
            for (uint k = 0; k < FPE_TERMS; ++k) saved[s][k] = e[s][k];
          LV bad = (LV)0;
          for (ulong i = b0; i < b1; ++i) {
            VT t[STREAMS];
#pragma unroll
            for (uint s = 0; s < STREAMS; ++s) t[s] = xv[v + i + s * q];
#pragma unroll
            for (uint s = 0; s < STREAMS; ++s) ex_try(e[s], t[s], one, &bad);
          }
          if (!EX_ANY(bad != (LV)0)) continue;
#pragma unroll
          for (uint s = 0; s < STREAMS; ++s)
#pragma unroll
            for (uint k = 0; k < FPE_TERMS; ++k) e[s][k] = saved[s][k];
        }
        skip = EX_SKIP;  // wide data comes in runs: try again EX_SKIP blocks on
      }
#ifdef EX_BINS
      // Floats wider than the expansions hold: the block's elements into the bins.
      for (ulong i = b0; i < b1; ++i)
#pragma unroll
        for (uint s = 0; s < STREAMS; ++s) bin_add_vec(my_bins, xv[v + i + s * q]);
      binned += (uint)(b1 - b0) * STREAMS * BIN_PER_VEC;
      if (binned > BIN_FLUSH - EX_BLOCK * STREAMS * BIN_PER_VEC) {
        bin_flush(sa, my_bins, &flags);
        binned = 0;
      }
#else
      // Rare: the block's elements straight into the superaccumulator, by their bits.
      for (ulong i = b0; i < b1; ++i)
#pragma unroll
        for (uint s = 0; s < STREAMS; ++s) {
          ex_bits b;
          b.v = AS_VB(xv[v + i + s * q]);
#pragma unroll
          for (uint j = 0; j < VEC; ++j) sa_add_elem(sa, b.s[j], &flags);
        }
#endif
    }
    for (v += STREAMS * q; v < end; ++v) ex_add_vec(e[0], xv[v], sa, &flags);
  }
#else
  {  // grid-stride: neighbouring work-items read neighbouring vectors
#if defined(EX_BINS)
#define EX_GPU_ADD(t) bin_add_vec(my_bins, (t))
#elif EX_DIRECT
#define EX_GPU_ADD(t) lane_add_vec(my_limbs, (t), &flags)
#elif defined(EX_LIMBS)  // after a vector the expansions did not hold, EX_SKIP_GPU go straight
#define EX_GPU_ADD(t)                                               \
  do {                                                              \
    if (skip) {                                                     \
      --skip;                                                       \
      lane_add_vec(my_limbs, (t), &flags);                          \
    } else if (ex_add_vec_lane(e[0], (t), my_limbs, &flags)) {      \
      skip = EX_SKIP_GPU;                                           \
    }                                                               \
  } while (0)
    uint skip = 0;
#else
#define EX_GPU_ADD(t) ex_add_vec(e[0], (t), sa, &flags)
#endif
    ulong v = gid;
    for (; v < nv && nv - v > (UNROLL - 1) * items; v += UNROLL * items) {
      VT t[UNROLL];
#pragma unroll
      for (uint k = 0; k < UNROLL; ++k) t[k] = xv[v + k * items];
#pragma unroll
      for (uint k = 0; k < UNROLL; ++k) EX_GPU_ADD(t[k]);
#ifdef EX_BINS
      binned += UNROLL * BIN_PER_VEC;
      if (binned > BIN_FLUSH - UNROLL * BIN_PER_VEC) {  // rare: after BIN_FLUSH elements
        bin_flush(sa, my_bins, &flags);
        binned = 0;
      }
#endif
    }
    for (; v < nv; v += items) EX_GPU_ADD(xv[v]);  // fewer than UNROLL: no flush needed
  }
#endif

  // The work-item's lanes and streams into one expansion f.
  double f[FPE_TERMS];
#pragma unroll
  for (uint k = 0; k < FPE_TERMS; ++k) f[k] = 0.0;
#pragma unroll
  for (uint s = 0; s < STREAMS; ++s) {
    ex_lanes l;
#pragma unroll
    for (uint k = 0; k < FPE_TERMS; ++k) {
      l.v = e[s][k];
#pragma unroll
      for (uint j = 0; j < VEC; ++j)
        if (l.s[j] != 0.0) ex_add_scalar(f, l.s[j], sa);
    }
  }

#if WG_SIZE > 1 && !EX_NO_FPE
  // The group's expansions, folded pairwise: step w -> h = ceil(w / 2) adds f of lid + h to lid's.
#pragma unroll
  for (uint k = 0; k < FPE_TERMS; ++k) tree[k * WG_SIZE + lid] = f[k];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint w = WG_SIZE; w > 1;) {
    const uint h = (w + 1) / 2;
    if (lid + h < w) {
#pragma unroll
      for (uint k = 0; k < FPE_TERMS; ++k) {
        const double r = tree[k * WG_SIZE + lid + h];
        if (r != 0.0) ex_add_scalar(f, r, sa);
      }
#pragma unroll
      for (uint k = 0; k < FPE_TERMS; ++k) tree[k * WG_SIZE + lid] = f[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    w = h;
  }
#elif WG_SIZE > 1
  barrier(CLK_LOCAL_MEM_FENCE);  // every work-item's store written before the merge reads it
#endif
#ifdef EX_BINS
  bin_merge(sa, bins, lid, &flags);
#endif
#ifdef EX_LIMBS
  limb_merge(sa, limbs, lid);
#endif
  if (lid == 0) {
#pragma unroll
    for (uint k = 0; k < FPE_TERMS; ++k)
      if (f[k] != 0.0) sa_add_double(sa, f[k]);
  }
  if (flags) FLAG_OR(&lflags, flags);
  barrier(CLK_LOCAL_MEM_FENCE);

  // The group's limbs into the global superaccumulator, after one carry step (each limb keeps
  // its low 32 bits and takes the high bits of the one below): every addition is below 2^33.
  for (uint j = lid; j < SA_LIMBS; j += WG_SIZE) {
    long v = j + 1 < SA_LIMBS ? (sa[j] & 0xFFFFFFFFl) : sa[j];
    if (j > 0) v += sa[j - 1] >> 32;
    if (v) atom_add(gacc + j, v);
  }
  if (lid == 0 && lflags) atomic_or(gstate, lflags);
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    mem_fence(CLK_GLOBAL_MEM_FENCE);  // the additions are done before the ticket is taken
    is_last = atomic_inc(gstate + 1) == groups - 1;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (!is_last) return;  // uniform across the group

  mem_fence(CLK_GLOBAL_MEM_FENCE);
  // The launch's exact state after its rounded result, for a fold of pieces (chunks, devices,
  // ranks) on the host: the global superaccumulator's limbs as they are (not normalised) at
  // byte 8 of out, then the flags as a long: 8 + 8 * (SA_LIMBS + 1) bytes of out in all.
  __global long* const state = (__global long*)((__global uchar*)out + 8);
  for (uint j = lid; j < SA_LIMBS; j += WG_SIZE) {
    sa[j] = atom_xchg(gacc + j, 0l);
    state[j] = sa[j];
  }
  if (lid == 0) {
    lflags = atomic_xchg(gstate, 0u);
    state[SA_LIMBS] = (long)lflags;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    const ulong bits = ex_round(sa, lflags);
    out[0] = AS_T(bits);
    atomic_xchg(gstate + 1, 0u);  // ready for the next launch
  }
}
