// scan_variant.hpp: what a prefix-scan variant is to the rest of clreduce (a stateless description
// that makes plans), the plan (a typed ready-to-launch object, with sub-ranges and a carry-in), and
// the recursion over work-group totals every tiled scan shares: scan tiles, scan the tile totals
// (by the same recursion, as many levels as it takes), add them back. One variant = one
// cl/scan_<name>.cl + one host/scan/scan_<name>.cpp + one row in scan/scan_registry.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/types.hpp"
#include "reduce/variant.hpp"
#include "runtime/context.hpp"

namespace clreduce {

struct ScanProblem {
  Op op = Op::kSum;
  DType type = DType::kInt32;
  DType acc_type = DType::kInt64;  // accumulator and output type; set with resolve_acc()
  std::size_t n = 0;
  bool exclusive = false;  // element i gets OP over the elements before it (identity first)
  bool segmented = false;  // a flag array marks segment starts; the scan restarts at each
  bool carry_in = false;   // the plan takes a running value from before the range (ScanPlan)

  // Bytes of one output element.
  std::size_t acc_bytes() const { return dtype_size(acc_type); }
  // -D options: T, the accumulator and the operator (clreduce.h), CLR_EXCLUSIVE and
  // CLR_SEGMENTED (clr_scan.h).
  std::string cl_options() const;
};

// A scan ready to launch on one device, made by ScanVariant::plan(): its kernels built, the
// scratch it owns allocated and zeroed, its path fixed. Launch it any number of times, on the
// whole array or any sub-range of at most problem().n elements, with a carry-in when the
// problem asked for one; two plans never share scratch. A plan refers to its Context, which must
// outlive it, and sets kernel arguments when it launches: one thread at a time per plan.
class ScanPlan {
 public:
  virtual ~ScanPlan() = default;
  ScanPlan(const ScanPlan&) = delete;
  ScanPlan& operator=(const ScanPlan&) = delete;

  // The variant that made the plan (for a path delegated to, the variant whose path it is).
  const std::string& variant() const { return variant_; }
  const ScanProblem& problem() const { return problem_; }
  // The launch as printable data (--verbose, JSON "policy").
  const LaunchPolicy& policy() const { return policy_; }
  // The longest chain of operations any output element passes through in a launch on up to
  // problem().n elements, the carry-in included (the float error bound).
  std::uint64_t depth() const { return depth_ + (problem_.carry_in ? 1 : 0); }

  // Enqueues the scan of in's elements [offset, offset + length) into out's (acc_type elements)
  // [offset, offset + length), 1 <= length <= problem().n; when problem().segmented, flags
  // holds one byte per element of in (nonzero: a segment starts there) and is read over the
  // same range, else it is any buffer. Element offset starts a segment only where flagged.
  // carry (problem().carry_in plans only; null: none) is the running value before the range,
  // of type acc_type: every element before the range's first segment start becomes carry OP y.
  // A range that does not start at element 0 is a sub-buffer of each array: its first byte
  // must be a multiple of Context::base_align() in each. Appends one event per launch.
  // Throws Error(Errc::kUsage) for a range out of bounds, empty or not aligned, and for a carry
  // the plan was not made for or of the wrong type.
  void enqueue(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
               std::size_t offset, std::size_t length, const Value* carry,
               std::vector<cl::Event>& events);
  // The carry-in pass alone, on out's [offset, offset + length) as enqueue() would apply it
  // after scanning that range: every element before the range's first segment start (flags read
  // over the same range when segmented) becomes carry OP y. For a range scanned without a carry
  // whose running value before it became known later (another device's share, another rank's
  // slice). Same rules and throws as enqueue(); a carry_in plan only.
  void enqueue_carry(const cl::Buffer& flags, const cl::Buffer& out, std::size_t offset,
                     std::size_t length, const Value& carry, std::vector<cl::Event>& events);
  // The whole problem, no carry.
  void enqueue(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
               std::vector<cl::Event>& events) {
    enqueue(in, flags, out, 0, problem_.n, nullptr, events);
  }

 protected:
  // depth: without the carry-in's one operation.
  ScanPlan(Context& ctx, std::string variant, const ScanProblem& p, LaunchPolicy policy,
           std::uint64_t depth);
  // Launches on in[0, n), flags[0, n), out[0, n), 1 <= n <= problem().n: sets arguments and
  // enqueues, nothing else (no launch waits on the host).
  virtual void launch(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
                      std::size_t n, std::vector<cl::Event>& events) = 0;
  // Launches with a carry-in (acc_type bytes) where the kernel takes one itself; returns whether
  // it did. The default launches without it and returns false: enqueue() then runs the carry-in
  // pass over the output (a second read and write of it).
  virtual bool launch_carry(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
                            std::size_t n, const std::vector<unsigned char>& carry,
                            std::vector<cl::Event>& events);

  Context& ctx_;

 private:
  // The carry-in pass over f (this range's flags view) and y (its output view).
  void apply_carry(const cl::Buffer& f, const cl::Buffer& y, std::size_t length, const Value& carry,
                   std::vector<cl::Event>& events);

  std::string variant_;
  ScanProblem problem_;
  LaunchPolicy policy_;
  std::uint64_t depth_;
  // The carry-in pass (cl/scan_carry.cl), built when problem().carry_in.
  cl::Kernel carry_heads_, carry_apply_;
  cl::Buffer carry_groups_;  // each group's first segment start
  std::size_t carry_wg_ = 0, carry_max_groups_ = 0;
};

// A single-pass look-back plan (cl/scan_lookback.cl, cl/scan_cpu_lookback.cl): the tile
// descriptors and tile counter its kernel uses, and the epoch that tags each run (a host counter
// bumped per launch, so nothing is cleared between runs and back-to-back launches need no read
// in between). Its kernel never gives up a wait: a group that has waited too long on a
// predecessor folds that tile's input itself, so every launch stores every element.
class LookbackRunPlan : public ScanPlan {
 protected:
  // tiles: the most tiles a run has (one descriptor each).
  LookbackRunPlan(Context& ctx, std::string variant, const ScanProblem& p, LaunchPolicy policy,
                  std::uint64_t depth, const cl::Kernel& kernel, std::size_t tiles);
  // With the kernel's data arguments set, sets arguments first_arg .. first_arg + 2 to the
  // descriptors, the counters (once: the kernel is the plan's own) and a new epoch and launches
  // global x local work-items.
  void run(cl_uint first_arg, std::size_t global, std::size_t local,
           std::vector<cl::Event>& events);

  cl::Kernel kernel_;

 private:
  cl::Buffer desc_, counters_;
  bool scratch_set_ = false;
  std::uint32_t epoch_ = 0;
};

// A scan variant: a name, a description and const functions of (context, problem). It holds no
// state; what a device needs (probe answers, the path chosen) lives in its Context.
class ScanVariant {
 public:
  virtual ~ScanVariant() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // Empty when the variant can run the problem on this device; else why not (it is skipped).
  // The default refuses the arg ops, which have no scan.
  virtual std::string unsupported(Context& ctx, const ScanProblem& p) const;
  // The plan for this device and problem (p.n >= 1): kernels built, scratch allocated, nothing
  // launched. local_size > 0 overrides the group size (Error(Errc::kUsage) if the device or
  // kernel cannot take it). Throws Error(Errc::kUsage) for p.n = 0 (nothing to launch) and for
  // an arg op.
  std::unique_ptr<ScanPlan> plan(Context& ctx, const ScanProblem& p, std::size_t local_size) const;

 protected:
  // The plan (its ScanPlan part builds the carry-in pass when p.carry_in).
  virtual std::unique_ptr<ScanPlan> make_plan(Context& ctx, const ScanProblem& p,
                                              std::size_t local_size) const = 0;
};

// Every scan variant, in the order --variant all runs them.
const std::vector<std::unique_ptr<ScanVariant>>& scan_variants();
// The scan variant named `name`, or nullptr.
ScanVariant* find_scan_variant(const std::string& name);

// ---- The shared recursion over work-group totals, for tiled scan variants. ----
// A tile kernel has the arguments (x, flags, n, y, totals, tile_flags, heads) of
// cl/scan_hillis_steele.cl: each work-group scans `tile` consecutive elements of x into y and
// stores its total through clr_scan_store (cl/clr_scan.h).
struct TiledScan {
  std::size_t wg_size = 0;  // work-items per group
  std::size_t tile = 0;     // elements per work-group
  // The variant's tile kernel for one level's problem (level 0: the user's; above: the tile
  // totals, whose type is the accumulator, inclusive).
  std::function<cl::Kernel(const ScanProblem&)> kernel;
};

// The number of tile-scan launches for n elements: 1 for n <= tile, then one per level of totals.
std::size_t scan_levels(std::size_t n, std::size_t tile);
// "L levels, K launches" for LaunchPolicy::path.
std::string scan_levels_text(std::size_t n, std::size_t tile);
// The plan of a tiled scan: every level's tile kernel and scan_add built, every level's scratch
// (tile totals, tile flags, first segment starts, scanned totals) allocated for p.n. A launch
// runs the tile kernel over ceil(n / tile) groups; with more than one group, the same recursion
// on the group totals, then cl/scan_add.cl adds each scanned total into the next tile, up to
// its first segment start. depth: the whole recursion's (tiled_scan_depth()).
std::unique_ptr<ScanPlan> make_tiled_plan(Context& ctx, const std::string& variant,
                                          const ScanProblem& p, const LaunchPolicy& pol,
                                          const TiledScan& ts, std::uint64_t depth);
// The depth of the whole recursion when one tile adds at most tile_depth operations to an
// element: each level adds tile_depth plus one for the carry.
std::uint64_t tiled_scan_depth(std::size_t n, std::size_t tile, std::uint64_t tile_depth);

// Picks the work-group size of a tile kernel: local_size (user override) or the largest power of
// two <= preferred, at least min_wg, such that the device takes it (max work-group size, local
// memory: local_bytes is the kernel's need for a group size) and so does the kernel built for it
// (build). An override that does not fit, or a device that fits no size >= min_wg, throws
// Error(Errc::kUsage) saying why.
std::size_t choose_scan_wg(Context& ctx, std::size_t local_size, std::size_t preferred,
                           const std::function<std::size_t(std::size_t)>& local_bytes,
                           const std::function<cl::Kernel(std::size_t)>& build,
                           std::size_t min_wg = 1);

// ---- Plans one variant makes for another (scan-fast delegates), and the library's plans. ----
// scan-fast's CPU-shaped two-pass scan (cl/scan_cpu_two_pass.cl), whatever path scan-fast would
// choose.
std::unique_ptr<ScanPlan> make_scan_cpu_plan(Context& ctx, const ScanProblem& p,
                                             std::size_t local_size);
// The plan of `variant` (empty: scan-fast), checked first: Error(Errc::kUsage) for a name no
// scan variant has, Error(Errc::kUnsupported) saying why where the variant cannot run p here.
std::unique_ptr<ScanPlan> make_named_scan_plan(Context& ctx, const ScanProblem& p,
                                               const std::string& variant, std::size_t local_size);
// Whether that CPU path passes its start-up check (a small exact scan) on this device; the
// answer is kept in the context, keyed by the kernel's source and the knobs that shape it.
bool scan_cpu_path_checks_out(Context& ctx);

}  // namespace clreduce
