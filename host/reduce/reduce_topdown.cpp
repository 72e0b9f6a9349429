// reduce_topdown.cpp: one launch for any n; the grid is sized from the device's compute units.
#include "reduce/variant.hpp"

#include <algorithm>

namespace clreduce {
namespace {

class TopDown : public ReduceVariant {
 public:
  std::string name() const override { return "topdown"; }
  std::string description() const override {
    return "one launch for any n: groups fold grid-strided slices, the last group folds the partials";
  }
  LaunchPolicy policy(Context& ctx, const ReduceProblem& p, std::size_t local_size) override {
    LaunchPolicy pol;
    cl::Kernel k = kernel(ctx, p, ctx.info().is_gpu ? 256 : 64);
    pol.wg_size = choose_wg(ctx, k, local_size, ctx.info().is_gpu ? 256 : 64);
    if (local_size > 0) choose_wg(ctx, kernel(ctx, p, pol.wg_size), local_size, local_size);
    // Enough groups to fill the device, no more than the data needs.
    const std::size_t per_cu = ctx.info().is_gpu ? 2048 / pol.wg_size : 8;
    const std::size_t fill = std::max<std::size_t>(1, ctx.info().compute_units * std::max<std::size_t>(per_cu, 1));
    pol.groups = std::clamp<std::size_t>((p.n + pol.wg_size - 1) / pol.wg_size, 1, fill);
    pol.items_per_thread = static_cast<unsigned>((p.n + pol.groups * pol.wg_size - 1) / (pol.groups * pol.wg_size));
    pol.path = "atomic ticket";
    return pol;
  }
  void enqueue(Context& ctx, const ReduceProblem& p, const LaunchPolicy& pol, const cl::Buffer& in,
               const cl::Buffer& out, std::vector<cl::Event>& events) override {
    cl::Kernel k = kernel(ctx, p, pol.wg_size);
    cl::Buffer& partials = ctx.scratch("topdown.partials", pol.groups * p.acc_bytes());
    // The ticket starts zeroed (scratch buffers are) and each launch's last group resets it.
    cl::Buffer& ticket = ctx.scratch("topdown.ticket", sizeof(cl_uint));
    k.setArg(0, in);
    k.setArg(1, static_cast<cl_ulong>(p.n));
    k.setArg(2, partials);
    k.setArg(3, ticket);
    k.setArg(4, out);
    events.emplace_back();
    ctx.queue().enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(pol.groups * pol.wg_size),
                                     cl::NDRange(pol.wg_size), nullptr, &events.back());
  }
  std::uint64_t depth(const ReduceProblem&, const LaunchPolicy& pol) const override {
    return pol.items_per_thread + ceil_log2(pol.wg_size) * 2 + (pol.groups + pol.wg_size - 1) / pol.wg_size;
  }

 private:
  static cl::Kernel kernel(Context& ctx, const ReduceProblem& p, std::size_t wg) {
    return ctx.kernel("reduce_topdown.cl", "reduce_topdown",
                      p.cl_options() + " -DWG_SIZE=" + std::to_string(wg));
  }
};

}  // namespace

std::unique_ptr<ReduceVariant> make_reduce_topdown() { return std::make_unique<TopDown>(); }

}  // namespace clreduce
