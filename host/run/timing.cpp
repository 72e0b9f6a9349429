// timing.cpp: the steady clock in milliseconds, medians and spreads, profiling-event sums.
#include "run/timing.hpp"

#include <chrono>

namespace clreduce {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

Spread spread(const std::vector<double>& v) {
  Spread s;
  s.median = median(v);
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

double events_ms(std::vector<cl::Event>& events) {
  double ms = 0.0;
  for (auto& e : events)
    ms += static_cast<double>(e.getProfilingInfo<CL_PROFILING_COMMAND_END>() -
                              e.getProfilingInfo<CL_PROFILING_COMMAND_START>()) *
          1e-6;
  return ms;
}

}  // namespace clreduce
