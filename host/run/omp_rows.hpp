// omp_rows.hpp: the OpenMP peer of the reduction engine's rows (dot, mean, var, std, norm2,
// minmax, logsumexp) and of segmented and axis sums: the loops a user would write for each on
// all cores (one contiguous chunk per thread, SIMD loops over cache-sized blocks, the threads'
// partials combined in thread order), in the working type NumPy's call uses (float for float
// arrays, double for double ones), timed as the other peers (omp_peer.hpp), each with the bound
// its result must meet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clreduce/types.hpp"
#include "reduce/segments.hpp"
#include "run/omp_peer.hpp"

namespace clreduce {

// Empty when the OpenMP peer has the row op over arrays of these types (`where`: with a
// predicate); else why not. It has dot, mean, var, std, norm2 and logsumexp of float and double
// arrays (dot: both of one type), and minmax of int32, uint32, int64, uint64, float and double.
std::string omp_row_unsupported(const std::string& op, const std::vector<DType>& types, bool where);

struct OmpRowResult {
  Value value;   // float ops: the working type (the arrays' type); minmax: the least, with index
  Value value2;  // minmax: the greatest, with its index
  PeerTiming timing;
  std::uint64_t depth = 0;  // the longest chain of operations behind the result
  // Float ops: the largest |value - exact| allowed for a finite exact value (infinite when the
  // depth leaves no bound); minmax: exact (values and first indices).
  double bound = 0;
  bool exact = false;
};

// Runs row op (omp_row_unsupported() empty) over arrays (one length, n > 0): `warmup` untimed
// and `repeat` timed runs. ddof: var and std's (NumPy's). The bound is computed from the data
// after the timed runs, untimed.
OmpRowResult omp_row(const std::string& op, const std::vector<HostArray>& arrays, double ddof,
                     std::uint64_t warmup, std::uint64_t repeat);

// Empty when the OpenMP peer has this segmented reduction: sums (op kSum) of int32, uint32,
// int64, uint64, float or double into acc (resolve_acc(): NumPy's, or --acc), over contiguous
// segments or strided lines of an axis; else why not.
std::string omp_segments_unsupported(Op op, DType type, DType acc);

struct OmpSegmentsResult {
  std::vector<Value> values;  // one per result of the layout, of type acc
  PeerTiming timing;
  std::uint64_t depth = 0;  // the longest chain of additions behind any result
};

// Sums x over every result of layout (omp_segments_unsupported() empty) into acc: contiguous
// segments split by elements over the threads (a segment across a boundary summed in pieces,
// added in thread order), lines of an axis by blocks of the kept innermost axis (rows of the
// reduced ones split too where there are fewer blocks than threads). `warmup` untimed and
// `repeat` timed runs.
OmpSegmentsResult omp_segment_sums(const HostArray& x, const SegmentLayout& layout, DType acc,
                                   std::uint64_t warmup, std::uint64_t repeat);

}  // namespace clreduce
