// error.hpp: the one exception type the clreduce library throws, with a category. Messages are in
// the library's words; a program (the clreduce CLI among them) maps categories to exit codes.
#pragma once

#include <stdexcept>
#include <string>

#include "clreduce/export.hpp"

namespace clreduce {

// What kind of failure an Error reports.
enum class Errc {
  kUsage,        // a bad argument: unknown name, value out of range, options that conflict
  kInput,        // bad input data: a malformed or unreadable file, flags of the wrong length
  kRuntime,      // the OpenCL runtime failed: no platform or device, an allocation, a launch
  kTimeout,      // the device did not finish within the time limit (it may be hung)
  kBuild,        // a kernel failed to build, or the kernel directory was not found
  kUnsupported,  // the device cannot run this (no fp64, array larger than its largest allocation)
  kInternal,     // clreduce's own consistency check failed (a bug, never a property of the input)
};

// "usage", "input", "runtime", "timeout", "build", "unsupported", "internal".
CLREDUCE_API const char* errc_name(Errc c);

class CLREDUCE_API Error : public std::runtime_error {
 public:
  Error(Errc category, const std::string& what) : std::runtime_error(what), category_(category) {}
  Errc category() const { return category_; }

 private:
  Errc category_;
};

// A device that does not finish within the time limit may still be running, reading and writing
// the buffers (and host memory) it was given: unwinding the stack would free memory under it. The
// library calls this handler, when set, with the timeout's Error before it throws; a program
// usually reports the error and ends at once (std::_Exit) without running destructors. Without a
// handler the Error is thrown, and the caller should end the process soon after.
using TimeoutHandler = void (*)(const Error&);
CLREDUCE_API void set_timeout_handler(TimeoutHandler handler);

// The OpenCL compiler can end the process from inside a kernel build (LLVM's fatal errors call
// exit(): PoCL's kernel cache on a full disk does it). The library then calls this handler, when
// set, with an Error(Errc::kBuild) naming what was being built, what the compiler said and
// what is wrong with the kernel cache; a program usually reports it and ends with its own code
// (std::_Exit). Without a handler the library writes the message to stderr, and the process
// ends with the compiler's status.
using CompilerExitHandler = void (*)(const Error&);
void set_compiler_exit_handler(CompilerExitHandler handler);

// Name of an OpenCL error code ("CL_INVALID_WORK_GROUP_SIZE"), or "CL_ERROR" when unknown.
CLREDUCE_API const char* cl_error_name(int err);

}  // namespace clreduce
