// variant.cpp: shared helpers for variants: -D options, group-size choice, depth arithmetic.
#include "reduce/variant.hpp"

#include <algorithm>
#include <utility>

#include "clreduce/error.hpp"

namespace clreduce {

static int type_code(DType t) { return static_cast<int>(t); }

std::string LaunchPolicy::str() const {
  std::string s = "wg=" + std::to_string(wg_size) + " groups=" + std::to_string(groups) +
                  " items=" + std::to_string(items_per_thread) +
                  " vec=" + std::to_string(vec_width);
  if (!path.empty()) s += " path=" + path;
  return s;
}

std::string ReduceProblem::cl_options() const {
  return "-DCLR_TYPE=" + std::to_string(type_code(type)) +
         " -DCLR_ACC=" + std::to_string(type_code(acc())) +
         " -DCLR_OP=" + std::to_string(static_cast<int>(op));
}

ReducePlan::ReducePlan(Context& ctx, std::string variant, const ReduceProblem& p,
                       LaunchPolicy policy, std::uint64_t depth)
    : ctx_(ctx),
      variant_(std::move(variant)),
      problem_(p),
      policy_(std::move(policy)),
      depth_(depth) {}

SumModel ReducePlan::sum_model(std::size_t n) const {
  if (options_may_reorder(ctx_.tuning().build_options)) return SumModel::depth_only(n);
  return model(n);
}

SumModel ReducePlan::model(std::size_t) const { return SumModel::depth_only(depth_); }

void ReducePlan::enqueue(const cl::Buffer& in, std::size_t offset, std::size_t length,
                         const cl::Buffer& out, std::vector<cl::Event>& events) {
  if (length == 0 || length > problem_.n)
    throw Error(Errc::kUsage, variant_ + ": a plan for " + std::to_string(problem_.n) +
                                  " elements cannot reduce " + std::to_string(length));
  const std::size_t size = dtype_size(problem_.type);
  if (out.getInfo<CL_MEM_SIZE>() < out_bytes())
    throw Error(Errc::kUsage, variant_ + ": its output buffer holds " +
                                  std::to_string(out.getInfo<CL_MEM_SIZE>()) +
                                  " bytes, and a launch leaves " + std::to_string(out_bytes()));
  if (!any_start()) {
    launch(ctx_.view(in, offset * size, length * size), length, out, events);
    return;
  }
  const std::size_t bytes = in.getInfo<CL_MEM_SIZE>();
  if (offset > bytes / size || length > bytes / size - offset)
    throw Error(Errc::kUsage, variant_ + ": elements [" + std::to_string(offset) + ", " +
                                  std::to_string(offset + length) +
                                  ") pass the end of a buffer of " + std::to_string(bytes) +
                                  " bytes");
  launch_at(in, offset, length, out, events);
}

void ReducePlan::launch_at(const cl::Buffer&, std::size_t, std::size_t, const cl::Buffer&,
                           std::vector<cl::Event>&) {
  throw Error(Errc::kInternal, "internal: " + variant_ + "'s plan takes no first element");
}

TicketPlan::TicketPlan(Context& ctx, std::string variant, const ReduceProblem& p,
                       LaunchPolicy policy, std::uint64_t depth, cl::Kernel kernel, bool first_arg)
    : ReducePlan(ctx, std::move(variant), p, std::move(policy), depth),
      kernel_(std::move(kernel)),
      first_arg_(first_arg),
      partials_(ctx.zeroed_buffer(this->policy().groups * p.acc_bytes())),
      ticket_(ctx.zeroed_buffer(sizeof(cl_uint))) {
  kernel_.setArg(2, partials_);
  kernel_.setArg(3, ticket_);
  if (first_arg_) kernel_.setArg(5, cl_ulong{0});
}

void TicketPlan::launch(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                        std::vector<cl::Event>& events) {
  launch_at(in, 0, n, out, events);
}

void TicketPlan::launch_at(const cl::Buffer& in, std::size_t first, std::size_t n,
                           const cl::Buffer& out, std::vector<cl::Event>& events) {
  if (first_arg_) {
    if (first != first_set_) kernel_.setArg(5, static_cast<cl_ulong>(first));
    first_set_ = first;
  } else if (first != 0) {
    ReducePlan::launch_at(in, first, n, out, events);  // throws
  }
  // Each argument setting costs the driver a few hundred ns (NVIDIA's): the buffers are set
  // every launch (a handle may name a new buffer), n only when it changed.
  kernel_.setArg(0, in);
  if (n != n_set_) kernel_.setArg(1, static_cast<cl_ulong>(n));
  n_set_ = n;
  kernel_.setArg(4, out);
  ctx_.queue().enqueueNDRangeKernel(
      kernel_, cl::NullRange, cl::NDRange(policy().groups * policy().wg_size),
      cl::NDRange(policy().wg_size), nullptr, ctx_.event_slot(events));
}

std::unique_ptr<ReducePlan> ReduceVariant::plan(Context& ctx, const ReduceProblem& p,
                                                std::size_t local_size) const {
  if (p.n == 0)
    throw Error(Errc::kUsage,
                name() + ": an empty array needs no plan (its reduction is the identity)");
  return make_plan(ctx, p, local_size);
}

std::string ReduceVariant::unsupported(Context&, const ReduceProblem&) const { return ""; }

std::string ReduceVariant::device_path(Context&) const { return ""; }

std::string format_reduce_variant_list(Context* ctx) {
  std::string s;
  for (const auto& v : reduce_variants()) {
    std::string line = v->name();
    line.resize(std::max<std::size_t>(line.size() + 1, 23), ' ');
    line += v->description();
    if (ctx) {
      const std::string path = v->device_path(*ctx);
      if (!path.empty())
        line += " [device " + std::to_string(ctx->info().index) + ": " + path + "]";
    }
    s += line + "\n";
  }
  return s;
}

std::uint64_t ceil_log2(std::uint64_t x) {
  std::uint64_t k = 0;
  while ((std::uint64_t{1} << k) < x) ++k;
  return k;
}

SumModel strided_model(std::size_t n, std::uint64_t period, std::uint64_t above) {
  SumModel m;
  m.kind = SumModel::Kind::kStrided;
  m.period = m.width = std::max<std::uint64_t>(period, 1);
  m.above = above;
  m.depth = (n + m.period - 1) / m.period + above;
  return m;
}

bool options_may_reorder(const std::string& o) {
  for (const char* flag : {"-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations", "-D"})
    if (o.find(flag) != std::string::npos) return true;
  return false;
}

std::size_t kernel_max_wg(Context& ctx, const cl::Kernel& k) {
  const std::size_t km = k.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(ctx.info().device);
  return std::min(km, ctx.info().max_wg_size);
}

void check_local_size(Context& ctx, std::size_t local_size, std::size_t local_bytes) {
  if (local_size == 0) return;
  const DeviceInfo& d = ctx.info();
  const std::string ls = "work-group size " + std::to_string(local_size);
  if (local_size > d.max_wg_size)
    throw Error(Errc::kUsage, ls + " is larger than " + d.name + " allows (" +
                                  std::to_string(d.max_wg_size) + ")");
  if (local_bytes > d.local_mem)
    throw Error(Errc::kUsage, ls + " needs " + std::to_string(local_bytes) +
                                  " bytes of local memory; " + d.name + " has " +
                                  std::to_string(d.local_mem));
}

std::size_t choose_wg(Context& ctx, const cl::Kernel& k, std::size_t wanted,
                      std::size_t preferred) {
  const std::size_t limit = kernel_max_wg(ctx, k);
  if (wanted > 0) {
    if (wanted > limit)
      throw Error(Errc::kUsage, "work-group size " + std::to_string(wanted) + " is larger than " +
                                    ctx.info().name + " allows for this kernel (" +
                                    std::to_string(limit) + ")");
    return wanted;
  }
  std::size_t wg = std::min(preferred, limit);
  std::size_t p = 1;
  while (p * 2 <= wg) p *= 2;
  return p;
}

}  // namespace clreduce
