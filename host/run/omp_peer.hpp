// omp_peer.hpp: the OpenMP CPU peer that clreduce is benchmarked against: parallel sum
// reductions and two-pass inclusive scans over all cores, timed as median of repeats.
// Built without OpenMP, every function runs one sequential loop and reports threads = 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "run/timing.hpp"

namespace clreduce {

// Wall-clock times of the timed runs (steady_clock, milliseconds) and the threads used.
struct PeerTiming {
  double ms_median;
  double ms_min;
  double ms_max;
  int threads;
};

// Runs fn() `warmup` times untimed, then max(repeat, 1) times timed on the host clock (the
// harness's loop, timing.hpp); fn returns the threads it used.
template <class Fn> PeerTiming time_peer(std::uint64_t warmup, std::uint64_t repeat, Fn&& fn) {
  int threads = 1;
  std::vector<double> ms;
  for (const Sample& s :
       repeat_runs(warmup, repeat, [&] { return time_call([&] { threads = fn(); }); }))
    ms.push_back(s.wall_ms);
  const Spread sp = spread(ms);
  return PeerTiming{sp.median, sp.min, sp.max, threads};
}

// Sum of int32 accumulated in int64 with wrap-around (NumPy's sum of int32); result in *out.
PeerTiming omp_reduce_sum_i32(const std::int32_t* x, std::size_t n, std::int64_t* out,
                              std::uint64_t warmup, std::uint64_t repeat);
// Sum of float accumulated in float (lane and thread partials are combined in float).
PeerTiming omp_reduce_sum_f32(const float* x, std::size_t n, float* out, std::uint64_t warmup,
                              std::uint64_t repeat);

// Inclusive scan of int32 into int64 with wrap-around (NumPy's cumsum of int32).
PeerTiming omp_scan_i32_i64(const std::int32_t* x, std::size_t n, std::int64_t* y,
                            std::uint64_t warmup, std::uint64_t repeat);
// Inclusive scan of int32 into int32, wrapping modulo 2^32.
PeerTiming omp_scan_i32_i32(const std::int32_t* x, std::size_t n, std::int32_t* y,
                            std::uint64_t warmup, std::uint64_t repeat);
// Inclusive scan of float into float.
PeerTiming omp_scan_f32(const float* x, std::size_t n, float* y, std::uint64_t warmup,
                        std::uint64_t repeat);

// The longest chain of additions behind one output of the scans above on `threads` threads (the
// float error bound's depth): a chunk's sum, the carry over every earlier block's chunk sums,
// the offset of the chunks before it in its block, and its own sequential scan.
std::uint64_t omp_scan_depth(std::size_t n, int threads);

}  // namespace clreduce
