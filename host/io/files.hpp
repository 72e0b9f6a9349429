// files.hpp: the files clreduce reads (arrays, flags, kernel sources) and writes (--output), opened
// so that no file can hang a run or be left half written. Only regular files are read: a FIFO with
// no writer, a device or a directory is refused by its type before it is opened, and the open
// itself never blocks. A file is written through a temporary file beside it, synced and renamed
// into place only when complete, so the target holds either its old content or the whole new one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <string_view>
#include <vector>
#include "clreduce/types.hpp"

#include "clreduce/error.hpp"

namespace clreduce {

// A regular file open for reading. Messages name the file as `role` and the path ("kernel source
// cl/x.cl"; with no role, they start with the path) and carry `category`:
//   "cannot open NAME: No such file or directory", "NAME: not a regular file (a FIFO)".
class InputFile {
 public:
  InputFile(const std::string& path, Errc category, const std::string& role = "");
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // The size when opened.
  std::uint64_t size() const { return size_; }
  // Reads exactly n bytes at offset; a short read (the file shrank) or an I/O error throws.
  void read_at(std::uint64_t offset, void* dst, std::uint64_t n) const;
  // Maps [offset, offset + n) of the file copy-on-write (the file is never written) into `to`,
  // a view unmapped when released: pages are read as they are touched, so a large input is not
  // held twice. Returns false (to untouched) where the file cannot be mapped (or 64 mappings are
  // live). A file truncated while it is mapped faults (SIGBUS) where its lost pages are read, in
  // any thread: while a mapping lives, such a fault writes "clreduce: NAME: the file changed size
  // while being read" to stderr and ends the process with exit code 2 (bad input); any other
  // SIGBUS takes the action it had before.
  bool map(std::uint64_t offset, std::uint64_t n, Bytes& to) const;
  // Reads from offset to the end of the file.
  std::string read_rest(std::uint64_t offset) const;
  // How messages name the file.
  const std::string& name() const { return name_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;

  int fd_ = -1;
  std::uint64_t size_ = 0;
  Errc category_;
  std::string name_;
};

// The whole of a regular file, as InputFile opens it.
std::string read_regular_file(const std::string& path, Errc category, const std::string& role = "");

// Checks, before any work, that path can be written as an output file: it is not a directory,
// a FIFO or any other non-regular file, an existing file is writable, its directory exists and a
// new file can be created there (one is created and removed). Throws Error(Errc::kUsage) saying
// which: "cannot write PATH: directory D does not exist".
void check_output_path(const std::string& path);

// The write(2) that write_file_atomically calls: tests swap in one that fails like a full disk.
using WriteFn = long (*)(int fd, const void* data, std::size_t n);

// Writes the concatenation of pieces to path: into a new temporary file in path's directory
// (".NAME.tmp-PID-K"), checking every write, fsync, then renamed over path (keeping an existing
// file's permissions). On any failure the temporary file is removed, path is untouched, and
// Error(Errc::kInput) says what failed ("cannot write PATH: No space left on device"). Any signal
// that ends the process (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGPIPE,
// SIGXCPU, SIGXFSZ, SIGABRT, a fault, and any other whose action is the default: terminate) that
// arrives during the write removes the temporary file, runs the handler the process had for it, if
// any, and then ends the process by that signal: a handler that returns (LLVM's for SIGQUIT) does
// not let the write go on without its file. Ignored signals stay ignored. Refuses a path that
// check_output_path() refuses.
void write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces,
                           WriteFn write = nullptr);

}  // namespace clreduce
