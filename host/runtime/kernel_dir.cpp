// kernel_dir.cpp: the search order for .cl sources.
#include "runtime/kernel_dir.hpp"

#include <cstdlib>
#include <filesystem>

#include "clreduce/error.hpp"

#ifndef CLREDUCE_SOURCE_KERNEL_DIR
#define CLREDUCE_SOURCE_KERNEL_DIR ""
#endif
#ifndef CLREDUCE_INSTALL_KERNEL_DIR
#define CLREDUCE_INSTALL_KERNEL_DIR ""
#endif

namespace clreduce {

namespace fs = std::filesystem;

static bool holds_kernels(const std::string& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(fs::path(dir) / "clreduce.h", ec);
}

std::string find_kernel_dir(const std::string& flag) {
  if (!flag.empty()) {
    if (holds_kernels(flag)) return flag;
    throw Error(Errc::kBuild, "kernel directory not found: tried --kernel-dir " + flag +
                                " (no clreduce.h there)");
  }
  if (const char* env = std::getenv("CLREDUCE_KERNEL_DIR"); env && *env) {
    if (holds_kernels(env)) return env;
    throw Error(Errc::kBuild, std::string("kernel directory not found: tried CLREDUCE_KERNEL_DIR=") +
                                env + " (no clreduce.h there)");
  }
  std::string tried = "--kernel-dir (not given), CLREDUCE_KERNEL_DIR (not set)";
  for (const char* dir : {CLREDUCE_SOURCE_KERNEL_DIR, CLREDUCE_INSTALL_KERNEL_DIR}) {
    if (holds_kernels(dir)) return dir;
    if (*dir) tried += std::string(", ") + dir;
  }
  throw Error(Errc::kBuild, "kernel directory not found: tried " + tried);
}

}  // namespace clreduce
