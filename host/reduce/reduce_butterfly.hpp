// reduce_butterfly.hpp: the butterfly variant, exposed so tests can read every work-item's copy
// of the total (the point of an all-reduce), not only the one the runner checks.
#pragma once

#include <memory>
#include <vector>

#include "reduce/variant.hpp"

namespace clreduce {

// A butterfly plan; with copies kept, each launch also writes every work-item's copy of the total
// into a buffer of the plan's, first filled with 0xA5 bytes (a host write per launch: off in the
// plans the variant makes by plan(), as it costs a write per work-item).
class ButterflyPlan : public ReducePlan {
 public:
  ButterflyPlan(Context& ctx, const ReduceProblem& p, LaunchPolicy pol, bool keep_copies);
  // The copies written by the last launch: one accumulator (acc_bytes()) per work-item of its
  // last launch, as raw device bytes; empty without keep_copies.
  std::vector<unsigned char> read_copies();

 private:
  void launch(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
              std::vector<cl::Event>& events) override;
  SumModel model(std::size_t n) const override;

  cl::Kernel first_, all_;
  cl::Buffer partials_, copies_;
  bool keep_copies_;
  std::size_t copies_written_ = 0;  // work-items in the last launch
};

class ButterflyVariant : public ReduceVariant {
 public:
  std::string name() const override { return "butterfly"; }
  std::string description() const override;
  // A plan that keeps every work-item's copy of the total (ButterflyPlan::read_copies()).
  std::unique_ptr<ButterflyPlan> plan_keeping_copies(Context& ctx, const ReduceProblem& p,
                                                     std::size_t local_size) const;

 protected:
  std::unique_ptr<ReducePlan> make_plan(Context& ctx, const ReduceProblem& p,
                                        std::size_t local_size) const override;

 private:
  LaunchPolicy choose(Context& ctx, const ReduceProblem& p, std::size_t local_size) const;
};

}  // namespace clreduce
