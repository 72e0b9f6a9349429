// multipass.hpp: the launch schedule shared by the ladder kernels (the seeds' kernels 1-7). Each
// pass folds its input into one partial per work-group and passes repeat over the partials until
// one value remains; the kernels differ, the schedule is this one class, shaped per variant.
#pragma once

#include <string>

#include "reduce/variant.hpp"

namespace clreduce {

// How kernels 5-7 finish a group's fold (clr_tail.h's CLR_TAIL), from Context::caps().
enum class TailPath { kBarrier = 0, kSubGroup = 1, kShfl = 2 };
// "barrier", "sub-group", "shfl.sync".
std::string tail_path_name(TailPath t);
// shfl.sync where the probe passed and wg is a multiple of 32, else sub-groups where the probe
// passed, else barriers.
TailPath choose_tail(const Capabilities& caps, std::size_t wg);

// What distinguishes one ladder kernel's schedule from another's.
struct LadderShape {
  int number = 0;           // the kernel's number in the seeds' table, 1-7
  std::string name;         // CLI name; the kernel is reduce_<name with '_'>, first pass + "_first"
  std::string description;  // one line for --list-variants
  unsigned loads = 1;       // elements each work-item loads per pass (1 or 2); 0: a grid-strided
                            // loop over a grid sized from the compute units and p = n / log2 n
  bool fixed_wg = false;    // group size set at build time with -DWG_SIZE (static local memory);
                            // else local memory is a kernel argument sized at launch
  bool tail = false;        // finishes with a CLR_TAIL path (kernels 5-7)
};

class MultiPassVariant : public ReduceVariant {
 public:
  explicit MultiPassVariant(LadderShape shape) : shape_(std::move(shape)) {}
  const LadderShape& shape() const { return shape_; }

  std::string name() const override { return shape_.name; }
  std::string description() const override { return shape_.description; }
  LaunchPolicy policy(Context& ctx, const ReduceProblem& p, std::size_t local_size) override;
  void enqueue(Context& ctx, const ReduceProblem& p, const LaunchPolicy& pol, const cl::Buffer& in,
               const cl::Buffer& out, std::vector<cl::Event>& events) override;
  // Sum over passes of the per-work-item chain plus the tree depth.
  std::uint64_t depth(const ReduceProblem& p, const LaunchPolicy& pol) const override;
  std::string device_path(Context& ctx) const override;

  // Work-groups of the pass over m inputs. Kernel 7 caps them at pol.groups (its first pass's
  // grid, sized from the compute units) and at p = m / log2 m work-items.
  std::size_t groups_for(std::size_t m, const LaunchPolicy& pol) const;

 private:
  std::size_t preferred_wg(Context& ctx) const;
  std::string kernel_name() const;
  std::string build_options(const ReduceProblem& p, std::size_t wg, TailPath tail,
                            const Capabilities& caps) const;
  TailPath tail_of(const LaunchPolicy& pol) const;

  LadderShape shape_;
};

}  // namespace clreduce
