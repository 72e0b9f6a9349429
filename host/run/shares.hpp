// shares.hpp: one array over several devices of one process. The array is cut into contiguous
// shares, one per device, equal or weighted; each device runs its share on its own queue, from a
// thread of its own, and the shares' results meet on the host in share order (run/fold.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "clreduce/types.hpp"

namespace clreduce {

class Context;

// Elements [first, first + n) of a, as an array that views a's memory (a must outlive it).
// Error(Errc::kInternal) when they pass a's end.
HostArray view_of(const HostArray& a, std::size_t first, std::size_t n);

// Share sizes of n elements for weights.size() devices, in order: proportional to the weights
// (all equal when weights are all equal or empty), each a multiple of `grain` elements but the
// last, summing to n. A weight of 0 gives an empty share. Throws Error(Errc::kUsage) for a
// negative or non-finite weight or weights that are all 0.
std::vector<std::size_t> split_shares(std::size_t n, const std::vector<double>& weights,
                                      std::size_t grain = 16);

// The grain for split_shares() where devices may use the host arrays in place: the fewest
// elements, at least 16, whose bytes at every element size in `sizes` (0s ignored) are a
// multiple of every alignment in `aligns` (bytes, powers of two: run/chunks.hpp's
// in_place_alignment() of each device). A share starting on it starts as aligned as the array,
// so a CPU device takes it in place rather than a copy. Error(Errc::kInternal) for an alignment
// that is not a power of two.
std::size_t share_grain(const std::vector<std::size_t>& aligns,
                        const std::vector<std::size_t>& sizes);
// share_grain() of these devices' alignments (in_place_alignment()) and the element sizes.
std::size_t device_share_grain(const std::vector<Context*>& ctxs,
                               const std::vector<std::size_t>& sizes);

// Calls fn(0) ... fn(k - 1) at once, each on a thread of its own (fn(0) on the caller's), and
// waits for all; the first exception (in index order) is rethrown after every call returned.
// at_once = false: one after another on the caller's thread, in index order.
void run_parallel(std::size_t k, const std::function<void(std::size_t)>& fn, bool at_once = true);

}  // namespace clreduce
