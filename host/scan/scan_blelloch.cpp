// scan_blelloch.cpp: tiles of the power of two >= 2 * wg elements (two per work-item when wg is
// a power of two), the shared recursion over tile totals. Local memory: the padded tile.
#include "scan/scan_variant.hpp"

namespace clreduce {
namespace {

constexpr std::size_t kLogBanks = 5;  // padding: one slot per 32 (the banks of NVIDIA GPUs)

// Elements per tile: the smallest power of two >= 2 * wg.
std::size_t tile_of(std::size_t wg) {
  std::size_t p = 2;
  while (p < 2 * wg) p *= 2;
  return p;
}

class Blelloch : public ScanVariant {
 public:
  std::string name() const override { return "scan-blelloch"; }
  std::string description() const override {
    return "work-efficient up-sweep/down-sweep tile scan (Blelloch), bank-conflict padding";
  }

 protected:
  std::unique_ptr<ScanPlan> make_plan(Context& ctx, const ScanProblem& p,
                                      std::size_t local_size) const override {
    const auto bytes = [&](std::size_t wg) {
      const std::size_t t = tile_of(wg);
      return (t + (t >> kLogBanks)) * p.acc_bytes() + (p.segmented ? t : 0);
    };
    LaunchPolicy pol;
    pol.wg_size = choose_scan_wg(ctx, local_size, 256, bytes,
                                 [&](std::size_t wg) { return kernel(ctx, p, wg); });
    const std::size_t tile = tile_of(pol.wg_size);
    pol.items_per_thread = static_cast<unsigned>(tile / pol.wg_size);
    pol.groups = (p.n + tile - 1) / tile;
    pol.path = scan_levels_text(p.n, tile);
    return make_tiled_plan(ctx, name(), p, pol, tiled(ctx, pol), depth(p, pol));
  }

 private:
  static std::uint64_t depth(const ScanProblem& p, const LaunchPolicy& pol) {
    const std::size_t tile = tile_of(pol.wg_size);
    return tiled_scan_depth(p.n, tile, 2 * ceil_log2(tile) + 1);
  }
  static TiledScan tiled(Context& ctx, const LaunchPolicy& pol) {
    TiledScan ts;
    ts.wg_size = pol.wg_size;
    ts.tile = tile_of(pol.wg_size);
    const std::size_t wg = pol.wg_size;
    ts.kernel = [&ctx, wg](const ScanProblem& q) { return kernel(ctx, q, wg); };
    return ts;
  }
  static cl::Kernel kernel(Context& ctx, const ScanProblem& p, std::size_t wg) {
    return ctx.kernel("scan_blelloch.cl", "scan_blelloch",
                      p.cl_options() + " -DWG_SIZE=" + std::to_string(wg) +
                          " -DSCAN_P=" + std::to_string(tile_of(wg)) +
                          " -DLOG_BANKS=" + std::to_string(kLogBanks));
  }
};

}  // namespace

std::unique_ptr<ScanVariant> make_scan_blelloch() { return std::make_unique<Blelloch>(); }

}  // namespace clreduce
