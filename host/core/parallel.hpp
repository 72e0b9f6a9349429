// parallel.hpp: a loop spread over the host's cores on std::thread, for the library's own host
// work on large arrays (filling and copying them, the references' blocks, a scan's carry). The
// library links no OpenMP: a program that uses clreduce keeps its own OpenMP runtime, or none,
// and clreduce's threads live only for the length of one such loop.
#pragma once

#include <cstddef>
#include <functional>

namespace clreduce {

// The threads a host loop uses: the cores this process may run on (its affinity mask), at least 1.
unsigned host_threads();

// Calls f(i) once for every i in [0, n). When `parallel` holds and n > 1, [0, n) is cut into
// host_threads() contiguous ranges (as OpenMP's schedule(static)), each run on its own thread,
// the first on the calling thread; else every i runs on the calling thread, in order. Returns
// when every call has; the first exception a call throws is rethrown here once all have ended.
void parallel_for(std::size_t n, bool parallel, const std::function<void(std::size_t)>& f);

}  // namespace clreduce
