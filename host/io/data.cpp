// data.cpp: the counter-based generator behind --size/--seed.
#include "io/data.hpp"

#include <algorithm>
#include "core/checked.hpp"

#include "core/parallel.hpp"

namespace clreduce {

std::uint64_t data_bits(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + i;
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

namespace {

template <class T, class F> void fill(HostArray& a, std::uint64_t seed, std::uint64_t first, F f) {
  T* p = a.as<T>();
  constexpr std::size_t kPiece = std::size_t{1} << 16;
  const std::size_t pieces = (a.n + kPiece - 1) / kPiece;
  parallel_for(pieces, pieces > 1, [&](std::size_t k) {
    for (std::size_t i = k * kPiece, end = std::min(a.n, i + kPiece); i < end; ++i)
      p[i] = f(data_bits(seed, first + i));
  });
}

}  // namespace

HostArray generate(DType t, std::size_t n, std::uint64_t seed, std::uint64_t first) {
  HostArray a;
  a.type = t;
  a.n = n;
  // Not zeroed first: fill() writes every element (on the host's cores; a zeroing would be one
  // more pass over the array, on one).
  a.bytes.allocate_uninit(checked_bytes(n, dtype_size(t), "the generated array"));
  constexpr std::uint64_t kWide = 1000000000000ull;
  switch (t) {
    case DType::kInt32:
      fill<std::int32_t>(a, seed, first, [](std::uint64_t z) {
        return static_cast<std::int32_t>(z % 2001) - 1000;
      });
      break;
    case DType::kUInt32:
      fill<std::uint32_t>(a, seed, first,
                          [](std::uint64_t z) { return static_cast<std::uint32_t>(z % 2001); });
      break;
    case DType::kInt64:
      fill<std::int64_t>(a, seed, first, [](std::uint64_t z) {
        return static_cast<std::int64_t>(z % (2 * kWide + 1)) - static_cast<std::int64_t>(kWide);
      });
      break;
    case DType::kUInt64:
      fill<std::uint64_t>(a, seed, first, [](std::uint64_t z) { return z % (2 * kWide + 1); });
      break;
    case DType::kFloat:
      fill<float>(a, seed, first, [](std::uint64_t z) {
        return static_cast<float>(static_cast<double>(z >> 40) * 0x1p-24 * 2.0 - 1.0);
      });
      break;
    case DType::kDouble:
      fill<double>(a, seed, first, [](std::uint64_t z) {
        return static_cast<double>(z >> 11) * 0x1p-53 * 2.0 - 1.0;
      });
      break;
    case DType::kFloat16:
      // Multiples of 2^-10 in [-1, 1): every one a float16.
      fill<std::uint16_t>(a, seed, first, [](std::uint64_t z) {
        return double_to_half(static_cast<double>(z >> 53) * 0x1p-10 - 1.0);
      });
      break;
    case DType::kBool:
      fill<std::uint8_t>(a, seed, first,
                         [](std::uint64_t z) { return static_cast<std::uint8_t>(z >> 63); });
      break;
    case DType::kInt8:
      fill<std::int8_t>(a, seed, first, [](std::uint64_t z) {
        return static_cast<std::int8_t>(static_cast<int>(z % 201) - 100);
      });
      break;
    case DType::kUInt8:
      fill<std::uint8_t>(a, seed, first,
                         [](std::uint64_t z) { return static_cast<std::uint8_t>(z % 201); });
      break;
    case DType::kInt16:
      fill<std::int16_t>(a, seed, first, [](std::uint64_t z) {
        return static_cast<std::int16_t>(static_cast<int>(z % 2001) - 1000);
      });
      break;
    case DType::kUInt16:
      fill<std::uint16_t>(a, seed, first,
                          [](std::uint64_t z) { return static_cast<std::uint16_t>(z % 2001); });
      break;
  }
  return a;
}

}  // namespace clreduce
