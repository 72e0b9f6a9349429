// reduce_butterfly.hpp: the butterfly variant, exposed so tests can read every work-item's copy
// of the total (the point of an all-reduce), not only the one the runner checks.
#pragma once

#include <vector>

#include "reduce/variant.hpp"

namespace clreduce {

class ButterflyVariant : public ReduceVariant {
 public:
  std::string name() const override { return "butterfly"; }
  std::string description() const override;
  LaunchPolicy policy(Context& ctx, const ReduceProblem& p, std::size_t local_size) override;
  void enqueue(Context& ctx, const ReduceProblem& p, const LaunchPolicy& pol, const cl::Buffer& in,
               const cl::Buffer& out, std::vector<cl::Event>& events) override;
  std::uint64_t depth(const ReduceProblem& p, const LaunchPolicy& pol) const override;

  // When on, each enqueue also writes every work-item's copy of the total, into a buffer first
  // filled with 0xA5 bytes (off by default: it costs a write per work-item).
  void keep_copies(bool on) { keep_copies_ = on; }
  // The copies written by the last enqueue with keep_copies on: one accumulator (acc_bytes())
  // per work-item of its last launch, as raw device bytes.
  std::vector<unsigned char> read_copies(Context& ctx, const ReduceProblem& p) const;

 private:
  bool keep_copies_ = false;
  std::size_t copies_ = 0;  // work-items in the last launch
};

}  // namespace clreduce
