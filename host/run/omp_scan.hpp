// omp_scan.hpp: the OpenMP scan peer (omp_peer.hpp's two-pass inclusive scans) for the arrays
// clreduce scans: what it can run, running it, and the depth its float error bound needs.
#pragma once

#include <cstdint>
#include <string>

#include "clreduce/types.hpp"
#include "run/omp_peer.hpp"

namespace clreduce {

// Empty when the OpenMP scan peer runs this scan; else why not. It has inclusive, unsegmented
// sums of int32 (into int64, NumPy's rule, or into int32 with --acc int32) and of float.
std::string omp_scan_unsupported(Op op, DType type, DType acc, bool exclusive, bool segmented);

struct OmpScanResult {
  PeerTiming timing;        // milliseconds, wall clock of the scan alone
  std::uint64_t depth = 0;  // longest chain of additions behind one output (float error bound)
};

// Scans a (a.n elements; omp_scan_unsupported(...) empty) into out, a.n elements of acc:
// `warmup` untimed and `repeat` timed runs, the last one's result left in out.
OmpScanResult omp_scan(const HostArray& a, DType acc, int warmup, int repeat, unsigned char* out);

}  // namespace clreduce
