// expr_run.hpp: the command line's user-defined reductions (--map, --reduce, --identity,
// --post, --acc, --where) and the built-in ops that are rows of the same engine (--op dot,
// norm2, mean, var, std, count, any, all, logsumexp): the arrays read or generated, the law
// check (user expressions), the timed runs of the reduction (row "expr"), verified against one
// work-item applying the expressions in index order (user expressions) or the host's reference
// in higher precision within the op's bound (the rows).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "clreduce/types.hpp"
#include "runtime/context.hpp"

namespace clreduce {

struct ExprArgs {
  std::string op;  // a built-in row (expr_ops.hpp: dot, mean, ...); empty: the expressions below
  std::string map, reduce, identity, post;
  std::string where;                // --where: a predicate over x, y, z, w; empty: every element
  double ddof = 0;                  // var, std
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
