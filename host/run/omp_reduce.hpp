// omp_reduce.hpp: the OpenMP peer for every op and type, with clreduce's semantics (NumPy's
// accumulators, wrapping integers, NaN and first-index rules). int32 and float sums use the
// tuned loops of omp_peer.hpp; the rest one contiguous chunk per thread, combined in order.
#pragma once

#include <cstdint>

#include "clreduce/types.hpp"
#include "run/omp_peer.hpp"

namespace clreduce {

struct OmpResult {
  Value value;              // in the accumulator type; index set for arg ops
  PeerTiming timing;        // milliseconds, wall clock of the reduction alone
  std::uint64_t depth = 0;  // longest chain of operations on one element (float error bound)
};

// Reduces a with op into accumulator type acc (resolve_acc()) on all cores, `warmup` untimed
// and `repeat` timed runs. a.n must be > 0 unless op has an identity.
OmpResult omp_reduce(const HostArray& a, Op op, DType acc, std::uint64_t warmup,
                     std::uint64_t repeat);

}  // namespace clreduce
