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
  kInterrupted,  // the program's interrupt check (set_interrupt_check) asked the call to stop
};

// "usage", "input", "runtime", "timeout", "build", "unsupported", "internal", "interrupted".
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

// Stopping a long call: while a call waits for the device (once a wait has lasted 5 ms) and
// between the chunks of a chunked or streamed array, the library asks this check, when set,
// whether to stop, at most every 20 ms on each thread; calls of a few milliseconds never ask it.
// When it returns true the call enqueues nothing more, waits (within its time limit) for the
// commands it has already enqueued, which may be reading or writing the caller's memory, and
// throws Error(Errc::kInterrupted); the Device stays usable. With a check set, a chunked array
// keeps at most 4 chunks enqueued ahead of the device, so the wait is for those alone. One
// kernel launch is never cut short, nor is a kernel build. The check is called on the thread
// that made the call; it must be thread-safe where calls run on several threads at once, must
// not throw and must not call the library. A Python binding checks for Ctrl-C here. nullptr
// (the default) removes it.
using InterruptCheck = bool (*)();
CLREDUCE_API void set_interrupt_check(InterruptCheck check);

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
