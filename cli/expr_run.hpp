// expr_run.hpp: the command line's user-defined reductions (--map, --reduce, --identity,
// --post, --acc): the arrays read or generated, the law check, the timed runs of the reduction
// (row "expr"), verified against one work-item applying the expressions in index order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "clreduce/types.hpp"
#include "runtime/context.hpp"

namespace clreduce {

struct ExprArgs {
  std::string map, reduce, identity, post;
  std::string acc;                  // empty: default_expr_acc()
  std::vector<std::string> inputs;  // .npy files, one per array ('-': standard input, once)
  std::string type;                 // generated arrays' type; with inputs, what each must hold
  bool type_given = false;
  std::size_t n = 0;  // generated arrays' length
  std::uint64_t seed = 1;
  int warmup = 1;
  int repeat = 5;
  std::size_t local_size = 0;
  std::string format = "table";
  bool verbose = false;
};

// Checks the expressions' text and the arrays' count before any device is touched (Error
// kUsage): the call to make right after parsing.
void check_expr_args(const ExprArgs& a);

// Runs the user reduction on ctx's device, printing in a.format; returns the exit code (0
// verified, 1 not). read(path) reads one --input. Throws Error for bad input (kUsage: lengths
// that differ, an expression that does not compile or breaks a law), kUnsupported for arrays
// past one allocation, and what the device throws.
int run_expr(const ExprArgs& a, Context& ctx,
             const std::function<HostArray(const std::string&)>& read);

}  // namespace clreduce
