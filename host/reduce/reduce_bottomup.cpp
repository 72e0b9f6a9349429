// reduce_bottomup.cpp: ceil(log2 n) launches, each halving the array into a ping-pong buffer.
#include "reduce/variant.hpp"

#include "clreduce/error.hpp"

namespace clreduce {
namespace {

class BottomUpPlan : public ReducePlan {
 public:
  BottomUpPlan(Context& ctx, const ReduceProblem& p, LaunchPolicy pol)
      : ReducePlan(ctx, "bottomup", p, std::move(pol), ceil_log2(p.n) + 1),
        first_(ctx.kernel("reduce_bottomup.cl", "reduce_bottomup_first", p.cl_options())),
        rest_(ctx.kernel("reduce_bottomup.cl", "reduce_bottomup", p.cl_options())) {
    const std::size_t half = (p.n + 1) / 2;
    ping_ = ctx.zeroed_buffer(half * p.acc_bytes());
    pong_ = ctx.zeroed_buffer((half + 1) / 2 * p.acc_bytes());
  }

 private:
  void launch(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
              std::vector<cl::Event>& events) override {
    const std::size_t wg = policy().wg_size;
    std::size_t m = n;
    bool from_input = true;
    cl::Buffer src = in;
    while (true) {
      const std::size_t h = (m + 1) / 2;
      const cl::Buffer dst = h == 1 ? out : (src() == ping_() ? pong_ : ping_);
      cl::Kernel& k = from_input ? first_ : rest_;
      k.setArg(0, src);
      k.setArg(1, static_cast<cl_ulong>(m));
      k.setArg(2, dst);
      events.emplace_back();
      ctx_.queue().enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(round_up(h, wg)),
                                        cl::NDRange(wg), nullptr, &events.back());
      if (h == 1) break;
      src = dst;
      m = h;
      from_input = false;
    }
  }

  cl::Kernel first_, rest_;
  cl::Buffer ping_, pong_;  // pass k writes ping, pong, ping, ...
};

class BottomUp : public ReduceVariant {
 public:
  std::string name() const override { return "bottomup"; }
  std::string description() const override {
    return "multi-launch pairwise tree: pairs, then fours, ...; ceil(log2 n) launches";
  }
  std::string unsupported(Context& ctx, const ReduceProblem& p) const override {
    if ((p.n + 1) / 2 * p.acc_bytes() > ctx.info().max_alloc)
      return "its half-size scratch buffer exceeds the device's largest allocation";
    return "";
  }

 protected:
  std::unique_ptr<ReducePlan> make_plan(Context& ctx, const ReduceProblem& p,
                                        std::size_t local_size) const override {
    cl::Kernel k = ctx.kernel("reduce_bottomup.cl", "reduce_bottomup", p.cl_options());
    LaunchPolicy pol;
    pol.wg_size = choose_wg(ctx, k, local_size, 256);
    pol.groups = (std::max<std::size_t>((p.n + 1) / 2, 1) + pol.wg_size - 1) / pol.wg_size;
    pol.path = std::to_string(ceil_log2(p.n)) + " launches";
    return std::make_unique<BottomUpPlan>(ctx, p, pol);
  }
};

}  // namespace

std::unique_ptr<ReduceVariant> make_reduce_bottomup() { return std::make_unique<BottomUp>(); }

}  // namespace clreduce
