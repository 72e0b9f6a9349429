// scan_lookback.cpp: the single-pass decoupled look-back scan: one launch, 16-byte loads, a tile
// of wg * vec * rows elements per group. Waits are bounded in the kernel; when a run reports that
// a group gave up (err = the run's epoch), the scan is redone by a multi-pass variant.
#include <atomic>
#include <cstdlib>
#include <algorithm>
#include <map>

#include "clreduce/error.hpp"
#include "scan/scan_variant.hpp"

namespace clreduce {
namespace {


// Run epochs tag the descriptors (30 bits, never 0), so no run needs them cleared. Unique across
// contexts: a buffer is never shared between runs of the same epoch.
std::uint32_t next_epoch() {
  static std::atomic<std::uint32_t> e{0};
  return e.fetch_add(1) % ((std::uint32_t{1} << 30) - 1) + 1;
}

// Window reads before a group gives up: the lookback-limit knob (a test knob: 0 makes every
// look-back give up), else about a second of polling on a GPU, several on a CPU.
unsigned lookback_limit(Context& ctx) {
  if (ctx.tuning().lookback_limit >= 0) return static_cast<unsigned>(ctx.tuning().lookback_limit);
  const DeviceInfo& d = ctx.info();
  return d.is_gpu ? (1u << 20) : (1u << 22);
}

// Whether the device builds 64-bit global atomics (cl_khr_int64_base_atomics), by a trial build.
bool has_int64_atomics(Context& ctx) {
  static std::map<cl_device_id, bool> cache;
  const auto it = cache.find(ctx.info().device());
  if (it != cache.end()) return it->second;
  const std::string src =
      "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
      "__kernel void probe(__global ulong* p) { atom_add((volatile __global ulong*)p, 1ul); }\n";
  const bool ok = ctx.try_build(src, "", nullptr);
  cache[ctx.info().device()] = ok;
  return ok;
}

class Lookback : public ScanVariant {
 public:
  std::string name() const override { return "scan-lookback"; }
  std::string description() const override {
    return "single-pass scan, decoupled look-back (Merrill & Garland): 2n moves, one launch, bounded waits";
  }
  std::string unsupported(Context& ctx, const ScanProblem& p) const override {
    std::string why = ScanVariant::unsupported(ctx, p);
    if (why.empty() && !has_int64_atomics(ctx))
      why = "needs 64-bit global atomics (cl_khr_int64_base_atomics): a trial build failed";
    return why;
  }
  LaunchPolicy policy(Context& ctx, const ScanProblem& p, std::size_t local_size) override {
    const unsigned vec = vec_of(p), rows = ctx.tuning().lookback_rows;
    const auto bytes = [&](std::size_t wg) {
      const std::size_t rakers = std::min<std::size_t>(wg, 32);
      const std::size_t values = rows * wg + rows * rakers + rows + 1 + rakers + 1;
      return values * p.acc_bytes() + rakers * 4 + 16 + (p.segmented ? rows * (wg + rakers) + rows + 1 : 0);
    };
    LaunchPolicy pol;
    limit_ = lookback_limit(ctx);
    pol.wg_size = choose_scan_wg(ctx, local_size, ctx.info().is_gpu ? 256 : 64, bytes,
                                 [&](std::size_t wg) { return kernel(ctx, p, wg, vec, rows); });
    pol.items_per_thread = vec * rows;
    pol.vec_width = vec;
    const std::size_t tile = pol.wg_size * pol.items_per_thread;
    pol.groups = (p.n + tile - 1) / tile;
    pol.path = "look-back, 1 launch, tile " + std::to_string(tile) +
               (limit_ != lookback_limit_default(ctx) ? ", limit " + std::to_string(limit_) : "");
    // The fallback is built now too, so that a run that needs it builds nothing.
    fallback_ = fallback_variant(ctx);
    fallback_pol_ = fallback_->policy(ctx, p, 0);
    runs_ = 0;
    gave_up_ = 0;
    return pol;
  }
  void enqueue(Context& ctx, const ScanProblem& p, const LaunchPolicy& pol, const cl::Buffer& in,
               const cl::Buffer& flags, const cl::Buffer& out, std::vector<cl::Event>& events) override {
    const std::size_t tile = pol.wg_size * pol.items_per_thread;
    const std::size_t groups = (p.n + tile - 1) / tile;
    if (groups > 0xFFFFFFFFu) throw Error(Errc::kUnsupported, "scan-lookback: more than 2^32 tiles");
    const std::size_t words = p.acc_bytes() / 4;
    cl::Buffer& desc = ctx.scratch("scan.lookback.desc", groups * words * sizeof(cl_ulong));
    cl::Buffer& counters = ctx.scratch("scan.lookback.counters", 2 * sizeof(cl_uint));
    cl::Buffer& err = ctx.scratch("scan.lookback.err", sizeof(cl_uint));
    const std::uint32_t epoch = next_epoch();
    cl::Kernel k = kernel(ctx, p, pol.wg_size, pol.vec_width, pol.items_per_thread / pol.vec_width);
    k.setArg(0, in);
    k.setArg(1, flags);
    k.setArg(2, static_cast<cl_ulong>(p.n));
    k.setArg(3, out);
    k.setArg(4, desc);
    k.setArg(5, counters);
    k.setArg(6, err);
    k.setArg(7, static_cast<cl_uint>(epoch));
    events.emplace_back();
    ctx.queue().enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(groups * pol.wg_size),
                                     cl::NDRange(pol.wg_size), nullptr, &events.back());
    cl_uint seen = 0;
    ctx.queue().enqueueReadBuffer(err, CL_TRUE, 0, sizeof seen, &seen);
    ++runs_;
    if (seen == epoch) {
      // A group waited past the limit (no forward progress, or the test knob): some tiles were
      // not stored. Redo the whole scan with a variant that needs no inter-group waits.
      ++gave_up_;
      if (!fallback_) {
        fallback_ = fallback_variant(ctx);
        fallback_pol_ = fallback_->policy(ctx, p, 0);
      }
      fallback_->enqueue(ctx, p, fallback_pol_, in, flags, out, events);
    }
  }
  std::uint64_t depth(const ScanProblem& p, const LaunchPolicy& pol) const override {
    // In the tile: vec + span + rakers + rows + 3; the prefix of tile t passes through up to t
    // tiles' combinations (a chain of inclusive prefixes). A fallback's depth is covered too.
    const std::size_t tile = pol.wg_size * pol.items_per_thread;
    const std::size_t rakers = std::min<std::size_t>(pol.wg_size, 32);
    const std::uint64_t d = (p.n + tile - 1) / tile + pol.vec_width + (pol.wg_size + rakers - 1) / rakers +
                            rakers + pol.items_per_thread / pol.vec_width + 3;
    return fallback_ ? std::max(d, fallback_->depth(p, fallback_pol_)) : d;
  }
  std::string run_note() const override {
    if (!gave_up_) return "";
    return "a look-back wait passed its limit in " + std::to_string(gave_up_) + " of " + std::to_string(runs_) +
           " runs, redone by " + fallback_->name();
  }

 private:
  // Elements per load: 16 bytes of input (4 for 32-bit types, 2 for 64-bit ones).
  static unsigned vec_of(const ScanProblem& p) { return dtype_size(p.type) == 4 ? 4u : 2u; }
  static unsigned lookback_limit_default(Context& ctx) {
    return ctx.info().is_gpu ? (1u << 20) : (1u << 22);
  }
  // The multi-pass scan that redoes a run whose look-back gave up: the CPU-shaped reduce-then-
  // scan of scan-fast on CPUs, the hierarchical tile scan elsewhere.
  static ScanVariant* fallback_variant(Context& ctx) {
    ScanVariant* v = find_scan_variant(ctx.info().is_gpu ? "scan-hierarchical" : "scan-fast");
    return v ? v : find_scan_variant("scan-hierarchical");
  }
  cl::Kernel kernel(Context& ctx, const ScanProblem& p, std::size_t wg, unsigned vec, unsigned rows) const {
    return ctx.kernel("scan_lookback.cl", "scan_lookback",
                      p.cl_options() + " -DWG_SIZE=" + std::to_string(wg) + " -DVEC=" + std::to_string(vec) +
                          " -DROWS=" + std::to_string(rows) + " -DLB_LIMIT=" + std::to_string(limit_) + "u");
  }

  unsigned limit_ = 1u << 20;
  ScanVariant* fallback_ = nullptr;
  LaunchPolicy fallback_pol_;
  std::size_t runs_ = 0, gave_up_ = 0;
};

}  // namespace

std::unique_ptr<ScanVariant> make_scan_lookback() { return std::make_unique<Lookback>(); }

}  // namespace clreduce
