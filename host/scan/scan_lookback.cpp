// scan_lookback.cpp: the single-pass decoupled look-back scan: one launch, 16-byte loads, a tile
// of wg * vec * rows elements per group; on NVIDIA GPUs whose shfl.sync passed its start-up
// check, warps scan and look back in registers (LB_SHFL), with rows chosen per element size. No
// wait is unbounded and none ends the run: a group that has waited lookback-limit rounds on an
// unpublished predecessor folds that tile's input itself (the decoupled fallback), so a launch
// never needs the host to check or redo it.
#include <algorithm>
#include <cstdlib>
#include <memory>

#include "clreduce/error.hpp"
#include "runtime/capabilities.hpp"
#include "scan/scan_variant.hpp"

namespace clreduce {
namespace {

// Look-back rounds without progress on an unpublished predecessor before a group folds that
// tile itself, by default: about a second of polling on a GPU, several on a CPU (a fold is
// the exception, for a predecessor that is not running).
unsigned lookback_limit_default(const Context& ctx) {
  return ctx.info().is_gpu ? (1u << 20) : (1u << 22);
}

// The same, by the lookback-limit knob (a test knob too: 0 folds at once, and folds the three
// tiles before each tile whatever their descriptors say), else the default.
unsigned lookback_limit(const Context& ctx) {
  if (ctx.tuning().lookback_limit >= 0) return static_cast<unsigned>(ctx.tuning().lookback_limit);
  return lookback_limit_default(ctx);
}

// Elements per load and store: the lookback-vec knob, else 16 bytes of the wider of the element
// and the sum (4 for 32-bit scans, 2 for 64-bit ones and for int32 -> int64, whose 16-byte
// stores then match the 64-bit scans' shape).
unsigned vec_of(const Context& ctx, const ScanProblem& p) {
  if (ctx.tuning().lookback_vec) return ctx.tuning().lookback_vec;
  return static_cast<unsigned>(16 / std::max(dtype_size(p.type), p.acc_bytes()));
}

// Whether warps exchange registers through shfl.sync (cl/scan_lookback.cl's LB_SHFL): NVIDIA
// GPUs whose shfl.sync passed Context::caps()'s check, in groups of whole warps.
bool use_shfl(Context& ctx, std::size_t wg) {
  return ctx.info().is_gpu && ctx.info().is_nvidia && wg % 32 == 0 && ctx.caps().nv_shfl;
}

// Vectors per work-item: the lookback-rows knob, else 4 off NVIDIA; on NVIDIA GPUs 8 (the
// fastest at 2^24 and 2^28 on the H100 for every element size: docs/PERF.md, "Scans at copy
// speed") where the array gives at least one group per compute unit at that size, else 4 (one
// row per vector fewer to wait on in short arrays; 1 and 2 were slower at 2^16 and 2^20).
unsigned rows_of(Context& ctx, const ScanProblem& p, unsigned vec, std::size_t wg) {
  if (ctx.tuning().lookback_rows) return ctx.tuning().lookback_rows;
  if (!(ctx.info().is_gpu && ctx.info().is_nvidia)) return 4;
  const std::size_t cus = std::max<std::size_t>(ctx.info().compute_units, 1);
  return (p.n + wg * vec * 8 - 1) / (wg * vec * 8) >= cus ? 8u : 4u;
}

// Where warps shuffle (NVIDIA): descriptors read by volatile loads rather than atomic adds of 0
// (the lookback-read knob), and tiles numbered by group id rather than by a counter
// (lookback-ids): NVIDIA starts a launch's groups in id order, so a group still waits only on
// groups already running.
bool relaxed_reads(Context& ctx, std::size_t wg) {
  return use_shfl(ctx, wg) && ctx.tuning().lookback_read != "atomic";
}
bool group_ids(Context& ctx, std::size_t wg) {
  return use_shfl(ctx, wg) && ctx.tuning().lookback_ids != "counter";
}
// Descriptors each lane reads per look-back round (lookback-span), 1 unless asked. Each load
// instruction of a round reads a warp's width of neighbouring descriptors. On the H200 at
// 2^20, spans 2-8 took fewer rounds, but each round longer (the descriptors' few cache lines
// serve every polling warp), and spans 2 and 4 were not ahead of 1 beyond the rounds' spread
// (span 4 behind at 2^22 and 2^24): docs/PERF.md.
unsigned lookback_span(Context& ctx, std::size_t) {
  return ctx.tuning().lookback_span ? ctx.tuning().lookback_span : 1u;
}

cl::Kernel lookback_kernel(Context& ctx, const ScanProblem& p, std::size_t wg, unsigned vec,
                           unsigned rows, unsigned limit) {
  return ctx.kernel("scan_lookback.cl", "scan_lookback",
                    p.cl_options() + " -DWG_SIZE=" + std::to_string(wg) +
                        " -DVEC=" + std::to_string(vec) + " -DROWS=" + std::to_string(rows) +
                        " -DLB_LIMIT=" + std::to_string(limit) + "u" +
                        (use_shfl(ctx, wg) ? " -DLB_SHFL=1" : "") +
                        (relaxed_reads(ctx, wg) ? " -DLB_RELAXED=1" : "") +
                        (group_ids(ctx, wg) ? " -DLB_GROUP_IDS=1" : "") +
                        " -DLB_SPAN=" + std::to_string(lookback_span(ctx, wg)));
}

class LookbackPlan : public LookbackRunPlan {
 public:
  LookbackPlan(Context& ctx, const ScanProblem& p, const LaunchPolicy& pol, std::uint64_t depth,
               const cl::Kernel& kernel)
      : LookbackRunPlan(ctx, "scan-lookback", p, pol, depth, kernel, tiles(p.n, pol)) {
    check_tiles(p.n, pol);
  }

 private:
  static std::size_t tiles(std::size_t n, const LaunchPolicy& pol) {
    const std::size_t tile = pol.wg_size * pol.items_per_thread;
    return (n + tile - 1) / tile;
  }
  static void check_tiles(std::size_t n, const LaunchPolicy& pol) {
    if (tiles(n, pol) > 0xFFFFFFFFu)
      throw Error(Errc::kUnsupported, "scan-lookback: more than 2^32 tiles");
  }

  void launch(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out, std::size_t n,
              std::vector<cl::Event>& events) override {
    const std::vector<unsigned char> none(problem().acc_bytes(), 0);
    go(in, flags, out, n, none, false, events);
  }
  // The carry-in is tile 0's prefix: no pass over the output after the scan.
  bool launch_carry(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
                    std::size_t n, const std::vector<unsigned char>& carry,
                    std::vector<cl::Event>& events) override {
    return go(in, flags, out, n, carry, true, events);
  }
  bool go(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out, std::size_t n,
          const std::vector<unsigned char>& carry, bool use_carry, std::vector<cl::Event>& events) {
    // The buffers every launch (a handle may name a new buffer); n and the carry when changed.
    kernel_.setArg(0, in);
    kernel_.setArg(1, flags);
    if (n != n_set_) kernel_.setArg(2, static_cast<cl_ulong>(n));
    n_set_ = n;
    kernel_.setArg(3, out);
    if (carry != carry_ || use_carry != use_carry_) {  // carry_ starts empty: set the first time
      kernel_.setArg(4, carry.size(), carry.data());
      kernel_.setArg(5, static_cast<cl_uint>(use_carry ? 1 : 0));
      carry_ = carry;
      use_carry_ = use_carry;
    }
    run(6, tiles(n, policy()) * policy().wg_size, policy().wg_size, events);
    return use_carry;
  }

  std::size_t n_set_ = 0;  // the arguments last set (n = 0, an empty carry: none yet)
  bool use_carry_ = false;
  std::vector<unsigned char> carry_;
};

// scan-lookback's plan.
std::unique_ptr<ScanPlan> lookback_plan(Context& ctx, const ScanProblem& p,
                                        std::size_t local_size) {
  const unsigned vec = vec_of(ctx, p), limit = lookback_limit(ctx);
  const std::size_t preferred = ctx.info().is_gpu ? 256 : 64;
  // Rows by the preferred group size (a smaller group, where the device needs one, only makes
  // more groups).
  const unsigned rows = rows_of(ctx, p, vec, local_size ? local_size : preferred);
  // Local memory: the warps' row totals (and their flags), the tile id and state.
  const auto bytes = [&](std::size_t wg) {
    const std::size_t totals = rows * (use_shfl(ctx, wg) ? wg / 32 : wg);
    return totals * p.acc_bytes() + (p.segmented ? totals : 0) + 16;
  };
  LaunchPolicy pol;
  pol.wg_size = choose_scan_wg(ctx, local_size, preferred, bytes, [&](std::size_t wg) {
    return lookback_kernel(ctx, p, wg, vec, rows, limit);
  });
  const bool shfl = use_shfl(ctx, pol.wg_size);
  pol.items_per_thread = vec * rows;
  pol.vec_width = vec;
  const std::size_t tile = pol.wg_size * pol.items_per_thread;
  pol.groups = (p.n + tile - 1) / tile;
  pol.path = "look-back, 1 launch, tile " + std::to_string(tile) + (shfl ? ", warp shuffles" : "") +
             (relaxed_reads(ctx, pol.wg_size) ? ", volatile reads" : "") +
             (group_ids(ctx, pol.wg_size) ? ", group ids" : "") +
             (lookback_span(ctx, pol.wg_size) > 1
                  ? ", look-back span " + std::to_string(lookback_span(ctx, pol.wg_size))
                  : "") +
             (limit != lookback_limit_default(ctx) ? ", limit " + std::to_string(limit) : "");
  // In the tile: a vector (vec), a warp scan (lanes), warp 0's share of the warps' totals and
  // its scan over lanes, a few combinations more; the prefix of tile t passes through up to t
  // tiles' combinations (a chain of inclusive prefixes), each tile's value either its
  // aggregate or, folded by a successor (the fallback), a lane's run of tile / lanes elements
  // and a scan over the lanes.
  const std::size_t lanes = shfl ? 32 : 1, totals = rows * pol.wg_size / lanes;
  const std::uint64_t d = (p.n + tile - 1) / tile + vec + 2 * lanes +
                          std::max((totals + lanes - 1) / lanes, tile / lanes) + 8;
  return std::make_unique<LookbackPlan>(ctx, p, pol, d,
                                        lookback_kernel(ctx, p, pol.wg_size, vec, rows, limit));
}

class Lookback : public ScanVariant {
 public:
  std::string name() const override { return "scan-lookback"; }
  std::string description() const override {
    return "single-pass scan, decoupled look-back (Merrill & Garland): 2n moves, one launch, "
           "a stalled predecessor's tile folded by its successor";
  }
  std::string unsupported(Context& ctx, const ScanProblem& p) const override {
    std::string why = ScanVariant::unsupported(ctx, p);
    if (why.empty() && !has_int64_atomics(ctx))
      why = "needs 64-bit global atomics (cl_khr_int64_base_atomics): a trial build failed";
    return why;
  }

 protected:
  std::unique_ptr<ScanPlan> make_plan(Context& ctx, const ScanProblem& p,
                                      std::size_t local_size) const override {
    return lookback_plan(ctx, p, local_size);
  }
};

}  // namespace

std::unique_ptr<ScanVariant> make_scan_lookback() { return std::make_unique<Lookback>(); }

}  // namespace clreduce
