// quiet_stderr.hpp: silences file descriptor 2 for a scope. OpenCL compilers write straight to
// fd 2, behind the program's back: PoCL's clang prints "N warnings generated." or "N errors
// generated." while it builds, and only when its kernel cache is cold. What a build has to say
// belongs to its build log (CL_PROGRAM_BUILD_LOG), which clreduce shows on a failed build and
// under --verbose, so every program build runs inside one of these.
//
// What was written goes to an unnamed temporary file (/dev/null where none can be made), so that
// when the compiler ends the process itself (LLVM's fatal errors call exit()), an exit handler
// can put fd 2 back and show it (build_program.cpp).
//
// fd 2 belongs to the whole process: while one is alive, every thread's stderr is lost. Keep the
// scope to the build call.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace clreduce {

class QuietStderr {
 public:
  explicit QuietStderr(bool active = true) {
    if (!active) return;
    std::fflush(stderr);
    saved_ = dup(2);
    sink_ = std::tmpfile();
    const int fd = sink_ ? fileno(sink_) : open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved_ >= 0 && fd >= 0) dup2(fd, 2);
    if (!sink_ && fd >= 0) close(fd);
  }
  ~QuietStderr() {
    restore();
    if (sink_) std::fclose(sink_);
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

  // Puts fd 2 back (once; also from an exit handler).
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  // The first `max` bytes written to fd 2 while it was silenced ("" where they went to /dev/null).
  std::string text(std::size_t max = 4096) const {
    if (!sink_) return "";
    std::string s(max, '\0');
    const ssize_t got = pread(fileno(sink_), s.data(), max, 0);
    s.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    return s;
  }

 private:
  int saved_ = -1;
  std::FILE* sink_ = nullptr;
};

}  // namespace clreduce
