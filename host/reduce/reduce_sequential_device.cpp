// reduce_sequential_device.cpp: one work-item, one launch, n - 1 dependent operations.
#include "reduce/variant.hpp"

namespace clreduce {
namespace {

// Above this n the one-work-item loop takes seconds on a GPU; the variant is skipped.
constexpr std::size_t kMaxN = std::size_t{1} << 22;

class SequentialDevice : public ReduceVariant {
 public:
  std::string name() const override { return "sequential-device"; }
  std::string description() const override {
    return "one work-item loops over the whole array (the seeds' \"seq GPU\"); n <= 2^22";
  }
  std::string unsupported(Context&, const ReduceProblem& p) const override {
    if (p.n > kMaxN) return "n > 2^22: one work-item would take too long";
    return "";
  }
  LaunchPolicy policy(Context&, const ReduceProblem&, std::size_t) override {
    LaunchPolicy pol;
    pol.path = "single work-item";
    return pol;
  }
  void enqueue(Context& ctx, const ReduceProblem& p, const LaunchPolicy&, const cl::Buffer& in,
               const cl::Buffer& out, std::vector<cl::Event>& events) override {
    cl::Kernel k = ctx.kernel("reduce_sequential_device.cl", "reduce_sequential_device", p.cl_options());
    k.setArg(0, in);
    k.setArg(1, static_cast<cl_ulong>(p.n));
    k.setArg(2, out);
    events.emplace_back();
    ctx.queue().enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(1), cl::NDRange(1), nullptr,
                                     &events.back());
  }
  std::uint64_t depth(const ReduceProblem& p, const LaunchPolicy&) const override { return p.n; }
};

}  // namespace

std::unique_ptr<ReduceVariant> make_reduce_sequential_device() {
  return std::make_unique<SequentialDevice>();
}

}  // namespace clreduce
