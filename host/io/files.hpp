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

}  // namespace clreduce
