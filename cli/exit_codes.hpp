// exit_codes.hpp: the clreduce command's exit codes, documented in docs/CLI.md and --help, and the
// one mapping from the library's error categories to them.
#pragma once

#include "clreduce/error.hpp"

namespace clreduce {

enum ExitCode : int {
  kExitOk = 0,
  kExitVerify = 1,       // a device result did not match the sequential reference
  kExitUsage = 2,        // bad command line, bad value or bad input file
  kExitOpenCL = 3,       // OpenCL runtime error, no OpenCL platform/device, or a device time-out
  kExitBuild = 4,        // a kernel failed to build, no kernel directory, or no kernel cache
  kExitUnsupported = 5,  // the device cannot run this (no fp64, array larger than max alloc)
  // A call stopped by the library's interrupt check (Errc::kInterrupted): 128 + SIGINT. Never
  // returned: the command sets no check, so Ctrl-C ends it by the signal (which a shell reports
  // as 130 too).
  kExitInterrupted = 130,
};

// The exit code for an error of category c. An internal inconsistency exits 1 (a result that
// cannot be trusted), like a failed verification.
inline int exit_code(Errc c) {
  switch (c) {
    case Errc::kUsage:
    case Errc::kInput: return kExitUsage;
    case Errc::kRuntime:
    case Errc::kTimeout: return kExitOpenCL;
    case Errc::kBuild: return kExitBuild;
    case Errc::kUnsupported: return kExitUnsupported;
    case Errc::kInterrupted: return kExitInterrupted;
    case Errc::kInternal: break;
  }
  return kExitVerify;
}

}  // namespace clreduce
