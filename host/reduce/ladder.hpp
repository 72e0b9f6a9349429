// ladder.hpp: --variant ladder runs the seeds' kernels 1-7 in order on one array and prints the
// seeds' table: kernel number, name, time, GB/s, step and cumulative speedup, verified (or JSON
// lines: the runner's object with those keys added). Speedups compare kernel times.
#pragma once

#include <string>
#include <vector>

#include "run/runner.hpp"

namespace clreduce {

// The ladder variants, kernels 1-7 in order.
std::vector<ReduceVariant*> ladder_variants();
// The kernel number (1-7) of the variant named `name`, or 0 when it is not on the ladder.
int ladder_number(const std::string& name);

// Formats ladder runs as they finish; feed it one record per kernel, in order. Records of other
// kinds (the omp peer, the copy ceiling) are shown as rows numbered "-" (JSON "kernel": null)
// outside the chain of speedups.
class LadderTable {
 public:
  static std::string header();
  // The table row (plus a line saying why, when not verified).
  std::string row(const RunRecord& r);
  // to_json(r) with "kernel", "step_speedup" and "cumulative_speedup" added (null for the first
  // step, or when a time is missing).
  std::string json(const RunRecord& r);

 private:
  // Speedups of r over the previous record and over the first; 0 when undefined.
  void advance(const RunRecord& r, double* step, double* cumulative);
  double first_ms_ = 0.0;
  double prev_ms_ = 0.0;
};

}  // namespace clreduce
