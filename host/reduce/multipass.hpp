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
  std::string device_path(Context& ctx) const override;

 protected:
  // Settles the group size, the tail path (TailPath, from the probes) and the local memory
  // against the device, builds both kernels and allocates the two partials buffers. The plan's
  // depth is the sum over passes of the per-work-item chain plus the tree depth.
  std::unique_ptr<ReducePlan> make_plan(Context& ctx, const ReduceProblem& p,
                                        std::size_t local_size) const override;

 private:
  LadderShape shape_;
};

}  // namespace clreduce
