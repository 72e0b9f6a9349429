// clr_cpu_scan.h: the CPU-shaped scan kernels' loops over one contiguous range: its fold into a
// pair (value since its last segment start, any start) and its scan from a running value, with
// 8-lane vector scans of unsegmented ranges and streaming stores where the compiler has them.
// Included, after clreduce.h and clr_scan.h, by scan_cpu_two_pass.cl and scan_cpu_lookback.cl.
// Host sets via -D:
//   LANES         float folds: independent accumulators (8, the default: one vector's lanes)
//   CLR_NT_STORES 1: stream the output past the caches (x86; a host trial build decides)
//   VSCAN         8: vector folds, and vector scans of unsegmented ranges (default); 1: scalar only
#ifndef CLR_CPU_SCAN_H
#define CLR_CPU_SCAN_H
#ifndef LANES
#define LANES 8  // float folds: independent accumulators
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
// id: every lane the identity, as a value the compiler cannot see (clr_cpu_scan reads it through
// a volatile): with a constant zero, LLVM turns each lane shift into a zero-masked expand
// (vpexpandd/q), which on a Zen 5 EPYC made the whole scan 1.8x slower than scalar code; with
// a register it is one lane-shifting permute (valign/vpermt2).
#if CLR_ACC == CLR_INT64 || CLR_ACC == CLR_UINT64 || CLR_ACC == CLR_DOUBLE
typedef ulong8 clr_vmask;  // shuffle2's lane numbers: unsigned, as wide as the lanes
#else
typedef uint8 clr_vmask;
#endif
inline avec clr_vscan(avec v, avec id) {
  v = clr_vop(shuffle2(id, v, (clr_vmask)(0, 8, 9, 10, 11, 12, 13, 14)), v);
  v = clr_vop(shuffle2(id, v, (clr_vmask)(0, 1, 8, 9, 10, 11, 12, 13)), v);
  return clr_vop(shuffle2(id, v, (clr_vmask)(0, 1, 2, 3, 8, 9, 10, 11)), v);
}
#if CLR_NT_STORES
#define CLR_VPUT(i, v) __builtin_nontemporal_store((v), (__global avec*)(y + (i)))
#else
#define CLR_VPUT(i, v) (*(__global avec*)(y + (i)) = (v))
#endif
#endif

// The fold of x[b, e): with segments, only the elements from the range's last segment start on
// count, and *fo says whether there is one.
inline acc_t clr_cpu_fold(__global const T* x, __global const uchar* flags, ulong b, ulong e,
                          uint* fo) {
  uint f = 0u;
#if CLR_SEGMENTED
  // Only the elements from the range's last segment start on count: find it from the end.
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
#if VSCAN == 8 && LANES == 8
  // The 8 accumulators as the lanes of one vector, lane k the a[k] of the loop below (the same
  // values, bit for bit). Written out: PoCL 5 kept a[] in memory and ran that loop one
  // accumulator at a time, a load, an add and a store per element (PoCL 3.1 vectorised it).
  if (i + 8 <= e) {
    avec av = (avec)(clr_identity());
    for (; i + 8 <= e; i += 8) av = clr_vop(av, CONVERT_AVEC(vload8(0, x + i)));
    vstore8(av, 0, a);
  }
#endif
  for (; i + LANES <= e; i += LANES)
    for (uint k = 0; k < LANES; ++k) a[k] = clr_op(a[k], (acc_t)x[i + k]);
  for (uint k = 0; i < e; ++i, ++k) a[k] = clr_op(a[k], (acc_t)x[i]);
  for (uint w = LANES / 2; w > 0; w /= 2)
    for (uint k = 0; k < w; ++k) a[k] = clr_op(a[k], a[k + w]);
  *fo = f;
  return a[0];
#else
  acc_t a = clr_identity();
  ulong i = b;
#if VSCAN == 8
  // 8 lanes at a time, then the lanes in order: integer ops wrap, so any order gives the same
  // value. Written out, as for floats: PoCL 5 ran this loop one element at a time.
  if (i + 8 <= e) {
    avec av = (avec)(a);
    for (; i + 8 <= e; i += 8) av = clr_vop(av, CONVERT_AVEC(vload8(0, x + i)));
    acc_t lanes[8];
    vstore8(av, 0, lanes);
    for (uint k = 0; k < 8; ++k) a = clr_op(a, lanes[k]);
  }
#endif
  for (; i < e; ++i) a = clr_op(a, (acc_t)x[i]);
  *fo = f;
  return a;
#endif
}

// Scans x[b, e) into y[b, e) from the running value `run` (inclusive, or exclusive with
// CLR_EXCLUSIVE; segment starts restart it) and returns the running value after e.
inline acc_t clr_cpu_scan(__global const T* x, __global const uchar* flags, __global acc_t* y,
                          ulong b, ulong e, acc_t run) {
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
  ulong i = b;
#if VSCAN == 8
  // Scalar up to the first element whose address is a multiple of the vector's size (the
  // vector stores, streaming ones above all, need it; a range may start anywhere in a buffer, as
  // a chunk of an array used in place does), then vectors. Where y is not even aligned to its
  // elements no such element comes: the whole range is scalar.
  const ulong vbytes = 8 * sizeof(acc_t);
  const ulong mis = (ulong)(uintptr_t)(y + b) % vbytes;
  const ulong head = mis % sizeof(acc_t) ? e : min(e, b + (vbytes - mis) % vbytes / sizeof(acc_t));
  for (; i < head; ++i) CLR_STEP(i);
  // The carry stays in a vector, every lane alike, and advances by the splat of the vector's
  // own total: lane 7 of clr_vop(runv, v) is clr_vop(runv.s7, v.s7), and so is every lane of
  // the next carry, bit for bit. The loop-carried chain is then one clr_vop per 8 elements (the
  // splat is off it), not an extract, a broadcast and two clr_vops.
  avec runv = (avec)(run);
  volatile acc_t opaque = clr_identity();  // read once, here: see clr_vscan
  const avec id = (avec)(opaque);
  for (; i + 8 <= e; i += 8) {
    const avec v = clr_vscan(CONVERT_AVEC(vload8(0, x + i)), id);
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
  return run;
}

#endif  // CLR_CPU_SCAN_H
