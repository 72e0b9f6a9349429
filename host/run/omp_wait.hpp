// omp_wait.hpp: makes the OpenMP peer's idle threads sleep instead of spin (OMP_WAIT_POLICY =
// passive) unless the user chose a policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT set).
//
// Why: by default libgomp's threads spin after each parallel region (300000 rounds) before they
// sleep. Beside PoCL's own worker threads, on a machine with other work, spinning threads and the
// threads that have work take turns on the cores, and a peer timing swings by three orders of
// magnitude between runs. Passive waiting costs a wake-up per region and keeps timings steadier.
//
// How: libgomp reads its environment once, in its own initialiser, before main() runs; a
// setenv() in main() comes too late, and one from the executable's .preinit_array is undone
// when libc's initialiser resets `environ` to the original block. So a program that is about to
// run the peer sets the variable and executes itself again, once; the second process starts
// with it set and goes on. Linux only (/proc/self/exe); where the exec fails, the program goes
// on with the default policy.
#pragma once

#include <unistd.h>

#include <cstdlib>

namespace clreduce {

// Call first thing in main() of a program that will run the OpenMP peer. Returns only when
// nothing needs doing, or the exec failed.
inline void reexec_with_passive_omp_wait(char** argv) {
#ifdef __linux__
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 0) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OMP_WAIT_POLICY");  // the exec failed: the peer runs under the runtime's default
#else
  (void)argv;
#endif
}

}  // namespace clreduce
