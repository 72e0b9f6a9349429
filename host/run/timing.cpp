// timing.cpp: the steady clock in milliseconds, medians and spreads, profiling-event sums.
#include "run/timing.hpp"

#include <chrono>
#include <limits>

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
  for (auto& e : events) {
    cl_ulong start = 0, end = 0;
    cl_int err =
        clGetEventProfilingInfo(e(), CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(e(), CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
    // A queue without profiling (a program's own, run on directly): no kernel time to give.
    if (err == CL_PROFILING_INFO_NOT_AVAILABLE) return std::numeric_limits<double>::quiet_NaN();
    if (err != CL_SUCCESS) throw cl::Error(err, "clGetEventProfilingInfo");
    ms += static_cast<double>(end - start) * 1e-6;
  }
  return ms;
}

}  // namespace clreduce
