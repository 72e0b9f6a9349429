// pocl_affinity.hpp: asks PoCL's CPU driver to pin its worker threads, one to a core
// (POCL_AFFINITY=1), unless the user chose (POCL_AFFINITY set) or the process may not run on
// every core.
//
// Why: PoCL's workers sleep between launches and the kernel wakes each where it last ran. On the
// 2-core development machine both workers often settled on one core for a whole process, and
// `fast` at 2^24 int32 then ran at half speed in that process and not in the next (1.4-1.8 ms
// against 0.7-1.0 ms, 7 of 10 processes slow): the table swung with where the threads woke.
// Pinned, its ratio to OpenMP went from 0.75x-1.29x per process to 1.17x-1.50x (docs/PERF.md,
// "2 cores").
//
// How: PoCL reads the variable when it starts its workers (the first OpenCL call), so a setenv()
// before that call is enough. PoCL pins its worker i to CPU i and aborts if it may not, so the
// variable is set only where the process's affinity mask holds every CPU the system has (no
// cpuset, taskset or container limit). The library never sets it: only the clreduce program.
#pragma once

#ifdef __linux__
#include <sched.h>
#include <unistd.h>
#endif

#include <cstdlib>

namespace clreduce {

// Call in main() before the first OpenCL call. Returns whether it set POCL_AFFINITY.
inline bool pin_pocl_workers() {
#ifdef __linux__
  if (std::getenv("POCL_AFFINITY")) return false;
  const long conf = sysconf(_SC_NPROCESSORS_CONF), onln = sysconf(_SC_NPROCESSORS_ONLN);
  const long cpus = conf > onln ? conf : onln;
  if (cpus < 1 || cpus > CPU_SETSIZE) return false;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return false;
  for (long c = 0; c < cpus; ++c)
    if (!CPU_ISSET(static_cast<int>(c), &mask)) return false;
  return setenv("POCL_AFFINITY", "1", 0) == 0;
#else
  return false;
#endif
}

}  // namespace clreduce
