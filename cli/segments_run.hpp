// segments_run.hpp: segmented reductions from the command line (--offsets FILE.npy), and
// reductions of an N-dimensional .npy along axes (--axis K[,K...], --keepdims): a built-in op
// (sum, prod, min, max, argmin, argmax), a row of the engine (mean, var, std, dot, norm2, count,
// any, all, logsumexp; the built-in ops too on the engine's input types or with --where) or a
// user reduction (--map ...), every result verified against a reference of its own segment, printed
// as one row ("segments") and written with NumPy's shape and dtype to --output.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "clreduce/types.hpp"
#include "runtime/context.hpp"

namespace clreduce {

struct SegmentArgs {
  std::string op;  // a built-in op or a row of the engine (mean, ...); empty: the user reduction
  std::string map, reduce, identity, post, where;
  double ddof = 0;                  // var, std
  std::string acc;                  // sum, prod: --acc; user reductions: the accumulator
  std::vector<std::string> inputs;  // .npy files ('-': standard input); empty: generated
  std::string type;                 // generated arrays' type; with inputs, what each must hold
  bool type_given = false;
  std::size_t n = 0;  // generated arrays' length
  std::uint64_t seed = 1;
  std::string offsets;             // --offsets: an int64 .npy of S + 1 offsets
  std::vector<std::int64_t> axes;  // --axis (with axis_given)
  bool axis_given = false;
  bool keepdims = false;
  std::string output;  // --output: the results, NumPy's shape and dtype
  int warmup = 1;
  int repeat = 5;
  bool peers = false;  // --peers: the OpenMP peer's row (omp_rows.hpp) first; the run's gets vs_omp
  std::size_t local_size = 0;
  std::string format = "table";
  bool verbose = false;
};

// --axis's value: comma-separated integers (negative from the end), each at most once as typed.
// Throws Error(Errc::kUsage) for anything else.
std::vector<std::int64_t> parse_axes(const std::string& text);

// Runs it on ctx's device, printing in a.format; returns the exit code (0 verified, 1 not).
// read(path, shape) reads one --input with its shape. Throws Error(Errc::kUsage) for bad input
// (offsets, axes, an empty segment of an op without identity, arrays of different shapes) before
// anything is written, Error(Errc::kUnsupported) for arrays past one allocation.
int run_segments(
    const SegmentArgs& a, Context& ctx,
    const std::function<HostArray(const std::string&, std::vector<std::uint64_t>*)>& read);

}  // namespace clreduce
