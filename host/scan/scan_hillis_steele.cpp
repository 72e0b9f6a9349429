// scan_hillis_steele.cpp: one element per work-item, a tile per work-group, the shared recursion
// over tile totals. Local memory: two buffers of wg accumulators (and two of wg flags).
#include "scan/scan_variant.hpp"

namespace clreduce {
namespace {

class HillisSteele : public ScanVariant {
 public:
  std::string name() const override { return "scan-hillis-steele"; }
  std::string description() const override {
    return "the seeds' naive scan, double-buffered (Algorithm 2): log2(wg) steps, wg*log2(wg) work "
           "per tile";
  }

 protected:
  std::unique_ptr<ScanPlan> make_plan(Context& ctx, const ScanProblem& p,
                                      std::size_t local_size) const override {
    const auto bytes = [&](std::size_t wg) {
      return 2 * wg * p.acc_bytes() + (p.segmented ? 2 * wg : 0);
    };
    LaunchPolicy pol;
    // One element per work-item: a tile of one would never shrink the recursion.
    pol.wg_size = choose_scan_wg(
        ctx, local_size, 256, bytes, [&](std::size_t wg) { return kernel(ctx, p, wg); }, 2);
    pol.groups = (p.n + pol.wg_size - 1) / pol.wg_size;
    pol.path = scan_levels_text(p.n, pol.wg_size);
    return make_tiled_plan(ctx, name(), p, pol, tiled(ctx, pol), depth(p, pol));
  }

 private:
  static std::uint64_t depth(const ScanProblem& p, const LaunchPolicy& pol) {
    return tiled_scan_depth(p.n, pol.wg_size, ceil_log2(pol.wg_size));
  }
  static TiledScan tiled(Context& ctx, const LaunchPolicy& pol) {
    TiledScan ts;
    ts.wg_size = pol.wg_size;
    ts.tile = pol.wg_size;
    const std::size_t wg = pol.wg_size;
    ts.kernel = [&ctx, wg](const ScanProblem& q) { return kernel(ctx, q, wg); };
    return ts;
  }
  static cl::Kernel kernel(Context& ctx, const ScanProblem& p, std::size_t wg) {
    return ctx.kernel("scan_hillis_steele.cl", "scan_hillis_steele",
                      p.cl_options() + " -DWG_SIZE=" + std::to_string(wg));
  }
};

}  // namespace

std::unique_ptr<ScanVariant> make_scan_hillis_steele() { return std::make_unique<HillisSteele>(); }

}  // namespace clreduce
