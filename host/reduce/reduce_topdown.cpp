// reduce_topdown.cpp: one launch for any n; the grid is sized from the device's compute units.
#include "reduce/variant.hpp"

#include <algorithm>

namespace clreduce {
namespace {

cl::Kernel topdown_kernel(Context& ctx, const ReduceProblem& p, std::size_t wg) {
  return ctx.kernel("reduce_topdown.cl", "reduce_topdown",
                    p.cl_options() + " -DWG_SIZE=" + std::to_string(wg));
}

// Additions above a work-item's chain: its group's tree (clr_local_fold), the last group's loop
// over the partials and its tree (clr_ticket.h).
std::uint64_t above_chains(const LaunchPolicy& pol) {
  return 2 * ceil_log2(pol.wg_size) + (pol.groups + pol.wg_size - 1) / pol.wg_size;
}

class TopDownPlan : public TicketPlan {
 public:
  TopDownPlan(Context& ctx, const ReduceProblem& p, LaunchPolicy pol)
      : TicketPlan(ctx, "topdown", p, pol, pol.items_per_thread + above_chains(pol),
                   topdown_kernel(ctx, p, pol.wg_size)) {}

 private:
  // Work-item g folds x[g], x[g + stride], ... in order from the identity (stride: the grid).
  SumModel model(std::size_t n) const override {
    return strided_model(n, policy().groups * policy().wg_size, above_chains(policy()));
  }
};

class TopDown : public ReduceVariant {
 public:
  std::string name() const override { return "topdown"; }
  std::string description() const override {
    return "one launch for any n: groups fold grid-strided slices, the last group folds the "
           "partials";
  }

 protected:
  std::unique_ptr<ReducePlan> make_plan(Context& ctx, const ReduceProblem& p,
                                        std::size_t local_size) const override {
    LaunchPolicy pol;
    const std::size_t preferred = ctx.info().is_gpu ? 256 : 64;
    pol.wg_size = choose_wg(ctx, topdown_kernel(ctx, p, preferred), local_size, preferred);
    if (local_size > 0) choose_wg(ctx, topdown_kernel(ctx, p, pol.wg_size), local_size, local_size);
    // Enough groups to fill the device, no more than the data needs.
    const std::size_t per_cu = ctx.info().is_gpu ? 2048 / pol.wg_size : 8;
    const std::size_t fill =
        std::max<std::size_t>(1, ctx.info().compute_units * std::max<std::size_t>(per_cu, 1));
    pol.groups = std::clamp<std::size_t>((p.n + pol.wg_size - 1) / pol.wg_size, 1, fill);
    pol.items_per_thread =
        static_cast<unsigned>((p.n + pol.groups * pol.wg_size - 1) / (pol.groups * pol.wg_size));
    pol.path = "atomic ticket";
    return std::make_unique<TopDownPlan>(ctx, p, pol);
  }
};

}  // namespace

std::unique_ptr<ReduceVariant> make_reduce_topdown() { return std::make_unique<TopDown>(); }

}  // namespace clreduce
