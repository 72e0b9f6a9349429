// error.hpp: the one exception type clreduce throws, and the exit codes it maps to.
// Everything inside throws; main() catches once and prints a single line.
#pragma once

#include <stdexcept>
#include <string>

namespace clreduce {

// Process exit codes, documented in README.md and --help.
enum ExitCode : int {
  kExitOk = 0,
  kExitVerify = 1,       // a device result did not match the sequential reference
  kExitUsage = 2,        // bad command line, bad input file, bad value
  kExitOpenCL = 3,       // OpenCL runtime error, no platform or device
  kExitBuild = 4,        // a kernel failed to build, or the kernel directory is missing
  kExitUnsupported = 5,  // the device cannot run this (no fp64, array larger than max alloc)
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Name of an OpenCL error code ("CL_INVALID_WORK_GROUP_SIZE"), or "CL_ERROR" when unknown.
const char* cl_error_name(int err);

}  // namespace clreduce
