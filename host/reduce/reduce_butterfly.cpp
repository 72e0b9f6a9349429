// reduce_butterfly.cpp: the XOR all-reduce. Launch 1 leaves each group's total in all of its
// work-items; with several groups, launch 2 has every group fold all partials and butterfly again.
#include "reduce/reduce_butterfly.hpp"

#include <algorithm>

#include "clreduce/error.hpp"

namespace clreduce {
namespace {

bool is_pow2(std::size_t x) { return x && (x & (x - 1)) == 0; }

// Additions above a work-item's grid-stride chain: launch 1's butterfly, then (several groups)
// launch 2's loop over the partials and its butterfly.
std::uint64_t above_chains(const LaunchPolicy& pol) {
  return 2 * ceil_log2(pol.wg_size) + (pol.groups + pol.wg_size - 1) / pol.wg_size;
}

cl::Kernel kernel(Context& ctx, const ReduceProblem& p, std::size_t wg, const char* name) {
  return ctx.kernel("reduce_butterfly.cl", name,
                    p.cl_options() + " -DWG_SIZE=" + std::to_string(wg));
}

}  // namespace

std::string ButterflyVariant::description() const {
  return "XOR all-reduce: every work-item ends holding the total; power-of-two groups";
}

LaunchPolicy ButterflyVariant::choose(Context& ctx, const ReduceProblem& p,
                                      std::size_t local_size) const {
  const DeviceInfo& d = ctx.info();
  const std::string ls = "work-group size " + std::to_string(local_size);
  if (local_size && !is_pow2(local_size))
    throw Error(Errc::kUsage,
                ls + ": butterfly needs a power-of-two work-group size (partner lid ^ b)");
  const auto local_bytes = [&](std::size_t w) { return 2 * w * p.acc_bytes(); };
  check_local_size(ctx, local_size, local_bytes(local_size));
  const std::size_t preferred = d.is_gpu ? 256 : 64;
  std::size_t wg =
      choose_wg(ctx, kernel(ctx, p, local_size ? local_size : preferred, "reduce_butterfly"),
                local_size, local_size ? local_size : preferred);
  while (wg > 1 && local_bytes(wg) > d.local_mem) wg /= 2;  // only without an override
  for (const char* k : {"reduce_butterfly", "reduce_butterfly_all"}) {
    const std::size_t limit = kernel_max_wg(ctx, kernel(ctx, p, wg, k));
    if (wg > limit) {
      if (local_size)
        throw Error(Errc::kUsage, ls + " is larger than " + d.name + " allows for this kernel (" +
                                      std::to_string(limit) + ")");
      while (wg > limit) wg /= 2;
    }
  }
  LaunchPolicy pol;
  pol.wg_size = wg;
  // Enough groups to fill the device, no more than the data needs; launch 2 reads groups^2
  // partials, so the grid stays near the device's size.
  const std::size_t per_cu = d.is_gpu ? std::max<std::size_t>(1, 2048 / wg) : 8;
  const std::size_t fill = std::max<std::size_t>(1, d.compute_units * per_cu);
  pol.groups = std::clamp<std::size_t>((p.n + wg - 1) / wg, 1, fill);
  pol.items_per_thread = static_cast<unsigned>(
      (std::max<std::size_t>(p.n, 1) + pol.groups * wg - 1) / (pol.groups * wg));
  pol.path = pol.groups == 1 ? "1 launch" : "2 launches";
  return pol;
}

std::unique_ptr<ReducePlan> ButterflyVariant::make_plan(Context& ctx, const ReduceProblem& p,
                                                        std::size_t local_size) const {
  return std::make_unique<ButterflyPlan>(ctx, p, choose(ctx, p, local_size), false);
}

std::unique_ptr<ButterflyPlan> ButterflyVariant::plan_keeping_copies(Context& ctx,
                                                                     const ReduceProblem& p,
                                                                     std::size_t local_size) const {
  if (p.n == 0) throw Error(Errc::kUsage, name() + ": an empty array needs no plan");
  return std::make_unique<ButterflyPlan>(ctx, p, choose(ctx, p, local_size), true);
}

ButterflyPlan::ButterflyPlan(Context& ctx, const ReduceProblem& p, LaunchPolicy pol,
                             bool keep_copies)
    : ReducePlan(ctx, "butterfly", p, pol, pol.items_per_thread + above_chains(pol)),
      keep_copies_(keep_copies) {
  const std::size_t wg = policy().wg_size, g = policy().groups;
  first_ = kernel(ctx, p, wg, "reduce_butterfly");
  if (g > 1) all_ = kernel(ctx, p, wg, "reduce_butterfly_all");
  partials_ = ctx.zeroed_buffer(g * p.acc_bytes());
  copies_ = ctx.zeroed_buffer(keep_copies_ ? g * wg * p.acc_bytes() : 16);
}

void ButterflyPlan::launch(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                           std::vector<cl::Event>& events) {
  const std::size_t wg = policy().wg_size, g = policy().groups, acc = problem().acc_bytes();
  const cl_uint keep = keep_copies_ ? 1 : 0;
  if (keep_copies_) {  // a sentinel, so a copy no work-item wrote cannot pass for the total
    const std::vector<unsigned char> sentinel(g * wg * acc, 0xA5);
    ctx_.write(copies_, sentinel.size(), sentinel.data(), "butterfly's copies' sentinel");
  }
  first_.setArg(0, in);
  first_.setArg(1, static_cast<cl_ulong>(n));
  first_.setArg(2, partials_);
  first_.setArg(3, out);
  first_.setArg(4, copies_);
  first_.setArg(5, keep);
  events.emplace_back();
  ctx_.queue().enqueueNDRangeKernel(first_, cl::NullRange, cl::NDRange(g * wg), cl::NDRange(wg),
                                    nullptr, &events.back());
  if (g > 1) {
    all_.setArg(0, partials_);
    all_.setArg(1, static_cast<cl_uint>(g));
    all_.setArg(2, out);
    all_.setArg(3, copies_);
    all_.setArg(4, keep);
    events.emplace_back();
    ctx_.queue().enqueueNDRangeKernel(all_, cl::NullRange, cl::NDRange(g * wg), cl::NDRange(wg),
                                      nullptr, &events.back());
  }
  copies_written_ = keep_copies_ ? g * wg : 0;
}

SumModel ButterflyPlan::model(std::size_t n) const {
  return strided_model(n, policy().groups * policy().wg_size, above_chains(policy()));
}

std::vector<unsigned char> ButterflyPlan::read_copies() {
  std::vector<unsigned char> v(copies_written_ * problem().acc_bytes());
  if (!v.empty()) ctx_.read(copies_, v.size(), v.data(), "butterfly's copies");
  return v;
}

std::unique_ptr<ReduceVariant> make_reduce_butterfly() {
  return std::make_unique<ButterflyVariant>();
}

}  // namespace clreduce
