// runner.hpp: runs a variant on one array: upload, warm-up, timed repetitions, verification
// against the sequential reference, and the timing of the seeds' sequential loop beside it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/context.hpp"
#include "verify/reference.hpp"
#include "reduce/variant.hpp"

namespace clreduce {

struct RunConfig {
  int warmup = 1;              // untimed runs before the timed ones
  int repeat = 5;              // timed runs; medians are reported
  std::size_t local_size = 0;  // 0: the variant's choice
  std::string acc;             // --acc: accumulator type name; empty for NumPy's
};

// One variant's outcome on one array: what --format json prints. A scan's result and expected
// are the last elements of its output and of the reference.
struct RunRecord {
  std::string variant;
  std::string kind = "clreduce";  // "clreduce", "peer" (omp) or "ceiling" (copy)
  std::string mode = "reduce";    // "reduce" or "scan"
  Op op = Op::kSum;
  DType type = DType::kInt32;
  DType acc = DType::kInt64;  // accumulator (result) type
  std::size_t n = 0;
  std::string device;
  bool skipped = false;
  std::string skip_reason;
  Value result;
  Value expected;
  bool verified = false;
  std::string verify_note;  // why verification failed
  double bound = 0.0;       // float tolerance used
  // Float sums: the result's distance from the correctly rounded sum (exact_sum.hpp).
  bool has_error = false;
  double err_ulp = 0.0;     // representable values between them
  double err_rel = 0.0;     // |result - exact| / |exact|
  double kernel_ms = 0.0;   // median over repetitions of the summed kernel times of all launches
  double kernel_ms_min = 0.0;  // fastest and slowest repetition (the spread)
  double kernel_ms_max = 0.0;
  double wall_ms = 0.0;     // median of upload + launches + read-back, host clock
  double gbps = 0.0;        // input bytes / kernel time (copy: bytes read + written)
  double seq_ms = 0.0;      // the seeds' sequential loop on the host, median
  double speedup = 0.0;     // seq_ms / kernel_ms
  std::size_t launches = 0;
  LaunchPolicy policy;
  // Scans only.
  bool exclusive = false;
  bool segmented = false;
  std::int64_t first_wrong = -1;  // index of the first wrong element, -1 when none
  std::uint64_t wrong_count = 0;  // how many elements are wrong
  // Peer time / this kernel time, by key ("vs_omp"): above 1, clreduce is faster. NaN: not
  // quoted, because one of the two timings is noisy.
  std::vector<std::pair<std::string, double>> ratios;
  // The timed runs spread too widely to trust the median (set by the caller, e.g. the CLI's rule:
  // the slowest more than 4x the fastest).
  bool noisy = false;
  // How the array was made, so a row can be reproduced (set by the caller; printed in JSON):
  // the .npy file read ("-": standard input), or empty for data generated from `seed`.
  std::string input;
  std::uint64_t seed = 0;
  int warmup = 0;  // as run
  int repeat = 0;
};

// Holds the array, its reference and the baseline time, shared by every variant run on it.
class ReduceSession {
 public:
  // Throws Error for n = 0 with an op that has no identity, for double on a device without
  // fp64, and for arrays larger than the device's largest allocation.
  ReduceSession(Context& ctx, const HostArray& data, Op op, RunConfig cfg);
  RunRecord run(ReduceVariant& v);
  // The OpenMP peer on the same array: variant "omp", kind "peer", verified like a variant.
  RunRecord run_omp();
  // Device-to-device copy of the array (clEnqueueCopyBuffer): variant "copy", kind "ceiling",
  // gbps counting bytes read and written; verified by reading the copy back.
  RunRecord run_copy();

 private:
  RunRecord base_record(const std::string& name) const;
  // Verifies rec.result against the reference (chain: the run's longest chain of operations,
  // the float bound's depth) and sets gbps and speedup from kernel_ms.
  void finish(RunRecord& rec, std::uint64_t chain) const;

  Context& ctx_;
  const HostArray& data_;
  ReduceProblem problem_;
  RunConfig cfg_;
  Value expected_;
  long double abs_sum_ = 0.0L;
  double seq_ms_ = 0.0;
};

// Throws Error(Errc::kUnsupported) when n elements of t exceed the device's largest allocation.
void check_fits(const DeviceInfo& d, DType t, std::size_t n);

// Median of a non-empty vector.
double median(std::vector<double> v);

// Kernel time of one run in ms: the sum of the profiling-event durations of its launches.
double events_ms(std::vector<cl::Event>& events);

// Sets kernel_ms (median), kernel_ms_min and kernel_ms_max from the timed runs' kernel times,
// and wall_ms (median) from their wall times. Both vectors non-empty.
void set_timings(RunRecord& rec, const std::vector<double>& kernel_ms,
                 const std::vector<double>& wall_ms);

}  // namespace clreduce
