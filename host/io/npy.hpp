// npy.hpp: reading and writing 1-D NumPy .npy files (format versions 1.0, 2.0, 3.0).
// Every problem with a file throws Error(Errc::kInput) with one line that starts with the path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clreduce/types.hpp"

namespace clreduce {

// Reads a 1-D C-order .npy of int32/uint32/int64/uint64/float32/float64 in either byte order, as
// host order.
HostArray read_npy(const std::string& path);

// Reads a 1-D C-order .npy of any integer dtype or bool as flags: one byte per element, 1 if
// nonzero else 0.
std::vector<std::uint8_t> read_npy_flags(const std::string& path);

// Writes a little-endian, C-order, 1-D .npy, version 1.0 (2.0 only if the header needs it), through
// write_file_atomically() (io/files.hpp): path holds its old content or the whole new file, never
// a partial one.
void write_npy(const std::string& path, const HostArray& a);

}  // namespace clreduce
