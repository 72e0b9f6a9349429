// parallel.cpp: host_threads() and parallel_for() (parallel.hpp).
#include "core/parallel.hpp"

#ifdef __linux__
#include <sched.h>
#endif

#include <algorithm>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace clreduce {

unsigned host_threads() {
#ifdef __linux__
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0 && CPU_COUNT(&mask) > 0)
    return static_cast<unsigned>(CPU_COUNT(&mask));
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(std::size_t n, bool parallel, const std::function<void(std::size_t)>& f) {
  const std::size_t threads = parallel ? std::min<std::size_t>(host_threads(), n) : 1;
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::mutex failed_mutex;
  std::exception_ptr failed;
  // Range t of `threads`: [n * t / threads, n * (t + 1) / threads).
  const auto run = [&](std::size_t t) {
    try {
      for (std::size_t i = n * t / threads, end = n * (t + 1) / threads; i < end; ++i) f(i);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failed_mutex);
      if (!failed) failed = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  std::size_t started = 1;
  try {
    for (; started < threads; ++started) pool.emplace_back(run, started);
  } catch (const std::system_error&) {
    // No more threads to be had: the ranges not started run here.
  }
  run(0);
  for (std::size_t t = started; t < threads; ++t) run(t);
  for (std::thread& th : pool) th.join();
  if (failed) std::rethrow_exception(failed);
}

}  // namespace clreduce
