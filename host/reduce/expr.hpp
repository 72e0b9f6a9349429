// expr.hpp: user-defined reductions: a map expression over up to four input arrays (x, y, z, w:
// their elements at one index), a reduce expression over a and b, an identity, an optional post
// expression over the reduced a and the count n, and an accumulator type, all OpenCL C
// (cl/reduce_expr.cl). The expressions are checked as text before any build, built once per
// distinct text (the context's program cache), checked on the device for the laws a parallel
// tree needs (associativity, commutativity, the identity's neutrality) on sample values of the
// actual data, and verified against one work-item applying them in index order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/types.hpp"
#include "reduce/variant.hpp"
#include "runtime/context.hpp"

namespace clreduce {

// The most input arrays a map takes (x, y, z, w).
constexpr std::size_t kMaxExprInputs = 4;
// The arguments every kernel that reads the inputs takes first (cl/clr_expr.h's EXPR_INPUTS): the
// four input buffers, then clr_shift and clr_base (set_expr_inputs()).
constexpr cl_uint kExprArgs = kMaxExprInputs + 2;
// Elements per vector of the CPU shape's lanes (cl/clr_expr.h's EXPR_LV).
constexpr std::size_t kExprLanes = 16;
// logsumexp's fold with a float exp (ExprSpec::lse_expf): its accumulator's m moves only to an
// element past m + this margin (cl/clr_expr.h's CLR_LSE_T), so a term is at most e^8.
constexpr int kLseExpfMargin = 8;

struct ExprSpec {
  std::string map;       // over x (and y, z, w: one name per input array)
  std::string reduce;    // over a and b
  std::string identity;  // the neutral element: reduce(identity, a) == a == reduce(a, identity)
  std::string post;      // over a (the reduced value) and n (the element count, long); empty: none
  std::string where;     // a predicate over x, y, z, w: where false the element is the identity
                         // (NumPy's where=); empty: every element
  DType acc = DType::kInt64;  // the accumulator, and the type of every expression's value
  std::vector<DType> inputs;  // each input array's element type, 1 to kMaxExprInputs
  // Values of `acc` in one accumulator: 1, or 2 or 4 (a float acc only: the OpenCL C vector
  // type, e.g. double4, with the helpers of cl/reduce_expr.cl; post then gives one value).
  // The built-in ops' rows (expr_ops.hpp) use it; the law check and the reference take 1.
  unsigned width = 1;
  // 0, or B: each work-item folds blocks of B rounds and combines them pairwise, so that an
  // element passes through about B + log2(its work-item's blocks) operations there.
  unsigned block = 0;
  // Whether the blocks may go where a work-item's chain is short enough (the GPU shape, the
  // expr-blocks knob): rows of float and float16 arrays worked in double, whose bounds in
  // double stay far below float's rounding at any chain a GPU's work-item folds.
  bool blocks_optional = false;
  // 0; 1: the accumulator is a value of acc and its index (argmin, argmax); 2: the least and
  // greatest values and their indices (minmax). The map then takes the element's index, i (a
  // long), and acc is float, double, int64 or uint64. The built-in ops' rows use it (width 1).
  unsigned arg = 0;
  // A run-time value the map and predicate may name as clr_shift: a kernel argument (of the
  // accumulator's type), not text, so that another value builds no new program. var and std
  // subtract it from every element (expr_ops.hpp); 0 for the rest.
  double shift = 0;
  // The built-in rows' own parts (expr_ops.hpp), not the user's: fold, an expression over a and
  // b that gives reduce(a, b) where b is one mapped element after every element of a in index
  // order (a work-item's running accumulators), more cheaply; empty: the reduce. lanes: 0, or the
  // CPU shape's lane kind of cl/clr_expr.h (EXPR_LANES: the row's fold in vector arithmetic over
  // 16 consecutive elements of float or float16 arrays).
  std::string fold;
  unsigned lanes = 0;
  // var, std as shifted sums (expr_ops.hpp): the caller checks the result's condition and runs
  // a second pass shifted by the mean where it needs one (var_second_shift()).
  bool var_sums = false;
  // logsumexp's fold with a float exp per element (expr_ops.hpp; cl/clr_expr.h's CLR_LSE_EXPF):
  // the reference's bound adds that exp's error.
  bool lse_expf = false;
};

// Launches k over `items` work-items on ctx's queue and waits for it within the limit (so its
// result can be read), adding its event to *events when given. The engines' one-off launches.
// Past one item, in groups of up to 64 with the count rounded up to whole groups: k must ignore
// work-items at or past `items`.
void run_one(Context& ctx, cl::Kernel& k, std::size_t items, TimeLimit limit,
             const std::string& what, std::vector<cl::Event>* events = nullptr);

// One user expression as a function of a generated tail: `signature` { return open TEXT close; },
// the text on lines of its own under `#line 1 "FLAG"` (so the compiler's line and column are the
// text's own), the wrapper under "FLAG wrapper".
std::string expr_function(const std::string& flag, const std::string& signature,
                          const std::string& text, const std::string& open = "(acc_t)(",
                          const std::string& close = ")");
// A build failure whose log points into one of `exprs` ((flag, text) pairs, as expr_function()
// placed them): that expression named, with the compiler's first message about it and its place
// ("--map 'x*q' does not compile: column 3: use of undeclared identifier 'q'"), thrown as
// Error(Errc::kUsage); any other failure rethrown unchanged.
[[noreturn]] void rethrow_expr_build(const Error& e,
                                     const std::vector<std::pair<std::string, std::string>>& exprs);
// Throws Error(Errc::kUsage) when `text`, given to `flag`, is not one expression: empty, or
// holding what would end it or add code (';', '{', '}', '#', "//", "/*", "*/", a backslash at a
// line's end) or unbalanced parentheses. Nothing is built for it.
void check_expression(const std::string& flag, const std::string& text);
// The input arrays a map expression names: 1 + the highest of x, y, z, w it uses as a name
// (1 when it names none of them).
std::size_t inputs_named(const std::string& map);
// The default accumulator: double if an input is double, else float if one is float or
// float16, else int64 if one is signed or bool, else uint64 (NumPy's sum of narrower ints
// widens; so does this).
DType default_expr_acc(const std::vector<DType>& inputs);

// Sets k's first kExprArgs arguments: the input buffers (those past in.size() repeat the last:
// they are not read), clr_shift, `shift` as a value of acc (the CLR_ACC k was built with), and
// clr_base, the global index of the buffers' element 0 (the arg rows' indices count from it).
void set_expr_inputs(cl::Kernel& k, const std::vector<cl::Buffer>& in, DType acc, double shift,
                     std::uint64_t base = 0);

// Bytes of one accumulator of spec (ExprReduction::acc_bytes()).
std::size_t expr_acc_bytes(const ExprSpec& spec);

// The generated definitions of spec's expressions, appended after a kernel file, and the build
// options every kernel of spec shares (its accumulator's included): for kernel files besides
// cl/reduce_expr.cl that include clr_expr.h (cl/reduce_segments.cl).
std::string expr_tail(const ExprSpec& spec);
std::string expr_options(const ExprSpec& spec);
// Kernel `name` of `file` built with options and tail (expr_tail() or one of its kind); an
// expression that does not compile throws Error(Errc::kUsage) naming it, as ExprReduction does.
cl::Kernel build_expr_kernel(Context& ctx, const ExprSpec& spec, const std::string& file,
                             const std::string& name, const std::string& options,
                             const std::string& tail);

// The outcome of the law check: empty when every sample passed, else which law failed on which
// values, in words.
struct ExprLaws {
  std::string failure;
  std::size_t samples = 0;  // pool values tried (mapped elements, edge values, the identity)
  std::size_t triples = 0;  // triples (a, b, c) evaluated
};

// One user reduction built for one device: every kernel of cl/reduce_expr.cl for spec, and the
// launch for arrays of up to n elements. Refers to ctx, which must outlive it; one thread at a
// time.
class ExprReduction {
 public:
  // Builds the kernels. An expression that does not compile throws Error(Errc::kUsage) with
  // the compiler's first message about it and its position in the expression's text; any other
  // build failure throws Error(Errc::kBuild). local_size > 0 sets the group size. n: the longest
  // array it will reduce (0 is planned as 1). launch = false: no launch is planned, for the
  // checks alone (check_laws(), post(), map_values()); enqueue() and depth() are then not used.
  ExprReduction(Context& ctx, ExprSpec spec, std::size_t n, std::size_t local_size,
                bool launch = true);

  const ExprSpec& spec() const { return spec_; }
  // Sets the value later launches take as clr_shift (a kernel argument: nothing is rebuilt),
  // as var's second pass does.
  void set_shift(double shift) { spec_.shift = shift; }
  const LaunchPolicy& policy() const { return policy_; }
  // The longest chain of reduce operations an element passes through in a launch (the float
  // bound's depth).
  std::uint64_t depth() const { return depth_; }

  // The law check on the device over in (spec().inputs.size() buffers of n elements, n may be
  // 0): the map of up to 256 elements drawn at random (a fixed seed) and edge values of the
  // accumulator type, with the identity, make a pool; every pool value is tried as a, and 4096
  // more random triples besides. Integers compare exactly; floats within 4 units of roundoff of
  // the largest magnitude involved (a triple whose operations overflow from finite values is
  // skipped).
  ExprLaws check_laws(const std::vector<cl::Buffer>& in, std::size_t n, TimeLimit limit);
  // check_laws(), map_values() and where_values() from another program of the same expressions
  // that holds their kernels (reduce_segments.cl, through clr_expr_checks.h): with that
  // program's options and generated tail, a segments reduction's own program serves its law
  // check and its predicate's mask.
  void use_program(const std::string& file, const std::string& options, const std::string& tail);

  // Enqueues the reduction of in[0, n), 1 <= n <= the n planned for, leaving the accumulator at
  // out[0] (before post). Appends one event. base: the global index of in's element 0 (a
  // chunk's start), from which the arg rows' indices count.
  void enqueue(const std::vector<cl::Buffer>& in, std::size_t n, const cl::Buffer& out,
               std::vector<cl::Event>& events, std::uint64_t base = 0);
  // Enqueues the fold of m >= 1 accumulators (chunks' results, in index order) that lie at
  // byte stride `stride` in `accs` into out[0], by the reduce on the device (one work-item, in
  // order: first indices stay first). Appends one event.
  void enqueue_fold(const cl::Buffer& accs, std::size_t stride, std::size_t m,
                    const cl::Buffer& out, std::vector<cl::Event>& events);

  // The reference: one work-item folding in index order from the identity, in the accumulator
  // type, or, for a float accumulator on a device with fp64 where the expressions build in
  // double, in double (*wider = true). *magnitude: for float accumulators, the same fold of
  // |map| (the scale of the float bound). events receives the launch.
  Value reference(const std::vector<cl::Buffer>& in, std::size_t n, TimeLimit limit,
                  double* magnitude, bool* wider, std::vector<cl::Event>& events);
  // The same over an array in pieces (chunks): pieces(f) calls f(buffers, n) for every piece in
  // index order, and each call enqueues the one work-item's fold of that piece, resumed from the
  // value after the pieces before it (so the fold is the whole array's, element by element).
  using ExprPieceFn = std::function<void(const std::vector<cl::Buffer>&, std::size_t)>;
  Value reference(const std::function<void(const ExprPieceFn&)>& pieces, TimeLimit limit,
                  double* magnitude, bool* wider, std::vector<cl::Event>& events);

  // post(v, n) for each of vs (accumulator type), on the device; vs unchanged when spec has no
  // post.
  std::vector<Value> post(const std::vector<Value>& vs, std::size_t n, TimeLimit limit);
  // post(a, n) of each accumulator in accs (acc_bytes() each), one value of spec().acc each.
  std::vector<Value> post_bytes(const std::vector<unsigned char>& accs, std::size_t n,
                                TimeLimit limit);
  // The map's values at elements [first, first + count) of in, acc_bytes() each.
  std::vector<unsigned char> map_values(const std::vector<cl::Buffer>& in, std::size_t first,
                                        std::size_t count, TimeLimit limit);
  // The predicate (--where; the spec must have one) at elements [first, first + count) of in:
  // one byte each, 1 where it holds, else 0.
  std::vector<unsigned char> where_values(const std::vector<cl::Buffer>& in, std::size_t first,
                                          std::size_t count, TimeLimit limit);
  // Bytes of one accumulator (width values of acc; arg 1: 16, a value padded to 8 bytes and its
  // index; arg 2: two values and two indices).
  std::size_t acc_bytes() const { return expr_acc_bytes(spec_); }

 private:
  cl::Kernel build(const std::string& name, const std::string& options);

  Context& ctx_;
  ExprSpec spec_;
  std::string file_ = "reduce_expr.cl";
  std::string tail_;  // the generated definitions of the user's expressions
  std::string options_;
  // The options of the one-work-item kernels (fold, post, sample, laws, the reference): the main
  // kernel's own where there is one, so they come from its program and build nothing more.
  std::string aux_options_;
  LaunchPolicy policy_;
  std::uint64_t depth_ = 0;
  cl::Kernel main_, fold_;
  cl::Buffer partials_, ticket_;
};

// The arrays in pieces (chunks), in index order: pieces(f) calls f(buffers, length) for each
// (ExprReduction::reference()'s form).
using ExprPieces = std::function<void(const ExprReduction::ExprPieceFn&)>;
// One byte per element (n in all), nonzero where er's predicate (--where) holds, evaluated by
// er's own program (ExprReduction::where_values) 2^20 elements at a time; empty when er's spec
// has no predicate.
std::vector<unsigned char> where_mask(ExprReduction& er, const ExprPieces& pieces, std::size_t n,
                                      TimeLimit limit);
std::vector<unsigned char> where_mask(ExprReduction& er, const std::vector<cl::Buffer>& in,
                                      std::size_t n, TimeLimit limit);

}  // namespace clreduce
