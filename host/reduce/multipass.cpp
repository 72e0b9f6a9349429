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
    case TailPath::kShfl:
      return "shfl.sync";
    case TailPath::kSubGroup:
      return "sub-group";
    case TailPath::kBarrier:
      break;
  }
  return "barrier";
}

TailPath choose_tail(const Capabilities& caps, std::size_t wg) {
  if (caps.nv_shfl && wg % 32 == 0) return TailPath::kShfl;
  if (caps.subgroups) return TailPath::kSubGroup;
  return TailPath::kBarrier;
}

std::size_t MultiPassVariant::preferred_wg(Context&) const { return 256; }

std::string MultiPassVariant::kernel_name() const {
  std::string k = "reduce_" + shape_.name;
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

std::string MultiPassVariant::build_options(const ReduceProblem& p, std::size_t wg, TailPath tail,
                                            const Capabilities& caps) const {
  std::string o = p.cl_options();
  if (shape_.fixed_wg) o += " -DWG_SIZE=" + std::to_string(wg);
  if (shape_.tail) o += " -DCLR_TAIL=" + std::to_string(static_cast<int>(tail));
  if (tail == TailPath::kSubGroup) o += " " + caps.subgroups_options;
  return o;
}

TailPath MultiPassVariant::tail_of(const LaunchPolicy& pol) const {
  for (TailPath t : {TailPath::kShfl, TailPath::kSubGroup})
    if (pol.path.rfind(tail_path_name(t), 0) == 0) return t;
  return TailPath::kBarrier;
}

std::size_t MultiPassVariant::groups_for(std::size_t m, const LaunchPolicy& pol) const {
  const std::size_t wg = pol.wg_size;
  if (m == 0) return 1;
  if (shape_.loads > 0) return div_up(m, shape_.loads * wg);
  const std::size_t log2m = std::max<std::size_t>(1, ceil_log2(m));
  const std::size_t cost_optimal = div_up(m, log2m * wg);  // p = m / log2 m work-items
  return std::max<std::size_t>(1, std::min({pol.groups, cost_optimal, div_up(m, 2 * wg)}));
}

LaunchPolicy MultiPassVariant::policy(Context& ctx, const ReduceProblem& p,
                                      std::size_t local_size) {
  const DeviceInfo& d = ctx.info();
  const std::string file = kernel_name() + ".cl";
  const std::string first = kernel_name() + "_first";
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
    return ctx.kernel(file, first, build_options(p, wg, t, caps));
  };

  // The group size: the override or the preferred size, within what the device, the kernel
  // (as built for that size) and the local memory allow.
  std::size_t wg = local_size ? local_size : preferred_wg(ctx);
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
  if (shape_.tail) {
    // The fast tail the probes allow; should its build fail here, the portable one, and say so.
    TailPath tail = choose_tail(ctx.caps(), wg);
    std::string note;
    if (tail != TailPath::kBarrier) {
      try {
        if (kernel_max_wg(ctx, build(wg, tail)) < wg)
          note = " (" + tail_path_name(tail) + " build takes smaller groups)";
      } catch (const Error&) {
        note = " (" + tail_path_name(tail) + " failed to build)";
      }
      if (!note.empty()) tail = TailPath::kBarrier;
    }
    pol.path = tail_path_name(tail) + note;
  }
  if (shape_.loads == 0) {
    // Kernel 7: enough groups to fill a GPU, and no more work-items than p = n / log2 n. PoCL
    // runs a group's work-items one after another, so a long grid-strided walk per work-item
    // sweeps the array once per work-item: on a CPU the p = n / log2 n cap alone decides.
    const std::size_t per_cu = d.is_gpu ? std::max<std::size_t>(1, 2048 / wg) : 256;
    pol.groups = std::max<std::size_t>(1, d.compute_units * per_cu);
    pol.groups = groups_for(p.n, pol);
  } else {
    pol.groups = groups_for(p.n, pol);
  }
  pol.items_per_thread =
      static_cast<unsigned>(div_up(std::max<std::size_t>(p.n, 1), pol.groups * wg));
  if (pol.groups * p.acc_bytes() > d.max_alloc)
    throw Error(Errc::kUnsupported, name() + ": " + std::to_string(pol.groups) + " partials exceed " +
                                      d.name + "'s largest allocation; use a larger --local-size");
  return pol;
}

void MultiPassVariant::enqueue(Context& ctx, const ReduceProblem& p, const LaunchPolicy& pol,
                               const cl::Buffer& in, const cl::Buffer& out,
                               std::vector<cl::Event>& events) {
  static const Capabilities kNone;
  const TailPath tail = tail_of(pol);
  const std::string opts =
      build_options(p, pol.wg_size, tail, tail == TailPath::kBarrier ? kNone : ctx.caps());
  const std::string file = kernel_name() + ".cl";
  cl::Kernel first = ctx.kernel(file, kernel_name() + "_first", opts);
  cl::Kernel rest = ctx.kernel(file, kernel_name(), opts);
  const std::size_t g1 = groups_for(p.n, pol);
  const std::size_t g2 = groups_for(g1, pol);
  // Pass k writes ping, pong, ping, ...; pass 3 onwards fits in buffers sized for passes 1-2.
  const cl::Buffer ping = g1 > 1 ? ctx.scratch("ladder.ping", g1 * p.acc_bytes()) : out;
  const cl::Buffer pong = g2 > 1 ? ctx.scratch("ladder.pong", g2 * p.acc_bytes()) : out;
  cl::Buffer src = in;
  std::size_t m = p.n;
  bool from_input = true;
  while (true) {
    const std::size_t g = groups_for(m, pol);
    const cl::Buffer dst = g == 1 ? out : (src() == ping() ? pong : ping);
    cl::Kernel& k = from_input ? first : rest;
    k.setArg(0, src);
    k.setArg(1, static_cast<cl_ulong>(m));
    k.setArg(2, dst);
    if (!shape_.fixed_wg) k.setArg(3, cl::Local(pol.wg_size * p.acc_bytes()));
    events.emplace_back();
    ctx.queue().enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(g * pol.wg_size),
                                     cl::NDRange(pol.wg_size), nullptr, &events.back());
    if (g == 1) break;
    src = dst;
    m = g;
    from_input = false;
  }
}

std::uint64_t MultiPassVariant::depth(const ReduceProblem& p, const LaunchPolicy& pol) const {
  std::uint64_t d = 0;
  for (std::size_t m = p.n;;) {
    const std::size_t g = groups_for(m, pol);
    d += div_up(std::max<std::size_t>(m, 1), g * pol.wg_size) + ceil_log2(pol.wg_size);
    if (g == 1) break;
    m = g;
  }
  return d;
}

std::string MultiPassVariant::device_path(Context& ctx) const {
  if (!shape_.tail) return "";
  return tail_path_name(choose_tail(ctx.caps(), preferred_wg(ctx)));
}

}  // namespace clreduce
