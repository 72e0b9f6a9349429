// scan_variant.cpp: scan -D options, the plan's sub-ranges and carry-in pass, the recursion over
// tile totals shared by every tiled scan (each plan owns its levels' scratch), group-size choice.
#include "scan/scan_variant.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "clreduce/error.hpp"

namespace clreduce {

std::string ScanProblem::cl_options() const {
  return "-DCLR_TYPE=" + std::to_string(static_cast<int>(type)) +
         " -DCLR_ACC=" + std::to_string(static_cast<int>(acc_type)) +
         " -DCLR_OP=" + std::to_string(static_cast<int>(op)) +
         " -DCLR_EXCLUSIVE=" + (exclusive ? "1" : "0") +
         " -DCLR_SEGMENTED=" + (segmented ? "1" : "0");
}

std::string ScanVariant::unsupported(Context&, const ScanProblem& p) const {
  if (is_arg_op(p.op))
    return op_name(p.op) + " has no prefix scan (scans take sum, prod, min, max)";
  return "";
}

std::unique_ptr<ScanPlan> ScanVariant::plan(Context& ctx, const ScanProblem& p,
                                            std::size_t local_size) const {
  if (p.n == 0)
    throw Error(Errc::kUsage, name() + ": an empty array needs no plan (its scan is empty)");
  if (is_arg_op(p.op))
    throw Error(Errc::kUsage, name() + ": " + op_name(p.op) +
                                  " has no prefix scan (scans take sum, prod, min, max)");
  return make_plan(ctx, p, local_size);
}

namespace {

// The carry-in pass's problem: the output type, no exclusive (the pass reads y only).
std::string carry_options(Context& ctx, const ScanProblem& p, std::size_t wg) {
  ScanProblem q = p;
  q.type = p.acc_type;
  q.exclusive = false;
  // A CPU's work-item runs its elements one after another: a contiguous block each streams
  // through the caches, where a grid stride would touch a new line per element.
  const std::string& layout = ctx.tuning().carry_layout;
  const bool blocked = layout == "blocked" || (layout == "auto" && ctx.info().type == "CPU");
  return q.cl_options() + " -DWG_SIZE=" + std::to_string(wg) +
         (blocked ? " -DCLR_CARRY_BLOCKED=1" : "");
}

// The acc_type bytes of a carry value; Error(Errc::kUsage) for a value of another type.
std::vector<unsigned char> carry_bytes(const Value& v, DType acc) {
  if (v.type != acc)
    throw Error(Errc::kUsage,
                "a carry of type " + dtype_name(v.type) + " for a scan into " + dtype_name(acc));
  std::vector<unsigned char> b(dtype_size(acc));
  dispatch_dtype(acc, [&](auto zero) {
    using A = decltype(zero);
    A a;
    if constexpr (std::is_floating_point_v<A>) {
      a = static_cast<A>(v.f);
    } else if constexpr (std::is_signed_v<A>) {
      a = static_cast<A>(v.i);
    } else {
      a = static_cast<A>(v.u);
    }
    std::memcpy(b.data(), &a, sizeof a);
  });
  return b;
}

}  // namespace

ScanPlan::ScanPlan(Context& ctx, std::string variant, const ScanProblem& p, LaunchPolicy policy,
                   std::uint64_t depth)
    : ctx_(ctx),
      variant_(std::move(variant)),
      problem_(p),
      policy_(std::move(policy)),
      depth_(depth) {
  if (!p.carry_in) return;
  const auto build = [&](std::size_t wg) {
    return ctx.kernel("scan_carry.cl", "scan_carry", carry_options(ctx, p, wg));
  };
  carry_wg_ = choose_scan_wg(
      ctx, 0, 64, [](std::size_t) { return std::size_t{0}; }, build);
  carry_apply_ = build(carry_wg_);
  // A few groups per compute unit, no more than the elements need.
  carry_max_groups_ = std::max<std::size_t>(1, 4 * ctx.info().compute_units);
  if (p.segmented) {
    carry_heads_ =
        ctx.kernel("scan_carry.cl", "scan_carry_heads", carry_options(ctx, p, carry_wg_));
    if (kernel_max_wg(ctx, carry_heads_) < carry_wg_)
      throw Error(Errc::kUsage, ctx.info().name + " cannot run the carry-in pass in groups of " +
                                    std::to_string(carry_wg_));
  }
  carry_groups_ = ctx.zeroed_buffer(carry_max_groups_ * sizeof(cl_ulong));
}

LookbackRunPlan::LookbackRunPlan(Context& ctx, std::string variant, const ScanProblem& p,
                                 LaunchPolicy policy, std::uint64_t depth, const cl::Kernel& kernel,
                                 std::size_t tiles)
    : ScanPlan(ctx, std::move(variant), p, std::move(policy), depth), kernel_(kernel) {
  // Descriptors carry the run's epoch, so they are zeroed once, here; the tile counter is reset
  // by each launch's last group.
  desc_ =
      ctx.zeroed_buffer(std::max<std::size_t>(tiles, 1) * (p.acc_bytes() / 4) * sizeof(cl_ulong));
  counters_ = ctx.zeroed_buffer(2 * sizeof(cl_uint));
}

void LookbackRunPlan::run(cl_uint first_arg, std::size_t global, std::size_t local,
                          std::vector<cl::Event>& events) {
  // Epochs tag the descriptors (30 bits, never 0): this plan's own, its buffers its own. Bumped
  // here, on the host, per launch: launches enqueued back to back each have their own, and the
  // tile counter is reset by each launch's last group, so nothing is read back between them.
  epoch_ = epoch_ % ((std::uint32_t{1} << 30) - 1) + 1;
  if (!scratch_set_) {  // the plan's own kernel: its scratch set once
    kernel_.setArg(first_arg, desc_);
    kernel_.setArg(first_arg + 1, counters_);
    scratch_set_ = true;
  }
  kernel_.setArg(first_arg + 2, static_cast<cl_uint>(epoch_));
  ctx_.queue().enqueueNDRangeKernel(kernel_, cl::NullRange, cl::NDRange(global), cl::NDRange(local),
                                    nullptr, ctx_.event_slot(events));
}

bool ScanPlan::launch_carry(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
                            std::size_t n, const std::vector<unsigned char>&,
                            std::vector<cl::Event>& events) {
  launch(in, flags, out, n, events);
  return false;
}

void ScanPlan::enqueue(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
                       std::size_t offset, std::size_t length, const Value* carry,
                       std::vector<cl::Event>& events) {
  if (length == 0 || length > problem_.n)
    throw Error(Errc::kUsage, variant_ + ": a plan for " + std::to_string(problem_.n) +
                                  " elements cannot scan " + std::to_string(length));
  if (carry && !problem_.carry_in)
    throw Error(Errc::kUsage, variant_ + ": a carry-in for a plan made without one");
  const std::size_t in_size = dtype_size(problem_.type), out_size = problem_.acc_bytes();
  if (carry) carry_bytes(*carry, problem_.acc_type);  // a carry of the wrong type: before launching
  const cl::Buffer x = ctx_.view(in, offset * in_size, length * in_size);
  const cl::Buffer f = problem_.segmented ? ctx_.view(flags, offset, length) : flags;
  const cl::Buffer y = ctx_.view(out, offset * out_size, length * out_size);
  if (!carry)
    launch(x, f, y, length, events);
  else if (!launch_carry(x, f, y, length, carry_bytes(*carry, problem_.acc_type), events))
    apply_carry(f, y, length, *carry, events);
}

void ScanPlan::enqueue_carry(const cl::Buffer& flags, const cl::Buffer& out, std::size_t offset,
                             std::size_t length, const Value& carry,
                             std::vector<cl::Event>& events) {
  if (length == 0 || length > problem_.n)
    throw Error(Errc::kUsage, variant_ + ": a plan for " + std::to_string(problem_.n) +
                                  " elements cannot carry into " + std::to_string(length));
  if (!problem_.carry_in)
    throw Error(Errc::kUsage, variant_ + ": a carry-in for a plan made without one");
  const std::size_t out_size = problem_.acc_bytes();
  apply_carry(problem_.segmented ? ctx_.view(flags, offset, length) : flags,
              ctx_.view(out, offset * out_size, length * out_size), length, carry, events);
}

void ScanPlan::apply_carry(const cl::Buffer& f, const cl::Buffer& y, std::size_t length,
                           const Value& carry, std::vector<cl::Event>& events) {
  const std::vector<unsigned char> c = carry_bytes(carry, problem_.acc_type);
  const std::size_t groups =
      std::clamp<std::size_t>((length + carry_wg_ - 1) / carry_wg_, 1, carry_max_groups_);
  if (problem_.segmented) {
    carry_heads_.setArg(0, f);
    carry_heads_.setArg(1, static_cast<cl_ulong>(length));
    carry_heads_.setArg(2, carry_groups_);
    events.emplace_back();
    ctx_.queue().enqueueNDRangeKernel(carry_heads_, cl::NullRange, cl::NDRange(groups * carry_wg_),
                                      cl::NDRange(carry_wg_), nullptr, &events.back());
  }
  carry_apply_.setArg(0, y);
  carry_apply_.setArg(1, static_cast<cl_ulong>(length));
  carry_apply_.setArg(2, c.size(), c.data());
  carry_apply_.setArg(3, carry_groups_);
  carry_apply_.setArg(4, static_cast<cl_uint>(groups));
  events.emplace_back();
  ctx_.queue().enqueueNDRangeKernel(carry_apply_, cl::NullRange, cl::NDRange(groups * carry_wg_),
                                    cl::NDRange(carry_wg_), nullptr, &events.back());
}

std::size_t scan_levels(std::size_t n, std::size_t tile) {
  if (tile < 2) return 0;
  std::size_t levels = 1;
  while (n > tile) {
    n = (n + tile - 1) / tile;
    ++levels;
  }
  return levels;
}

std::string scan_levels_text(std::size_t n, std::size_t tile) {
  const std::size_t l = scan_levels(n, tile);
  return std::to_string(l) + (l == 1 ? " level, " : " levels, ") + std::to_string(2 * l - 1) +
         (l == 1 ? " launch" : " launches");
}

std::uint64_t tiled_scan_depth(std::size_t n, std::size_t tile, std::uint64_t tile_depth) {
  return static_cast<std::uint64_t>(scan_levels(n, tile)) * (tile_depth + 1);
}

namespace {

// The problem of the level above p: its tile totals, scanned inclusively in the accumulator type.
ScanProblem totals_problem(const ScanProblem& p, std::size_t groups) {
  ScanProblem q = p;
  q.type = p.acc_type;
  q.n = groups;
  q.exclusive = false;
  q.carry_in = false;
  return q;
}

// One level of the recursion, as built for the plan's n: its tile kernel, and above level 0 the
// scan_add that adds this level's scanned totals into the level below.
struct Level {
  cl::Kernel tile;
  cl::Kernel add;          // adds the scanned totals of this level's tiles into them (groups > 1)
  std::size_t add_wg = 0;  // scan_add's work-group size
  // Scratch for up to the plan's n: tile totals, tile flags, first segment starts, scanned totals.
  cl::Buffer totals, tile_flags, heads, scanned;
};

class TiledScanPlan : public ScanPlan {
 public:
  TiledScanPlan(Context& ctx, const std::string& variant, const ScanProblem& p,
                const LaunchPolicy& pol, const TiledScan& ts, std::uint64_t depth)
      : ScanPlan(ctx, variant, p, pol, depth), wg_(ts.wg_size), tile_(ts.tile) {
    if (tile_ < 2)
      throw Error(Errc::kInternal,
                  "internal: a scan tile of fewer than 2 elements never ends the recursion");
    ScanProblem level = p;
    level.carry_in = false;
    while (true) {
      Level l;
      l.tile = ts.kernel(level);
      const std::size_t groups = (level.n + tile_ - 1) / tile_;
      l.totals = ctx.zeroed_buffer(groups * level.acc_bytes());
      l.tile_flags = ctx.zeroed_buffer(groups);
      l.heads = ctx.zeroed_buffer(groups * sizeof(cl_uint));
      l.scanned = ctx.zeroed_buffer(groups * level.acc_bytes());
      if (groups > 1) {
        // scan_add for the level whose totals problem is q.
        const ScanProblem q = totals_problem(level, groups);
        const auto build = [&](std::size_t w) {
          return ctx.kernel("scan_add.cl", "scan_add",
                            q.cl_options() + " -DWG_SIZE=" + std::to_string(w));
        };
        l.add_wg = choose_scan_wg(
            ctx, 0, 256, [](std::size_t) { return std::size_t{0}; }, build);
        l.add = build(l.add_wg);
      }
      levels_.push_back(l);
      if (groups == 1) break;
      level = totals_problem(level, groups);
    }
  }

 private:
  void launch(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out, std::size_t n,
              std::vector<cl::Event>& events) override {
    launch_level(0, in, flags, out, n, events);
  }

  void launch_level(std::size_t level, const cl::Buffer& in, const cl::Buffer& flags,
                    const cl::Buffer& out, std::size_t n, std::vector<cl::Event>& events) {
    Level& l = levels_[level];
    const std::size_t groups = (n + tile_ - 1) / tile_;
    l.tile.setArg(0, in);
    l.tile.setArg(1, flags);
    l.tile.setArg(2, static_cast<cl_ulong>(n));
    l.tile.setArg(3, out);
    l.tile.setArg(4, l.totals);
    l.tile.setArg(5, l.tile_flags);
    l.tile.setArg(6, l.heads);
    events.emplace_back();
    ctx_.queue().enqueueNDRangeKernel(l.tile, cl::NullRange, cl::NDRange(groups * wg_),
                                      cl::NDRange(wg_), nullptr, &events.back());
    if (groups == 1) return;

    // The totals are scanned inclusively in the accumulator type by the same recursion.
    launch_level(level + 1, l.totals, l.tile_flags, l.scanned, groups, events);

    l.add.setArg(0, out);
    l.add.setArg(1, static_cast<cl_ulong>(n));
    l.add.setArg(2, static_cast<cl_ulong>(tile_));
    l.add.setArg(3, l.scanned);
    l.add.setArg(4, l.heads);
    events.emplace_back();
    ctx_.queue().enqueueNDRangeKernel(l.add, cl::NullRange, cl::NDRange((groups - 1) * l.add_wg),
                                      cl::NDRange(l.add_wg), nullptr, &events.back());
  }

  std::size_t wg_, tile_;
  std::vector<Level> levels_;  // level 0: the user's problem; above: the tile totals
};

}  // namespace

std::unique_ptr<ScanPlan> make_tiled_plan(Context& ctx, const std::string& variant,
                                          const ScanProblem& p, const LaunchPolicy& pol,
                                          const TiledScan& ts, std::uint64_t depth) {
  return std::make_unique<TiledScanPlan>(ctx, variant, p, pol, ts, depth);
}

std::size_t choose_scan_wg(Context& ctx, std::size_t local_size, std::size_t preferred,
                           const std::function<std::size_t(std::size_t)>& local_bytes,
                           const std::function<cl::Kernel(std::size_t)>& build,
                           std::size_t min_wg) {
  const DeviceInfo& d = ctx.info();
  if (local_size > 0) {
    const std::string what = "work-group size " + std::to_string(local_size);
    if (local_size < min_wg)
      throw Error(Errc::kUsage, what + " is too small for this variant (at least " +
                                    std::to_string(min_wg) + ")");
    if (local_size > d.max_wg_size)
      throw Error(Errc::kUsage, what + " is larger than " + d.name + " allows (" +
                                    std::to_string(d.max_wg_size) + ")");
    if (local_bytes(local_size) > d.local_mem)
      throw Error(Errc::kUsage, what + " needs " + std::to_string(local_bytes(local_size)) +
                                    " bytes of local memory; " + d.name + " has " +
                                    std::to_string(d.local_mem));
    const std::size_t limit = kernel_max_wg(ctx, build(local_size));
    if (local_size > limit)
      throw Error(Errc::kUsage, what + " is larger than " + d.name + " allows for this kernel (" +
                                    std::to_string(limit) + ")");
    return local_size;
  }
  std::size_t wg = 1;
  while (wg * 2 <= std::min(preferred, d.max_wg_size)) wg *= 2;
  while (wg > 1 && (local_bytes(wg) > d.local_mem || kernel_max_wg(ctx, build(wg)) < wg)) wg /= 2;
  if (wg < min_wg)
    throw Error(Errc::kUsage,
                d.name + " cannot run this variant: no work-group size fits its local memory");
  return wg;
}

}  // namespace clreduce
