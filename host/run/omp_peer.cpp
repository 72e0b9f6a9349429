// omp_peer.cpp: OpenMP reductions (one contiguous chunk per thread, SIMD reduction inside) and
// cache-blocked two-pass inclusive scans (chunk sums, offsets, SIMD chunk scans) in one
// parallel region; each timed as the median of `repeat` runs after `warmup` runs.
#include "run/omp_peer.hpp"

#include <algorithm>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace clreduce {
namespace {

// Below this many elements a parallel region costs more than it saves: run on one thread.
constexpr std::size_t kMinParallel = std::size_t{1} << 15;
// Elements per thread per scan block: both passes over a block hit the thread's cache.
constexpr std::size_t kScanBlock = std::size_t{1} << 15;
// Chunk boundaries are multiples of this many elements (a cache line of int32/float).
constexpr std::size_t kAlign = 16;

// Element-to-accumulator conversions, as function objects so they inline into the SIMD loops.
// int32 -> uint64 sign-extends (sums wrap mod 2^64); int32 -> uint32 wraps mod 2^32.
struct WidenU64 {
  std::uint64_t operator()(std::int32_t v) const {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
  }
};
struct AsU32 {
  std::uint32_t operator()(std::int32_t v) const { return static_cast<std::uint32_t>(v); }
};
struct AsFloat {
  float operator()(float v) const { return v; }
};

// First element of part `t` of `parts` contiguous parts of [0, n); inner edges are multiples
// of kAlign and the last part takes the remainder.
inline std::size_t part_begin(std::size_t n, std::size_t t, std::size_t parts) {
  if (t >= parts) return n;
  const std::size_t per = (n / parts) / kAlign * kAlign;
  return t * per;
}

// Sum of x[lo, hi) in Acc. One SIMD reduction loop over four quarter-streams of the range, so
// four independent vector accumulators hide the add latency (twice the speed in cache for
// float); the < 4 leftover elements are added last.
template <class In, class Acc, class Conv>
inline Acc range_sum(const In* x, std::size_t lo, std::size_t hi, Conv conv) {
  const std::size_t m = (hi - lo) / 4;
  const In* x0 = x + lo;
  const In* x1 = x0 + m;
  const In* x2 = x1 + m;
  const In* x3 = x2 + m;
  Acc a0 = Acc{0}, a1 = Acc{0}, a2 = Acc{0}, a3 = Acc{0};
#ifdef _OPENMP
#pragma omp simd reduction(+ : a0, a1, a2, a3)
#endif
  for (std::size_t k = 0; k < m; ++k) {
    a0 += conv(x0[k]);
    a1 += conv(x1[k]);
    a2 += conv(x2[k]);
    a3 += conv(x3[k]);
  }
  for (std::size_t i = lo + 4 * m; i < hi; ++i) a3 += conv(x[i]);
  return (a0 + a1) + (a2 + a3);
}

// GCC vectorizes OpenMP SIMD scans (reduction(inscan)); Clang 14 cannot and warns, so there
// the scan loop stays a plain loop.
#if defined(_OPENMP) && !defined(__clang__)
#define CLREDUCE_SIMD_SCAN 1
#endif

// Inclusive scan of x[lo, hi) into y starting from `carry` (an OpenMP SIMD inscan loop);
// returns the final running value.
template <class In, class Acc, class Out, class Conv>
inline Acc range_scan(const In* x, Out* y, std::size_t lo, std::size_t hi, Acc carry, Conv conv) {
  Acc run = carry;
#ifdef CLREDUCE_SIMD_SCAN
#pragma omp simd reduction(inscan, + : run)
#endif
  for (std::size_t i = lo; i < hi; ++i) {
    run += conv(x[i]);
#ifdef CLREDUCE_SIMD_SCAN
#pragma omp scan inclusive(run)
#endif
    y[i] = static_cast<Out>(run);
  }
  return run;
}

// True when a parallel region is worth its cost for n elements.
inline bool go_parallel(std::size_t n) {
#ifdef _OPENMP
  return n >= kMinParallel && omp_get_max_threads() > 1;
#else
  (void)n;
  return false;
#endif
}

// Sum of x[0, n) into *out: one contiguous chunk per thread (a static schedule), each summed
// by range_sum; the per-thread partials are added in thread order, so the result is
// deterministic for a given thread count. Returns the threads used.
template <class In, class Acc, class Conv>
int reduce_sum(const In* x, std::size_t n, Acc* out, Conv conv) {
  if (!go_parallel(n)) {
    *out = range_sum<In, Acc>(x, 0, n, conv);
    return 1;
  }
  int used = 1;
#ifdef _OPENMP
  std::vector<Acc> partial(static_cast<std::size_t>(omp_get_max_threads()));
#pragma omp parallel
  {
    const auto nt = static_cast<std::size_t>(omp_get_num_threads());
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    if (t == 0) used = static_cast<int>(nt);
    partial[t] = range_sum<In, Acc>(x, part_begin(n, t, nt), part_begin(n, t + 1, nt), conv);
  }
  Acc acc = Acc{0};
  for (std::size_t k = 0; k < static_cast<std::size_t>(used); ++k) acc += partial[k];
  *out = acc;
#endif
  return used;
}

// Inclusive scan of x[0, n) into y: two passes per block of (threads * kScanBlock) elements,
// all in one parallel region. Pass 1: each thread sums its contiguous chunk of the block.
// After one barrier, each thread adds the sums of the chunks before it to the running carry
// and scans its chunk from there (pass 2 rereads the chunk from the thread's cache). Chunk
// sums are double-buffered by block parity, so one barrier per block suffices. Returns the
// threads used.
template <class In, class Acc, class Out, class Conv>
int scan_inclusive(const In* x, std::size_t n, Out* y, Conv conv) {
  if (!go_parallel(n)) {
    range_scan(x, y, 0, n, Acc{0}, conv);
    return 1;
  }
  int used = 1;
#ifdef _OPENMP
  std::vector<Acc> partial(2 * static_cast<std::size_t>(omp_get_max_threads()));
#pragma omp parallel
  {
    const auto nt = static_cast<std::size_t>(omp_get_num_threads());
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    if (t == 0) used = static_cast<int>(nt);
    Acc carry = Acc{0};
    std::size_t parity = 0;
    const std::size_t block = nt == 1 ? n : nt * kScanBlock;
    for (std::size_t base = 0; base < n; base += block, parity ^= 1) {
      const std::size_t len = std::min(block, n - base);
      const std::size_t lo = base + part_begin(len, t, nt);
      const std::size_t hi = base + part_begin(len, t + 1, nt);
      if (nt == 1) {
        carry = range_scan(x, y, lo, hi, carry, conv);
        continue;
      }
      Acc* sums = partial.data() + parity * nt;
      sums[t] = range_sum<In, Acc>(x, lo, hi, conv);
#pragma omp barrier
      // Every thread adds the same sums in the same order, so all agree on the next carry.
      Acc offset = carry;
      for (std::size_t k = 0; k < t; ++k) offset += sums[k];
      range_scan(x, y, lo, hi, offset, conv);
      for (std::size_t k = 0; k < nt; ++k) carry += sums[k];
    }
  }
#endif
  return used;
}

}  // namespace

PeerTiming omp_reduce_sum_i32(const std::int32_t* x, std::size_t n, std::int64_t* out,
                              std::uint64_t warmup, std::uint64_t repeat) {
  std::uint64_t acc = 0;
  PeerTiming timing = time_peer(warmup, repeat, [&] { return reduce_sum(x, n, &acc, WidenU64{}); });
  *out = static_cast<std::int64_t>(acc);
  return timing;
}

PeerTiming omp_reduce_sum_f32(const float* x, std::size_t n, float* out, std::uint64_t warmup,
                              std::uint64_t repeat) {
  return time_peer(warmup, repeat, [&] { return reduce_sum(x, n, out, AsFloat{}); });
}

PeerTiming omp_scan_i32_i64(const std::int32_t* x, std::size_t n, std::int64_t* y,
                            std::uint64_t warmup, std::uint64_t repeat) {
  return time_peer(warmup, repeat, [&] {
    return scan_inclusive<std::int32_t, std::uint64_t>(x, n, y, WidenU64{});
  });
}

PeerTiming omp_scan_i32_i32(const std::int32_t* x, std::size_t n, std::int32_t* y,
                            std::uint64_t warmup, std::uint64_t repeat) {
  return time_peer(warmup, repeat,
                   [&] { return scan_inclusive<std::int32_t, std::uint32_t>(x, n, y, AsU32{}); });
}

PeerTiming omp_scan_f32(const float* x, std::size_t n, float* y, std::uint64_t warmup,
                        std::uint64_t repeat) {
  return time_peer(warmup, repeat,
                   [&] { return scan_inclusive<float, float>(x, n, y, AsFloat{}); });
}

std::uint64_t omp_scan_depth(std::size_t n, int threads) {
  if (threads <= 1 || !go_parallel(n)) return n;  // one sequential loop
  const auto nt = static_cast<std::uint64_t>(threads);
  const std::uint64_t block = nt * kScanBlock;  // a chunk is at most one block
  const std::uint64_t blocks = (n + block - 1) / block;
  return 2 * std::min<std::uint64_t>(block, n) + blocks * nt + nt + 4;
}

}  // namespace clreduce
