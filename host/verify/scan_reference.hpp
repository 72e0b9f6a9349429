// scan_reference.hpp: the seeds' sequential scan loop (the timed baseline) and the check of every
// element of a device scan. The reference is recomputed while checking, never stored: exact for
// integers, min and max; a long double running value for float sums and products (verify_scan).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clreduce/types.hpp"
#include "verify/float_check.hpp"

namespace clreduce {

// What is scanned: the operator (sum, prod, min, max), the accumulator/output type
// (resolve_acc()) and inclusive or exclusive.
struct ScanMode {
  Op op = Op::kSum;
  DType acc = DType::kInt64;
  bool exclusive = false;
};

// The seeds' loop, `acc = OP(acc, x[i]); y[i] = acc` in the accumulator type, one pass in index
// order; exclusive stores acc before combining. flags: empty (one segment) or a.n bytes, nonzero
// where a segment starts (acc restarts at the identity; element 0 always starts one). out holds
// a.n * dtype_size(mode.acc) bytes. Throws Error(Errc::kUsage) for arg ops.
void sequential_scan(const HostArray& a, const ScanMode& mode,
                     const std::vector<std::uint8_t>& flags, unsigned char* out);

struct ScanVerdict {
  bool ok = true;
  bool overflow = false;  // some element is ±inf or NaN, accepted because an order may overflow
  std::int64_t first_wrong = -1;  // index of the first wrong element, -1 when none
  std::uint64_t wrong = 0;        // how many elements are wrong
  std::uint64_t overflowed = 0;   // how many elements were accepted as overflows
  double bound = 0.0;             // the largest float tolerance used (0 for exact comparisons)
  std::string why;                // the first wrong element and the count; when ok through
                                  // overflow, the first overflowed element; else empty
  Value expected_last;            // the reference's last element (type mode.acc; 0 for n = 0)
};

// The reference's running state after a slice of a larger array, for checking the slices of
// MPI ranks apart (run/ranks.hpp folds them in rank order): the exact running value (integers,
// min, max: `exact`, of the accumulator type) or the long double running value and the
// magnitudes of its elements (float sums and products), the elements since the last segment
// start, whether a segment starts in the slice, and whether it is empty.
struct ScanRefState {
  Value exact;
  long double run = 0.0L;
  Magnitudes mag;
  std::uint64_t count = 0;
  bool reset = false;
  bool empty = true;
};

// The state after a's elements, scanned alone (no state before them).
ScanRefState scan_ref_state(const HostArray& a, const ScanMode& mode,
                            const std::vector<std::uint8_t>& flags);

// Checks every element of got (a.n values of type mode.acc, as the device wrote them):
// integers, min and max exactly (NaN matches NaN); float sums and products by check_float()
// (float_check.hpp) over the c_i elements y_i combines (its segment, up to i): sums
// |y_i - ref_i| <= γ_d·S_i + u·|ref_i|, with S_i the sum of their |x_j|, u the unit roundoff
// of the accumulator and d = min(depth, c_i - 1) (y_i is a tree of its c_i elements);
// products |y_i - ref_i| <= (c_i + 2)·u·|ref_i| + an underflow term (every multiplication
// rounds, whatever the tree). ref_i is the long double scan rounded to the accumulator type;
// a non-finite y_i must match it, unless an order of those elements may overflow: then the
// ±inf or NaN an order can reach is accepted and counted in `overflowed`. depth: the longest
// chain of operations the variant applies. start (null or empty: none): the state the
// elements before a leave (a slice of a larger array).
ScanVerdict verify_scan(const HostArray& a, const ScanMode& mode,
                        const std::vector<std::uint8_t>& flags, std::uint64_t depth,
                        const unsigned char* got, const ScanRefState* start = nullptr);

}  // namespace clreduce
