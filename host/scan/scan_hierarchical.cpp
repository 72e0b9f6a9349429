// scan_hierarchical.cpp: tiles of wg * kItems elements; lane groups are the device's sub-groups
// where it has them, else fixed groups of kLanes synchronised by barriers; the shared recursion
// over tile totals is the grid level.
#include "scan/scan_variant.hpp"

namespace clreduce {
namespace {

constexpr unsigned kItems = 4;      // consecutive elements per work-item
constexpr std::size_t kLanes = 32;  // lane-group width on the barrier path

// Extra build options for the sub-group path, or "" for the barrier path. The sub-group path
// (-DCLR_SUBGROUPS=1 and the OpenCL C version that has sub_group_barrier) is for devices whose
// start-up probe found working sub-groups: connect this to that probe's cached answer. Until
// then every device takes the barrier path.
std::string subgroup_options(Context&) { return ""; }

class Hierarchical : public ScanVariant {
 public:
  std::string name() const override { return "scan-hierarchical"; }
  std::string description() const override {
    return "the lecture's warp -> block -> grid scan: per-item blocks, lane groups, work-group";
  }

 protected:
  std::unique_ptr<ScanPlan> make_plan(Context& ctx, const ScanProblem& p,
                                      std::size_t local_size) const override {
    const auto bytes = [&](std::size_t wg) {
      const std::size_t tile = wg * kItems;
      const std::size_t slots = tile + (kItems > 1 ? wg : 0) + 2 * wg;
      return slots * p.acc_bytes() + (p.segmented ? tile + 2 * wg : 0);
    };
    LaunchPolicy pol;
    pol.wg_size = choose_scan_wg(ctx, local_size, 256, bytes,
                                 [&](std::size_t wg) { return kernel(ctx, p, wg); });
    pol.items_per_thread = kItems;
    const std::size_t tile = pol.wg_size * kItems;
    pol.groups = (p.n + tile - 1) / tile;
    const std::string lanes = subgroup_options(ctx).empty()
                                  ? "lanes=" + std::to_string(kLanes) + " barriers"
                                  : "sub-groups";
    pol.path = lanes + ", " + scan_levels_text(p.n, tile);
    return make_tiled_plan(ctx, name(), p, pol, tiled(ctx, pol), depth(p, pol));
  }

 private:
  static std::uint64_t depth(const ScanProblem& p, const LaunchPolicy& pol) {
    // ITEMS in the work-item's block, log2(lane width) + log2(lane groups) <= log2(wg) + 1 in the
    // two Hillis-Steele levels, and two combinations adding the prefix back.
    return tiled_scan_depth(p.n, pol.wg_size * kItems, kItems + ceil_log2(pol.wg_size) + 3);
  }
  static TiledScan tiled(Context& ctx, const LaunchPolicy& pol) {
    TiledScan ts;
    ts.wg_size = pol.wg_size;
    ts.tile = pol.wg_size * kItems;
    const std::size_t wg = pol.wg_size;
    ts.kernel = [&ctx, wg](const ScanProblem& q) { return kernel(ctx, q, wg); };
    return ts;
  }
  static cl::Kernel kernel(Context& ctx, const ScanProblem& p, std::size_t wg) {
    return ctx.kernel("scan_hierarchical.cl", "scan_hierarchical",
                      p.cl_options() + " -DWG_SIZE=" + std::to_string(wg) +
                          " -DITEMS=" + std::to_string(kItems) +
                          " -DCLR_LANES=" + std::to_string(kLanes) + subgroup_options(ctx));
  }
};

}  // namespace

std::unique_ptr<ScanVariant> make_scan_hierarchical() { return std::make_unique<Hierarchical>(); }

}  // namespace clreduce
