// npy.hpp: reading and writing NumPy .npy files (format versions 1.0, 2.0, 3.0): 1-D, or of any
// rank up to kMaxNpyDims where the caller asks for the shape.
// Every problem with a file throws Error(Errc::kInput) with one line that starts with the path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clreduce/types.hpp"

namespace clreduce {

// The most dimensions an N-dimensional .npy may have here (NumPy's own limit is 64).
constexpr std::size_t kMaxNpyDims = 32;

// Reads a 1-D C-order .npy of int32/uint32/int64/uint64/float32/float64 in either byte order, as
// host order. read_npy_nd: a C-order array of 0 to kMaxNpyDims dimensions, its elements in C
// order and its shape in *shape (read_npy_stream_nd likewise).
HostArray read_npy(const std::string& path);
HostArray read_npy_nd(const std::string& path, std::vector<std::uint64_t>* shape);

// Reads a .npy as read_npy() does from a stream (a pipe: standard input), named `name` in
// messages, without knowing its size: the preamble and header first (a bad one is refused before
// any data is read; no input at all is "NAME: empty input"), then no more than the data the
// header declares, into memory, then one byte more to refuse trailing data as in a file. Nothing
// is written to disk.
HostArray read_npy_stream(int fd, const std::string& name);
HostArray read_npy_stream_nd(int fd, const std::string& name, std::vector<std::uint64_t>* shape);

// Reads a 1-D C-order .npy of any integer dtype or bool as flags: one byte per element, 1 if
// nonzero else 0.
std::vector<std::uint8_t> read_npy_flags(const std::string& path);

// Writes a little-endian, C-order, 1-D .npy, version 1.0 (2.0 only if the header needs it), through
// write_file_atomically() (io/files.hpp): path holds its old content or the whole new file, never
// a partial one.
void write_npy(const std::string& path, const HostArray& a);
// The same with a shape (any rank, () for one value): its product must be a.n.
void write_npy(const std::string& path, const HostArray& a,
               const std::vector<std::uint64_t>& shape);

// The preamble and header dict write_npy() writes for n elements of type t (little-endian,
// C order, 1-D), padded so that the data starts right after it at a multiple of 64 bytes.
std::string npy_header(DType t, std::uint64_t n);
std::string npy_header(DType t, const std::vector<std::uint64_t>& shape);

// What a .npy's header says, read without touching the data: the element type, the number of
// elements, where the data starts, and whether it is big-endian. Checks everything read_npy()
// checks (dtype, order, 1-D, that the file holds exactly n elements).
struct NpyInfo {
  DType type = DType::kInt32;
  std::uint64_t n = 0;
  std::uint64_t data_at = 0;
  bool big_endian = false;
};
NpyInfo npy_info(const std::string& path);

// Elements [first, first + count) of a .npy that read_npy() reads, as host order, without
// reading the rest of the file: a little-endian slice of 1 MiB or more is mapped copy-on-write
// (a view, read as it is used), a smaller or big-endian one is read. Throws Error(Errc::kInput)
// when the slice runs past the array's end.
HostArray read_npy_slice(const std::string& path, std::uint64_t first, std::uint64_t count);

}  // namespace clreduce
