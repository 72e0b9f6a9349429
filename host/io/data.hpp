// data.hpp: deterministic test data. Element i depends only on (seed, i) through a counter-based
// hash, so the same seed gives the same array on every machine, in any order, in parallel.
#pragma once

#include <cstdint>

#include "clreduce/types.hpp"

namespace clreduce {

// splitmix64 finaliser of (seed * golden + i): the bits element i is made from.
std::uint64_t data_bits(std::uint64_t seed, std::uint64_t i);

// Generates n elements of type t. Distributions (documented in docs/CLI.md, "Data"):
//   int32, int64: uniform integers in [-1000, 1000] and [-10^12, 10^12];
//   uint32, uint64: uniform in [0, 2000] and [0, 2*10^12];
//   float, double: uniform in [-1, 1) on a 2^-24 / 2^-53 grid;
//   float16: uniform in [-1, 1) on a 2^-10 grid; bool: 0 or 1 with equal odds;
//   int8, int16: uniform in [-100, 100] and [-1000, 1000]; uint8, uint16: [0, 200], [0, 2000].
// first: the global index of element 0, so a slice [first, first + n) of the array of any
// larger length is generated alone (an MPI rank's slice) with the same values.
HostArray generate(DType t, std::size_t n, std::uint64_t seed, std::uint64_t first = 0);

}  // namespace clreduce
