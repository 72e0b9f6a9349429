// build_program.cpp: a quiet build, its log under --verbose, and a message (not a silent exit)
// when the compiler ends the process during the build.
#include "runtime/build_program.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <vector>

#include "clreduce/error.hpp"
#include "io/text.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/quiet_stderr.hpp"

namespace clreduce {
namespace {

// The builds in progress, in the order they began, and the one silence of fd 2 they share:
// threads may build at once, and fd 2 is the process's, so the first build to begin silences it
// and the last to end puts it back (two silences of their own, ending in another order than they
// began, would leave fd 2 on a closed build's file for good). Never destroyed: the exit handler
// may run after static destructors have begun.
struct Builds {
  std::mutex mutex;
  std::vector<const std::string*> labels;
  std::unique_ptr<QuietStderr> quiet;
};
Builds& builds() {
  static auto* b = new Builds;
  return *b;
}
std::atomic<CompilerExitHandler> compiler_exit_handler{nullptr};

// Run by exit(): when it was called from inside a build, the compiler ended the process. Puts
// stderr back and says what was being built, what the compiler said (its first line: LLVM's
// "LLVM ERROR: IO failure on output stream: No space left on device") and, where it can be seen,
// what is wrong with the kernel cache.
void on_exit_in_build() {
  Builds& all = builds();
  const std::lock_guard<std::mutex> lock(all.mutex);
  if (all.labels.empty()) return;
  const std::string* label = all.labels.back();  // the last build begun
  all.quiet->restore();
  std::string said = all.quiet->text();
  const std::size_t start = said.find_first_not_of(" \n\r\t");
  said = start == std::string::npos ? "" : said.substr(start);
  said = said.substr(0, said.find('\n'));
  const std::string cache = pocl_cache_problem();
  const Error e(Errc::kBuild,
                "the OpenCL compiler ended the process while building " + *label +
                    (said.empty() ? "" : " (" + printable(said) + ")") + "; " +
                    (cache.empty() ? "its kernel cache may be full or not writable (PoCL's: "
                                     "POCL_CACHE_DIR, default ~/.cache/pocl)"
                                   : cache));
  if (const CompilerExitHandler handler = compiler_exit_handler.load()) handler(e);
  std::cerr << "clreduce: " << e.what() << "\n";
  std::cerr.flush();
}

// A build in progress for its scope, with fd 2 silenced (shared with the builds beside it).
// Builds on several threads end in any order: each takes itself out of the list, so the handler
// never sees a build that has ended.
class InBuild {
 public:
  explicit InBuild(const std::string& label) : label_(&label) {
    static std::once_flag registered;
    std::call_once(registered, [] { std::atexit(on_exit_in_build); });
    Builds& all = builds();
    const std::lock_guard<std::mutex> lock(all.mutex);
    if (all.labels.empty()) all.quiet = std::make_unique<QuietStderr>();
    all.labels.push_back(label_);
  }
  ~InBuild() {
    Builds& all = builds();
    const std::lock_guard<std::mutex> lock(all.mutex);
    all.labels.erase(std::find(all.labels.begin(), all.labels.end(), label_));
    if (all.labels.empty()) all.quiet.reset();
  }
  InBuild(const InBuild&) = delete;
  InBuild& operator=(const InBuild&) = delete;

 private:
  const std::string* label_;
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
    const InBuild in_build(label);
    program.build(std::vector<cl::Device>{device}, options.c_str());
  } catch (const cl::Error&) {
    show_log();
    throw;
  }
  show_log();
}

}  // namespace clreduce
