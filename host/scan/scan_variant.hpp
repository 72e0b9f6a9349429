// scan_variant.hpp: what a prefix-scan variant is to the rest of clreduce, and the recursion over
// work-group totals every tiled scan shares: scan tiles, scan the tile totals (by the same
// recursion, as many levels as it takes), add them back. One variant = one cl/scan_<name>.cl +
// one host/variants/scan_<name>.cpp + one row in variants/scan_registry.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "clreduce/cl.hpp"
#include "runtime/context.hpp"
#include "clreduce/types.hpp"
#include "reduce/variant.hpp"

namespace clreduce {

struct ScanProblem {
  Op op = Op::kSum;
  DType type = DType::kInt32;
  DType acc_type = DType::kInt64;  // accumulator and output type; set with resolve_acc()
  std::size_t n = 0;
  bool exclusive = false;  // element i gets OP over the elements before it (identity first)
  bool segmented = false;  // a flag array marks segment starts; the scan restarts at each

  // Bytes of one output element.
  std::size_t acc_bytes() const { return dtype_size(acc_type); }
  // -D options: T, the accumulator and the operator (clreduce.h), CLR_EXCLUSIVE and
  // CLR_SEGMENTED (clr_scan.h).
  std::string cl_options() const;
};

class ScanVariant {
 public:
  virtual ~ScanVariant() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // Empty when the variant can run the problem on this device; else why not (it is skipped).
  // The default refuses the arg ops, which have no scan.
  virtual std::string unsupported(Context& ctx, const ScanProblem& p) const;
  // The launch policy for this device and problem; local_size > 0 overrides the group size
  // (Error(Errc::kUsage) if the device or kernel cannot take it).
  virtual LaunchPolicy policy(Context& ctx, const ScanProblem& p, std::size_t local_size) = 0;
  // Enqueues the scan of in[0..n), n >= 1, into out[0..n) (acc_type elements). flags holds n
  // bytes (nonzero: a segment starts there) when p.segmented, else is any buffer. Appends one
  // event per launch to events.
  virtual void enqueue(Context& ctx, const ScanProblem& p, const LaunchPolicy& pol,
                       const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
                       std::vector<cl::Event>& events) = 0;
  // The longest chain of operations any output element passes through (the float error bound).
  virtual std::uint64_t depth(const ScanProblem& p, const LaunchPolicy& pol) const = 0;
  // What happened in the runs since policy() that the policy cannot say (e.g. "bound hit in 1 of
  // 3 runs, redone by scan-hierarchical"), or ""; the runner appends it to the run's path.
  virtual std::string run_note() const { return ""; }
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
// Enqueues the scan of in[0..p.n) into out: the tile kernel over ceil(n / tile) groups; with
// more than one group, the same recursion on the group totals (scratch buffers per level), then
// cl/scan_add.cl adds each scanned total into the next tile, up to its first segment start.
void enqueue_tiled_scan(Context& ctx, const ScanProblem& p, const TiledScan& ts,
                        const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
                        std::vector<cl::Event>& events);
// Builds every kernel enqueue_tiled_scan will use for p (each level's tile kernel, scan_add), so
// that no build falls inside a timed run. Call from the variant's policy().
void prepare_tiled_scan(Context& ctx, const ScanProblem& p, const TiledScan& ts);
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
                           const std::function<cl::Kernel(std::size_t)>& build, std::size_t min_wg = 1);

}  // namespace clreduce
