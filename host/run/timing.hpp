// timing.hpp: the one clock and the one repetition loop behind every timed figure: device runs
// (kernel time from profiling events, wall time from the host clock), the OpenMP peers and the
// copy ceiling. Repetition counters are 64-bit, so warm-up + repeat cannot overflow.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "clreduce/cl.hpp"

namespace clreduce {

// Milliseconds on the host's steady clock (for differences only).
double now_ms();

// Median of a non-empty vector.
double median(std::vector<double> v);

// The median, fastest and slowest of a non-empty set of times.
struct Spread {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
};
Spread spread(const std::vector<double>& v);

// A timing whose slowest run took more than kNoisySpread times its fastest is noisy: its median is
// not to be trusted, and no ratio against it is quoted. With one run, or no time, there is no
// spread to judge.
constexpr double kNoisySpread = 4.0;
inline bool noisy_spread(double min, double max) { return min > 0 && max > kNoisySpread * min; }

// Kernel time of one run in ms: the sum of the profiling-event durations of its launches; NaN
// where an event's queue does not profile (a program's own queue, run on directly).
double events_ms(std::vector<cl::Event>& events);

// One timed run: kernel time (profiling events; the call's wall time where there are none),
// wall time on the host clock, launches.
struct Sample {
  double kernel_ms = 0.0;
  double wall_ms = 0.0;
  std::size_t launches = 0;
};

// Calls run() `warmup` times, then max(repeat, 1) times, and returns the samples of the latter.
template <class Run>
std::vector<Sample> repeat_runs(std::uint64_t warmup, std::uint64_t repeat, Run&& run) {
  for (std::uint64_t r = 0; r < warmup; ++r) run();
  std::vector<Sample> timed;
  const std::uint64_t count = std::max<std::uint64_t>(repeat, 1);
  timed.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, 1u << 20)));
  for (std::uint64_t r = 0; r < count; ++r) timed.push_back(run());
  return timed;
}

// Times fn() on the host clock: a Sample whose kernel and wall times are both the call's.
template <class Fn> Sample time_call(Fn&& fn) {
  const double t0 = now_ms();
  fn();
  const double ms = now_ms() - t0;
  return Sample{ms, ms, 0};
}

}  // namespace clreduce
