// reduce_sequential_device.cpp: one work-item, one launch, n - 1 dependent operations.
#include "reduce/variant.hpp"

namespace clreduce {
namespace {

// Above this n the one-work-item loop takes seconds on a GPU; the variant is skipped.
constexpr std::size_t kMaxN = std::size_t{1} << 22;

class SequentialDevicePlan : public ReducePlan {
 public:
  SequentialDevicePlan(Context& ctx, const ReduceProblem& p, LaunchPolicy pol)
      : ReducePlan(ctx, "sequential-device", p, std::move(pol), p.n),
        kernel_(ctx.kernel("reduce_sequential_device.cl", "reduce_sequential_device",
                           p.cl_options())) {}

 private:
  void launch(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
              std::vector<cl::Event>& events) override {
    kernel_.setArg(0, in);
    kernel_.setArg(1, static_cast<cl_ulong>(n));
    kernel_.setArg(2, out);
    events.emplace_back();
    ctx_.queue().enqueueNDRangeKernel(kernel_, cl::NullRange, cl::NDRange(1), cl::NDRange(1),
                                      nullptr, &events.back());
  }
  // One chain of all n elements, in order from the identity.
  SumModel model(std::size_t n) const override { return strided_model(n, 1, 0); }

  cl::Kernel kernel_;
};

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

 protected:
  std::unique_ptr<ReducePlan> make_plan(Context& ctx, const ReduceProblem& p,
                                        std::size_t) const override {
    LaunchPolicy pol;
    pol.path = "single work-item";
    return std::make_unique<SequentialDevicePlan>(ctx, p, pol);
  }
};

}  // namespace

std::unique_ptr<ReduceVariant> make_reduce_sequential_device() {
  return std::make_unique<SequentialDevice>();
}

}  // namespace clreduce
