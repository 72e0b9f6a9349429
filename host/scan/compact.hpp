// compact.hpp: stream compaction on the device, built on the scan: the elements of an array where
// a predicate holds, in order, and their count (select); or those first and the others after
// them, both in order (partition). Three steps, all enqueued: the predicate's flags
// (cl/compact.cl), their inclusive sum by scan-fast's plan (enqueued like every scan), and a
// scatter that also writes the count.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/types.hpp"
#include "runtime/context.hpp"
#include "scan/scan_variant.hpp"

namespace clreduce {

// x CMP value; the codes of the public Cmp (clreduce.hpp).
enum class CompareOp { kLess, kLessEqual, kGreater, kGreaterEqual, kEqual, kNotEqual };

// What a compaction keeps: a comparison of each element x with a value, or an OpenCL C
// expression over x (the --where language of user reductions), when `expr` is not empty.
struct CompactWhere {
  CompareOp cmp = CompareOp::kNotEqual;
  double value = 0.0;
  std::string expr;
  std::string label = "--where";  // the expression's name in messages ("--where 'x >' ...")
};

// The predicate as the kernels' generated tail: int clr_compact_where(T x) for elements of type
// t. A comparison is exact for every element: the value is replaced by the nearest values of T
// on either side (an integer type's x > 0.5 is x > 0; float's x > 0.1 compares with the float
// just below 0.1), and comes out constant where no element can pass or fail (int32's
// x < -1e10); a NaN value passes only !=. An expression is checked as text first (Error kUsage:
// check_expression()), and must name x alone.
std::string compact_where_tail(DType t, const CompactWhere& w);

// One compaction for one device: kernels built, scratch (flags and their sums, max_n of uint32,
// or uint64 past 2^32 - 1 elements) and the scan's plan made for max_n elements. Refers to ctx,
// which must outlive it; one thread at a time.
class Compactor {
 public:
  // Throws Error(Errc::kUsage) for an expression that does not compile (with its position),
  // kUnsupported for doubles on a device without fp64.
  Compactor(Context& ctx, DType type, std::size_t max_n, const CompactWhere& where,
            bool partition, std::size_t local_size = 0);

  DType type() const { return type_; }
  std::size_t max_n() const { return max_n_; }
  bool partition() const { return partition_; }
  // The scan's plan (its policy names the path).
  const ScanPlan& scan() const { return *scan_; }

  // Enqueues the compaction of in[0, n), n <= max_n(), on ctx's queue: the kept elements to
  // out[0, kept) in order (partition: the others to out[kept, n) in order; select leaves them
  // untouched), and kept as a uint64 at byte count_offset of `count` (any alignment). n = 0
  // writes the count alone. Appends one event per command. Throws Error(Errc::kUsage) for
  // n > max_n() (no command enqueued).
  void enqueue(const cl::Buffer& in, std::size_t n, const cl::Buffer& out, const cl::Buffer& count,
               std::size_t count_offset, std::vector<cl::Event>& events);

 private:
  Context& ctx_;
  DType type_;
  std::size_t max_n_;
  bool partition_;
  std::size_t items_ = 1, wg_ = 1;  // work-items of the flag and scatter launches, and per group
  cl::Kernel flags_k_, scatter_k_;
  cl::Buffer flags_, sums_;
  std::unique_ptr<ScanPlan> scan_;
};

}  // namespace clreduce
