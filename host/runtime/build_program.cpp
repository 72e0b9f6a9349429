// build_program.cpp: a quiet build, its log under --verbose, and a message (not a silent exit)
// when the compiler ends the process during the build.
#include "runtime/build_program.hpp"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <vector>

#include "clreduce/error.hpp"
#include "io/text.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/quiet_stderr.hpp"

namespace clreduce {
namespace {

// The build in progress (the last one begun, where threads build at once), for the exit handler.
struct Building {
  const std::string* label;
  QuietStderr* quiet;
};
std::atomic<Building*> building{nullptr};
std::atomic<CompilerExitHandler> compiler_exit_handler{nullptr};

// Run by exit(): when it was called from inside a build, the compiler ended the process. Puts
// stderr back and says what was being built, what the compiler said (its first line: LLVM's
// "LLVM ERROR: IO failure on output stream: No space left on device") and, where it can be seen,
// what is wrong with the kernel cache.
void on_exit_in_build() {
  Building* b = building.exchange(nullptr);
  if (!b) return;
  b->quiet->restore();
  std::string said = b->quiet->text();
  const std::size_t start = said.find_first_not_of(" \n\r\t");
  said = start == std::string::npos ? "" : said.substr(start);
  said = said.substr(0, said.find('\n'));
  const std::string cache = pocl_cache_problem();
  const Error e(Errc::kBuild,
                "the OpenCL compiler ended the process while building " + *b->label +
                    (said.empty() ? "" : " (" + printable(said) + ")") + "; " +
                    (cache.empty() ? "its kernel cache may be full or not writable (PoCL's: "
                                     "POCL_CACHE_DIR, default ~/.cache/pocl)"
                                   : cache));
  if (const CompilerExitHandler handler = compiler_exit_handler.load()) handler(e);
  std::cerr << "clreduce: " << e.what() << "\n";
  std::cerr.flush();
}

// Marks a build in progress for its scope.
class InBuild {
 public:
  InBuild(const std::string& label, QuietStderr& quiet) : b_{&label, &quiet} {
    static std::once_flag registered;
    std::call_once(registered, [] { std::atexit(on_exit_in_build); });
    prev_ = building.exchange(&b_);
  }
  ~InBuild() {
    Building* expected = &b_;
    building.compare_exchange_strong(expected, prev_);
  }
  InBuild(const InBuild&) = delete;
  InBuild& operator=(const InBuild&) = delete;

 private:
  Building b_;
  Building* prev_ = nullptr;
};

}  // namespace

void set_compiler_exit_handler(CompilerExitHandler handler) {
  compiler_exit_handler.store(handler);
}

void build_program(cl::Program& program, const cl::Device& device, const std::string& options,
                   bool verbose, const std::string& label) {
  const auto show_log = [&] {
    if (!verbose) return;
    std::string log;
    try {
      log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device);
    } catch (const cl::Error&) {
      return;
    }
    while (!log.empty() && (log.back() == '\n' || log.back() == ' ' || log.back() == '\0'))
      log.pop_back();
    if (log.find_first_not_of(" \n\t\r") != std::string::npos)
      std::cerr << "build log of " << label << " " << options << ":\n" << log << "\n";
  };
  try {
    QuietStderr quiet;
    const InBuild in_build(label, quiet);
    program.build(std::vector<cl::Device>{device}, options.c_str());
  } catch (const cl::Error&) {
    show_log();
    throw;
  }
  show_log();
}

}  // namespace clreduce
