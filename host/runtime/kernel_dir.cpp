// kernel_dir.cpp: the search order for .cl sources. Installed kernels are found relative to the
// shared library or executable this code lives in (dladdr), so a moved install prefix still works.
#include "runtime/kernel_dir.hpp"

#include <dlfcn.h>
#if defined(__GLIBC__)
#include <link.h>
#endif

#include <cstdlib>
#include <filesystem>

#include "clreduce/error.hpp"
#include "io/text.hpp"

#ifndef CLREDUCE_SOURCE_KERNEL_DIR
#define CLREDUCE_SOURCE_KERNEL_DIR ""
#endif
#ifndef CLREDUCE_INSTALL_KERNEL_DIR
#define CLREDUCE_INSTALL_KERNEL_DIR ""
#endif
// The installed kernels relative to the installed library's and executable's directories.
#ifndef CLREDUCE_LIB_TO_KERNEL_DIR
#define CLREDUCE_LIB_TO_KERNEL_DIR "../share/clreduce/cl"
#endif
#ifndef CLREDUCE_BIN_TO_KERNEL_DIR
#define CLREDUCE_BIN_TO_KERNEL_DIR "../share/clreduce/cl"
#endif

namespace clreduce {

namespace fs = std::filesystem;

// Empty when dir holds the kernels (a regular file clreduce.h), else why it does not.
static std::string why_not(const std::string& dir) {
  std::error_code ec;
  const fs::file_status d = fs::status(dir, ec);
  if (!fs::exists(d)) return "no such directory";
  if (!fs::is_directory(d)) return "not a directory";
  const fs::file_status h = fs::status(fs::path(dir) / "clreduce.h", ec);
  if (!fs::exists(h)) return "no clreduce.h there";
  if (!fs::is_regular_file(h)) return "its clreduce.h is not a regular file";
  return "";
}

static bool holds_kernels(const std::string& dir) { return !dir.empty() && why_not(dir).empty(); }

std::string installed_kernel_dir() {
  std::error_code ec;
  fs::path module;
  const char* to_kernels = CLREDUCE_BIN_TO_KERNEL_DIR;
  Dl_info info{};
#if defined(__GLIBC__)
  // The link map tells a shared library (its path) from the main program (an empty name; there
  // dladdr would give argv[0], which may be relative or a bare name found on PATH).
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&installed_kernel_dir), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) &&
      map && map->l_name && *map->l_name) {
    module = map->l_name;
    to_kernels = CLREDUCE_LIB_TO_KERNEL_DIR;
  }
#else
  if (dladdr(reinterpret_cast<void*>(&installed_kernel_dir), &info) && info.dli_fname &&
      fs::path(info.dli_fname).is_absolute())
    module = info.dli_fname;
#endif
  if (module.empty()) module = fs::read_symlink("/proc/self/exe", ec);
  if (module.empty() || ec) return "";
  // Through symlinks (lib/libclreduce.so -> libclreduce.so.0.1.0, or a link to the executable
  // from elsewhere) to where the file really is.
  const fs::path real = fs::weakly_canonical(module, ec);
  if (ec) return "";
  return (real.parent_path() / to_kernels).lexically_normal().string();
}

std::string find_kernel_dir(const std::string& flag, bool from_env, const std::string& flag_name) {
  if (!flag.empty()) {
    const std::string why = why_not(flag);
    if (why.empty()) return flag;
    throw Error(Errc::kBuild, "kernel directory not found: tried " + flag_name + " " +
                                  printable(flag) + " (" + why + ")");
  }
  const char* env = from_env ? std::getenv("CLREDUCE_KERNEL_DIR") : nullptr;
  if (env && *env) {
    const std::string why = why_not(env);
    if (why.empty()) return env;
    throw Error(Errc::kBuild, "kernel directory not found: tried CLREDUCE_KERNEL_DIR=" +
                                  printable(env) + " (" + why + ")");
  }
  std::string tried =
      flag_name + " (not given)" +
      (from_env ? ", CLREDUCE_KERNEL_DIR (not set)" : ", CLREDUCE_KERNEL_DIR (not read)");
  for (const std::string& dir : {installed_kernel_dir(), std::string(CLREDUCE_SOURCE_KERNEL_DIR),
                                 std::string(CLREDUCE_INSTALL_KERNEL_DIR)}) {
    if (holds_kernels(dir)) return dir;
    if (!dir.empty() && tried.find(", " + printable(dir)) == std::string::npos)
      tried += ", " + printable(dir);
  }
  throw Error(Errc::kBuild, "kernel directory not found: tried " + tried);
}

}  // namespace clreduce
