// progress.hpp: one line of progress on stderr ("building kernels: fast (3/12)"), overwritten in
// place, shown only when stderr is a terminal, so pipes, files and tests never see it. The line
// is erased before anything else is printed (call clear() first) and when the object dies.
#pragma once

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace clreduce {

class Progress {
 public:
  explicit Progress(bool wanted) : on_(wanted && isatty(2) == 1) {}
  ~Progress() { clear(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Replaces the line with `what` (cut to the terminal's width).
  void show(const std::string& what) {
    if (!on_) return;
    std::string line = what;
    const std::size_t width = columns();
    if (line.size() >= width) line = line.substr(0, width - 4) + "...";
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  // Erases the line, if one is shown.
  void clear() {
    if (!shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  static std::size_t columns() {
    winsize w{};
    if (ioctl(2, TIOCGWINSZ, &w) == 0 && w.ws_col >= 20) return w.ws_col;
    return 80;
  }
  bool on_;
  bool shown_ = false;
};

}  // namespace clreduce
