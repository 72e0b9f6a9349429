// multipass.cpp: passes until one value remains. The group size, the tail path and the local
// memory are settled against the device in policy(), before anything is launched, so a size the
// device or the kernel cannot take is an error, never a wrong answer.
#include "reduce/multipass.hpp"

#include <algorithm>

#include "clreduce/error.hpp"

namespace clreduce {

namespace {

// The kernel's largest unrolled tree (clr_unrolled_fold: twelve halving steps).
constexpr std::size_t kMaxFixedWg = 4096;

std::size_t div_up(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

std::size_t floor_pow2(std::size_t x) {
  std::size_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

}  // namespace

std::string tail_path_name(TailPath t) {
  switch (t) {
    case TailPath::kShfl: return "shfl.sync";
    case TailPath::kSubGroup: return "sub-group";
    case TailPath::kBarrier: break;
  }
  return "barrier";
}

TailPath choose_tail(const Capabilities& caps, std::size_t wg) {
  if (caps.nv_shfl && wg % 32 == 0) return TailPath::kShfl;
  if (caps.subgroups) return TailPath::kSubGroup;
  return TailPath::kBarrier;
}

namespace {

constexpr std::size_t kPreferredWg = 256;

std::string kernel_name(const LadderShape& shape) {
  std::string k = "reduce_" + shape.name;
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

std::string build_options(const LadderShape& shape, const ReduceProblem& p, std::size_t wg,
                          TailPath tail, const Capabilities& caps) {
  std::string o = p.cl_options();
  if (shape.fixed_wg) o += " -DWG_SIZE=" + std::to_string(wg);
  if (shape.tail) o += " -DCLR_TAIL=" + std::to_string(static_cast<int>(tail));
  if (tail == TailPath::kSubGroup) o += " " + caps.subgroups_options;
  return o;
}

// Work-groups of the pass over m inputs with groups of wg. Kernel 7 (loads 0) caps them at
// cap (its first pass's grid, sized from the compute units) and at p = m / log2 m work-items.
std::size_t groups_for(const LadderShape& shape, std::size_t m, std::size_t wg, std::size_t cap) {
  if (m == 0) return 1;
  if (shape.loads > 0) return div_up(m, shape.loads * wg);
  const std::size_t log2m = std::max<std::size_t>(1, ceil_log2(m));
  const std::size_t cost_optimal = div_up(m, log2m * wg);  // p = m / log2 m work-items
  return std::max<std::size_t>(1, std::min({cap, cost_optimal, div_up(m, 2 * wg)}));
}

// Passes until one value remains; the schedule is recomputed from the length at each launch
// (arithmetic only), so a plan runs any length up to its problem's n.
class MultiPassPlan : public ReducePlan {
 public:
  MultiPassPlan(Context& ctx, const LadderShape& shape, const ReduceProblem& p, LaunchPolicy pol,
                TailPath tail, std::size_t cap, const cl::Kernel& first)
      : ReducePlan(ctx, shape.name, p, pol, depth_of(shape, p.n, pol.wg_size, cap)),
        shape_(shape),
        tail_(tail),
        cap_(cap),
        first_(first) {
    static const Capabilities kNone;
    const std::size_t wg = policy().wg_size;
    rest_ = ctx.kernel(
        kernel_name(shape) + ".cl", kernel_name(shape),
        build_options(shape, p, wg, tail, tail == TailPath::kBarrier ? kNone : ctx.caps()));
    const std::size_t g1 = groups_for(shape, p.n, wg, cap);
    const std::size_t g2 = groups_for(shape, g1, wg, cap);
    // Pass k writes ping, pong, ping, ...; pass 3 onwards fits in buffers sized for passes 1-2.
    ping_ = ctx.zeroed_buffer(g1 * p.acc_bytes());
    pong_ = ctx.zeroed_buffer(g2 * p.acc_bytes());
  }

  TailPath tail() const { return tail_; }

 private:
  // The most elements one work-item folds in a pass over m inputs with g groups: `loads`, or for
  // kernel 7 work-item 0's, elements 0 and wg of each block of 2 wg (the grid) below m.
  static std::uint64_t chain_of(const LadderShape& shape, std::size_t m, std::size_t g,
                                std::size_t wg) {
    if (shape.loads > 0) return div_up(std::max<std::size_t>(m, 1), g * wg);
    const std::size_t grid = 2 * g * wg;
    return div_up(m, grid) + div_up(m > wg ? m - wg : 0, grid);
  }

  // Sum over passes of the per-work-item chain plus the tree depth; from pass `from` on.
  static std::uint64_t depth_of(const LadderShape& shape, std::size_t n, std::size_t wg,
                                std::size_t cap, int from = 0) {
    std::uint64_t d = 0;
    int pass = 0;
    for (std::size_t m = n;; ++pass) {
      const std::size_t g = groups_for(shape, m, wg, cap);
      if (pass >= from) d += chain_of(shape, m, g, wg) + ceil_log2(wg);
      if (g == 1) break;
      m = g;
    }
    return d;
  }

  // Kernel 7's first pass: work-item lid of group g folds elements g·2wg + lid and that + wg of
  // each grid-sized block, in order from the identity (SumModel::kStrided with fold 2), then its
  // group's tree and the later passes. Kernels 1-6 load one or two elements: their depth.
  SumModel model(std::size_t n) const override {
    if (shape_.loads > 0) return ReducePlan::model(n);
    const std::size_t wg = policy().wg_size, g = groups_for(shape_, n, wg, cap_);
    SumModel m;
    m.kind = SumModel::Kind::kStrided;
    m.period = 2 * g * wg;
    m.width = wg;
    m.fold = 2;
    m.above = ceil_log2(wg) + depth_of(shape_, n, wg, cap_, 1);
    m.depth = depth_of(shape_, n, wg, cap_);
    return m;
  }

  void launch(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
              std::vector<cl::Event>& events) override {
    const std::size_t wg = policy().wg_size, acc = problem().acc_bytes();
    cl::Buffer src = in;
    std::size_t m = n;
    bool from_input = true;
    while (true) {
      const std::size_t g = groups_for(shape_, m, wg, cap_);
      const cl::Buffer dst = g == 1 ? out : (src() == ping_() ? pong_ : ping_);
      cl::Kernel& k = from_input ? first_ : rest_;
      k.setArg(0, src);
      k.setArg(1, static_cast<cl_ulong>(m));
      k.setArg(2, dst);
      if (!shape_.fixed_wg) k.setArg(3, cl::Local(wg * acc));
      events.emplace_back();
      ctx_.queue().enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(g * wg), cl::NDRange(wg),
                                        nullptr, &events.back());
      if (g == 1) break;
      src = dst;
      m = g;
      from_input = false;
    }
  }

  LadderShape shape_;
  TailPath tail_;
  std::size_t cap_;  // kernel 7's most groups per pass
  cl::Kernel first_, rest_;
  cl::Buffer ping_, pong_;
};

}  // namespace

std::unique_ptr<ReducePlan> MultiPassVariant::make_plan(Context& ctx, const ReduceProblem& p,
                                                        std::size_t local_size) const {
  const DeviceInfo& d = ctx.info();
  const std::string file = kernel_name(shape_) + ".cl";
  const std::string first = kernel_name(shape_) + "_first";
  const std::string ls = "work-group size " + std::to_string(local_size);
  static const Capabilities kNone;
  if (local_size == 1 && shape_.loads == 1)
    throw Error(Errc::kUsage, ls + ": " + name() +
                                  " needs at least 2 work-items per group "
                                  "(with one element each, a pass would never shrink the array)");
  if (shape_.fixed_wg && local_size > kMaxFixedWg)
    throw Error(Errc::kUsage, ls + ": " + name() + " unrolls its tree for groups of at most " +
                                  std::to_string(kMaxFixedWg) + " work-items");
  const auto local_bytes = [&](std::size_t w) { return w * p.acc_bytes() + 16; };
  check_local_size(ctx, local_size, local_bytes(local_size));
  auto build = [&](std::size_t wg, TailPath t) {
    const Capabilities& caps = t == TailPath::kBarrier ? kNone : ctx.caps();
    return ctx.kernel(file, first, build_options(shape_, p, wg, t, caps));
  };

  // The group size: the override or the preferred size, within what the device, the kernel
  // (as built for that size) and the local memory allow.
  std::size_t wg = local_size ? local_size : kPreferredWg;
  wg = choose_wg(ctx, build(wg, TailPath::kBarrier), local_size, wg);
  while (wg > 1 && local_bytes(wg) > d.local_mem) wg /= 2;  // only without an override
  if (shape_.fixed_wg) {
    while (true) {  // a kernel built for wg may allow less than the generic build did
      const std::size_t limit = kernel_max_wg(ctx, build(wg, TailPath::kBarrier));
      if (wg <= limit) break;
      if (local_size)
        throw Error(Errc::kUsage, ls + " is larger than " + d.name + " allows for this kernel (" +
                                      std::to_string(limit) + ")");
      wg = floor_pow2(limit);
    }
  }

  LaunchPolicy pol;
  pol.wg_size = wg;
  TailPath tail = TailPath::kBarrier;
  if (shape_.tail) {
    // The fast tail the probes allow; should its build take smaller groups here, the portable
    // one, and say so. A build that fails is the kernel file's error (exit 4), as for any plan:
    // the probes have found the device's compiler takes the tail's code.
    tail = choose_tail(ctx.caps(), wg);
    std::string note;
    if (tail != TailPath::kBarrier) {
      if (kernel_max_wg(ctx, build(wg, tail)) < wg)
        note = " (" + tail_path_name(tail) + " build takes smaller groups)";
      if (!note.empty()) tail = TailPath::kBarrier;
    }
    pol.path = tail_path_name(tail) + note;
  }
  std::size_t cap = 0;  // no cap but the loads' for kernels 1-6
  if (shape_.loads == 0) {
    // Kernel 7: enough groups to fill a GPU, and no more work-items than p = n / log2 n. PoCL
    // runs a group's work-items one after another, so a long grid-strided walk per work-item
    // sweeps the array once per work-item: on a CPU the p = n / log2 n cap alone decides.
    const std::size_t per_cu = d.is_gpu ? std::max<std::size_t>(1, 2048 / wg) : 256;
    cap = std::max<std::size_t>(1, d.compute_units * per_cu);
    cap = groups_for(shape_, p.n, wg, cap);
  }
  pol.groups = groups_for(shape_, p.n, wg, cap);
  pol.items_per_thread =
      static_cast<unsigned>(div_up(std::max<std::size_t>(p.n, 1), pol.groups * wg));
  if (pol.groups * p.acc_bytes() > d.max_alloc)
    throw Error(Errc::kUnsupported, name() + ": " + std::to_string(pol.groups) +
                                        " partials exceed " + d.name +
                                        "'s largest allocation; use larger work-groups");
  return std::make_unique<MultiPassPlan>(ctx, shape_, p, pol, tail, cap, build(wg, tail));
}

std::string MultiPassVariant::device_path(Context& ctx) const {
  if (!shape_.tail) return "";
  return tail_path_name(choose_tail(ctx.caps(), kPreferredWg));
}

}  // namespace clreduce
