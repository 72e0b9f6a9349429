// kernel_cache.cpp: where PoCL keeps its kernel cache, and a write test of it.
#include "runtime/kernel_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "io/text.hpp"

namespace clreduce {

std::string pocl_cache_dir() {
  const auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  if (const std::string d = env("POCL_CACHE_DIR"); !d.empty()) return d;
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) return x + "/pocl/kcache";
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/pocl/kcache";
  return "/tmp/pocl/kcache";
}

bool is_pocl_platform(const std::string& platform_name) {
  return platform_name.find("Portable Computing Language") != std::string::npos;
}

std::string pocl_cache_problem() {
  namespace fs = std::filesystem;
  const std::string dir = pocl_cache_dir();
  const auto problem = [&](const std::string& what) {
    return "PoCL's kernel cache " + printable(dir) + " " + what +
           "; point POCL_CACHE_DIR at a writable folder with free space (default ~/.cache/pocl)";
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return problem("cannot be made (" + ec.message() + ")");
  if (!fs::is_directory(dir, ec)) return problem("is not a folder");
  // A file of 1 MiB, about what a build of one kernel file writes there at once.
  std::string path = dir + "/.clreduce-write-test-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return problem(std::string("cannot be written (") + std::strerror(errno) + ")");
  const std::vector<char> block(64 * 1024, 0);
  int err = 0;
  for (int k = 0; k < 16 && err == 0; ++k) {
    const ssize_t put = ::write(fd, block.data(), block.size());
    if (put < 0)
      err = errno;
    else if (static_cast<std::size_t>(put) < block.size())
      err = ENOSPC;
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  ::unlink(path.c_str());
  if (err == ENOSPC || err == EDQUOT)
    return problem("is full (" + std::string(std::strerror(err)) + ")");
  if (err != 0) return problem(std::string("cannot be written (") + std::strerror(err) + ")");
  return "";
}

}  // namespace clreduce
