// omp_peer.cpp: OpenMP reductions (static contiguous chunks, SIMD reduction inside each chunk)
// and cache-blocked two-pass inclusive scans (chunk sums, offsets, chunk scans) in one
// parallel region; each timed as the median of `repeat` runs after `warmup` runs.
#include "omp_peer.hpp"

#include <algorithm>
#include <chrono>
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

// Runs fn() warmup times untimed, then repeat times timed; fn returns the threads it used.
template <class Fn>
PeerTiming time_runs(int warmup, int repeat, Fn&& fn) {
  int threads = 1;
  for (int i = 0; i < warmup; ++i) threads = fn();
  const int runs = std::max(repeat, 1);
  std::vector<double> ms(static_cast<std::size_t>(runs));
  for (double& m : ms) {
    const auto t0 = std::chrono::steady_clock::now();
    threads = fn();
    const auto t1 = std::chrono::steady_clock::now();
    m = std::chrono::duration<double, std::milli>(t1 - t0).count();
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t mid = ms.size() / 2;
  const double median = ms.size() % 2 ? ms[mid] : 0.5 * (ms[mid - 1] + ms[mid]);
  return PeerTiming{median, ms.front(), ms.back(), threads};
}

// First element of part `t` of `parts` contiguous parts of [0, n), rounded to kAlign.
inline std::size_t part_begin(std::size_t n, std::size_t t, std::size_t parts) {
  if (t >= parts) return n;
  const std::size_t per = (n / parts) / kAlign * kAlign;
  return t * per;
}

// Sum of x[0, n) into acc (wrapping for unsigned Acc), conv widening each element.
template <class In, class Acc, class Conv>
int reduce_sum(const In* x, std::size_t n, Acc* out, Conv conv) {
  Acc acc = Acc{0};
  int used = 1;
#ifdef _OPENMP
#pragma omp parallel if (n >= kMinParallel)
  {
#pragma omp master
    used = omp_get_num_threads();
#pragma omp for simd schedule(simd : static) reduction(+ : acc)
    for (std::size_t i = 0; i < n; ++i) acc += conv(x[i]);
  }
#else
  for (std::size_t i = 0; i < n; ++i) acc += conv(x[i]);
#endif
  *out = acc;
  return used;
}

// Sum of x[lo, hi) in Acc, vectorized.
template <class In, class Acc, class Conv>
inline Acc chunk_sum(const In* x, std::size_t lo, std::size_t hi, Conv conv) {
  Acc s = Acc{0};
#ifdef _OPENMP
#pragma omp simd reduction(+ : s)
#endif
  for (std::size_t i = lo; i < hi; ++i) s += conv(x[i]);
  return s;
}

// Inclusive scan of x[lo, hi) into y starting from `carry`; returns the final running value.
template <class In, class Acc, class Out, class Conv>
inline Acc chunk_scan(const In* x, Out* y, std::size_t lo, std::size_t hi, Acc carry, Conv conv) {
  Acc run = carry;
#ifdef _OPENMP
#pragma omp simd reduction(inscan, + : run)
#endif
  for (std::size_t i = lo; i < hi; ++i) {
    run += conv(x[i]);
#ifdef _OPENMP
#pragma omp scan inclusive(run)
#endif
    y[i] = static_cast<Out>(run);
  }
  return run;
}

// Inclusive scan, two passes per block of (threads * kScanBlock) elements inside one parallel
// region: each thread sums its contiguous chunk of the block, then (after one barrier) adds
// the sums of the chunks before it to the block's carry and scans its chunk from there.
// Partial sums are double-buffered by block parity, so one barrier per block suffices.
template <class In, class Acc, class Out, class Conv>
int scan_inclusive(const In* x, std::size_t n, Out* y, Conv conv) {
  int used = 1;
#ifdef _OPENMP
  const int max_threads = omp_get_max_threads();
  std::vector<Acc> partial(2 * static_cast<std::size_t>(max_threads));
#pragma omp parallel if (n >= kMinParallel)
  {
    const std::size_t nt = static_cast<std::size_t>(omp_get_num_threads());
    const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
#pragma omp master
    used = static_cast<int>(nt);
    Acc carry = Acc{0};
    std::size_t parity = 0;
    const std::size_t block = nt == 1 ? n : nt * kScanBlock;
    for (std::size_t base = 0; base < n; base += block, parity ^= 1) {
      const std::size_t len = std::min(block, n - base);
      const std::size_t lo = base + part_begin(len, t, nt);
      const std::size_t hi = t + 1 == nt ? base + len : base + part_begin(len, t + 1, nt);
      Acc* sums = partial.data() + parity * nt;
      if (nt > 1) {
        sums[t] = chunk_sum<In, Acc>(x, lo, hi, conv);
#pragma omp barrier
      }
      // Every thread adds the same sums in the same order, so all agree on the block total.
      Acc offset = carry;
      for (std::size_t k = 0; k < t; ++k) offset += sums[k];
      const Acc end = chunk_scan(x, y, lo, hi, offset, conv);
      if (nt == 1) {
        carry = end;
      } else {
        for (std::size_t k = t; k < nt; ++k) offset += sums[k];
        carry = offset;
      }
    }
  }
#else
  chunk_scan(x, y, 0, n, Acc{0}, conv);
#endif
  return used;
}

}  // namespace

PeerTiming omp_reduce_sum_i32(const std::int32_t* x, std::size_t n, std::int64_t* out, int warmup,
                              int repeat) {
  std::uint64_t acc = 0;
  PeerTiming timing = time_runs(warmup, repeat, [&] { return reduce_sum(x, n, &acc, WidenU64{}); });
  *out = static_cast<std::int64_t>(acc);
  return timing;
}

PeerTiming omp_reduce_sum_f32(const float* x, std::size_t n, float* out, int warmup, int repeat) {
  return time_runs(warmup, repeat, [&] { return reduce_sum(x, n, out, AsFloat{}); });
}

PeerTiming omp_scan_i32_i64(const std::int32_t* x, std::size_t n, std::int64_t* y, int warmup,
                            int repeat) {
  return time_runs(warmup, repeat, [&] {
    return scan_inclusive<std::int32_t, std::uint64_t>(x, n, y, WidenU64{});
  });
}

PeerTiming omp_scan_i32_i32(const std::int32_t* x, std::size_t n, std::int32_t* y, int warmup,
                            int repeat) {
  return time_runs(warmup, repeat, [&] {
    return scan_inclusive<std::int32_t, std::uint32_t>(x, n, y, AsU32{});
  });
}

PeerTiming omp_scan_f32(const float* x, std::size_t n, float* y, int warmup, int repeat) {
  return time_runs(warmup, repeat, [&] {
    return scan_inclusive<float, float>(x, n, y, AsFloat{});
  });
}

}  // namespace clreduce
