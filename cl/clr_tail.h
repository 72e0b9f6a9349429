// clr_tail.h: how ladder kernels 5-7 finish a work-group's fold once few elements remain (the
// group-fold tails), and kernels 6-7's completely unrolled tree down to that point. Included,
// after clreduce.h, by those kernels and by capabilities_probe.cl, whose probe_tail checks the
// tails at start-up.
#ifndef CLR_TAIL_H
#define CLR_TAIL_H

// The seeds' "unroll the last warp" dropped the barriers and relied on a warp running in
// lock-step through volatile shared memory: a data race on current GPUs, and no meaning in
// OpenCL. The host picks one of these from Context::caps() (trial builds and numeric checks at
// start-up, never extension strings) and sets it with -D:
//   CLR_TAIL 0  barriers all the way down (portable; the default)
//            1  sub-group functions: sub-group 0 folds the last 2*S elements (S its size, anything
//               from 1 to the whole group) with sub_group_barrier between steps; needs the
//               -cl-std option that Capabilities::subgroups_options names
//            2  NVIDIA's warp shuffle through inline PTX (shfl.sync.bfly.b32): work-items 0..31,
//               one full warp, fold the last 64 elements in registers; needs a group size that is
//               a multiple of 32
#ifndef CLR_TAIL
#define CLR_TAIL 0
#endif
#if CLR_TAIL == 1 && defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

#if CLR_TAIL == 2
// v = OP(v, v of the work-item whose lane is lane ^ B), B an immediate (16, 8, 4, 2, 1): the
// accumulator travels as 32-bit words, each through one shfl.sync over the full warp.
#define CLR_SHFL_BFLY(v, B)                                             \
  do {                                                                  \
    clr_words u_, r_;                                                   \
    u_.a = (v);                                                         \
    for (uint k_ = 0; k_ < sizeof(acc_t) / 4; ++k_) {                   \
      uint t_;                                                          \
      asm volatile("shfl.sync.bfly.b32 %0, %1, " #B ", 31, 0xffffffff;" \
                   : "=r"(t_)                                           \
                   : "r"(u_.w[k_]));                                    \
      r_.w[k_] = t_;                                                    \
    }                                                                   \
    (v) = clr_op((v), r_.a);                                            \
  } while (0)
#endif

// Call with every work-item before the barrier that publishes the loaded s[]: the sub-group
// tail records sub-group 0's size in *sg (no assumption about which work-items form it).
inline void clr_tail_setup(__local uint* sg) {
#if CLR_TAIL == 1
  if (get_sub_group_id() == 0 && get_sub_group_local_id() == 0) *sg = get_sub_group_size();
#else
  (void)sg;
#endif
}

// The group folds with work-group barriers while more elements than this remain; uniform.
inline uint clr_tail_limit(__local const uint* sg) {
#if CLR_TAIL == 1
  return 2u * *sg;
#elif CLR_TAIL == 2
  (void)sg;
  return 64u;
#else
  (void)sg;
  return 1u;
#endif
}

// Folds s[0..w), w <= clr_tail_limit(sg), visible to the whole group after a barrier, and
// writes the total to *out from exactly one work-item. Call with every work-item of the group.
inline void clr_tail_fold(__local acc_t* s, uint w, __local const uint* sg, __global acc_t* out) {
  const uint lid = (uint)get_local_id(0);
#if CLR_TAIL == 1
  (void)lid;
  (void)sg;
  if (get_sub_group_id() == 0) {  // uniform within the sub-group
    const uint sl = get_sub_group_local_id();
    for (uint k = w; k > 1;) {
      const uint h = (k + 1) / 2;
      if (sl + h < k) s[sl] = clr_op(s[sl], s[sl + h]);
      sub_group_barrier(CLK_LOCAL_MEM_FENCE);
      k = h;
    }
    if (sl == 0) *out = clr_result(s[0]);
  }
#elif CLR_TAIL == 2
  (void)sg;
  if (lid < 32) {  // warp 0, whole: the group size is a multiple of 32
    acc_t v = lid < w ? s[lid] : clr_identity();
    if (lid + 32 < w) v = clr_op(v, s[lid + 32]);
    CLR_SHFL_BFLY(v, 16);
    CLR_SHFL_BFLY(v, 8);
    CLR_SHFL_BFLY(v, 4);
    CLR_SHFL_BFLY(v, 2);
    CLR_SHFL_BFLY(v, 1);
    if (lid == 0) *out = clr_result(v);
  }
#else
  (void)w;
  (void)sg;
  if (lid == 0) *out = clr_result(s[0]);
#endif
}

// The completely unrolled tree of kernels 6 and 7: folds s[0..W) down to at most `limit`
// elements and returns how many remain. Inlined with W = WG_SIZE (a -D constant, <= 4096) and
// a constant limit, every width below is a constant: twelve straight-line steps, no loop.
inline uint clr_unrolled_fold(__local acc_t* s, const uint W, const uint limit) {
  const uint lid = (uint)get_local_id(0);
  uint w = W;
#define CLR_STEP                                          \
  if (w > limit) {                                        \
    const uint h = (w + 1) / 2;                           \
    if (lid + h < w) s[lid] = clr_op(s[lid], s[lid + h]); \
    barrier(CLK_LOCAL_MEM_FENCE);                         \
    w = h;                                                \
  }
  // Twelve steps, none ending in a semicolon: clang-format would read them as one statement.
  // clang-format off
  CLR_STEP CLR_STEP CLR_STEP CLR_STEP CLR_STEP CLR_STEP
  CLR_STEP CLR_STEP CLR_STEP CLR_STEP CLR_STEP CLR_STEP
#undef CLR_STEP
  return w;
  // clang-format on
}

#endif  // CLR_TAIL_H
