// quiet_stderr.hpp: silences file descriptor 2 for a scope. OpenCL compilers write straight to
// fd 2, behind the program's back: PoCL's clang prints "N warnings generated." or "N errors
// generated." while it builds, and only when its kernel cache is cold. What a build has to say
// belongs to its build log (CL_PROGRAM_BUILD_LOG), which clreduce shows on a failed build and
// under --verbose, so every program build runs inside one of these.
//
// fd 2 belongs to the whole process: while one is alive, every thread's stderr is lost. Keep the
// scope to the build call.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace clreduce {

class QuietStderr {
 public:
  explicit QuietStderr(bool active = true) {
    if (!active) return;
    std::fflush(stderr);
    saved_ = dup(2);
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved_ >= 0 && null >= 0) dup2(null, 2);
    if (null >= 0) close(null);
  }
  ~QuietStderr() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

 private:
  int saved_ = -1;
};

}  // namespace clreduce
