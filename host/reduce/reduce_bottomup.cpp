// reduce_bottomup.cpp: ceil(log2 n) launches, each halving the array into a ping-pong buffer.
#include "reduce/variant.hpp"

#include "clreduce/error.hpp"

namespace clreduce {
namespace {

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
  LaunchPolicy policy(Context& ctx, const ReduceProblem& p, std::size_t local_size) override {
    cl::Kernel k = ctx.kernel("reduce_bottomup.cl", "reduce_bottomup", p.cl_options());
    LaunchPolicy pol;
    pol.wg_size = choose_wg(ctx, k, local_size, 256);
    pol.groups = (std::max<std::size_t>((p.n + 1) / 2, 1) + pol.wg_size - 1) / pol.wg_size;
    pol.path = std::to_string(ceil_log2(p.n)) + " launches";
    return pol;
  }
  void enqueue(Context& ctx, const ReduceProblem& p, const LaunchPolicy& pol, const cl::Buffer& in,
               const cl::Buffer& out, std::vector<cl::Event>& events) override {
    const std::string opts = p.cl_options();
    cl::Kernel first = ctx.kernel("reduce_bottomup.cl", "reduce_bottomup_first", opts);
    cl::Kernel rest = ctx.kernel("reduce_bottomup.cl", "reduce_bottomup", opts);
    const std::size_t half = (p.n + 1) / 2;
    cl::Buffer ping = ctx.scratch("bottomup.ping", half * p.acc_bytes());
    cl::Buffer pong = ctx.scratch("bottomup.pong", (half + 1) / 2 * p.acc_bytes());
    std::size_t m = p.n;
    bool from_input = true;
    cl::Buffer src = in;
    while (true) {
      const std::size_t h = (m + 1) / 2;
      cl::Buffer dst = h == 1 ? out : (src() == ping() ? pong : ping);
      cl::Kernel& k = from_input ? first : rest;
      k.setArg(0, src);
      k.setArg(1, static_cast<cl_ulong>(m));
      k.setArg(2, dst);
      events.emplace_back();
      ctx.queue().enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(round_up(h, pol.wg_size)),
                                       cl::NDRange(pol.wg_size), nullptr, &events.back());
      if (h == 1) break;
      src = dst;
      m = h;
      from_input = false;
    }
  }
  std::uint64_t depth(const ReduceProblem& p, const LaunchPolicy&) const override {
    return ceil_log2(p.n) + 1;
  }
};

}  // namespace

std::unique_ptr<ReduceVariant> make_reduce_bottomup() { return std::make_unique<BottomUp>(); }

}  // namespace clreduce
