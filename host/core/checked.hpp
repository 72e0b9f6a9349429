// checked.hpp: byte counts of element counts that cannot wrap. 2^62 int32s are 2^64 bytes, 0
// once wrapped: every product of a count and a size (an array, a scan's output, a chunk, a
// share) goes through here, never a bare n * size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "clreduce/error.hpp"

namespace clreduce {

// a * b and a + b, held at UINT64_MAX where they would pass it: for estimates (the memory a run
// needs), which a larger number can only refuse.
inline std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
inline std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

// n elements of `size` bytes, in bytes. Throws Error(Errc::kUnsupported) where that passes what a
// std::size_t holds (2^64-1): "WHAT: N elements of SIZE bytes are more than 2^64-1 bytes, more
// than any host can hold".
inline std::size_t checked_bytes(std::uint64_t n, std::uint64_t size, const std::string& what) {
  std::size_t r = 0;
  if (__builtin_mul_overflow(n, size, &r))
    throw Error(Errc::kUnsupported, what + ": " + std::to_string(n) + " elements of " +
                                        std::to_string(size) +
                                        " bytes are more than 2^64-1 bytes, more than any host "
                                        "can hold");
  return r;
}

}  // namespace clreduce
