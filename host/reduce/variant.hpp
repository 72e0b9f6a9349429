// variant.hpp: what a reduction variant is to the rest of clreduce: a stateless description that
// makes plans, and the plan, a typed ready-to-launch object. One variant = one .cl file + one host
// file that knows its launch schedule + one row in reduce/registry.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/types.hpp"
#include "runtime/context.hpp"
#include "verify/sum_model.hpp"

namespace clreduce {

// Launch parameters as plain printable data, chosen per device and clamped to its limits.
struct LaunchPolicy {
  std::size_t wg_size = 1;         // work-items per group
  std::size_t groups = 1;          // work-groups in the main launch
  unsigned items_per_thread = 1;   // elements each work-item folds before the tree
  unsigned vec_width = 1;          // elements per load
  std::string path;                // implementation path taken, e.g. "barrier", "shfl.sync"
  bool correctly_rounded = false;  // float sums: the correctly rounded sum, verified bit for bit
  std::string str() const;         // "wg=256 groups=1056 items=1 vec=1"
};

struct ReduceProblem {
  Op op = Op::kSum;
  DType type = DType::kInt32;
  std::size_t n = 0;
  DType acc_type = DType::kInt64;  // the accumulator; set with resolve_acc()

  DType acc() const { return acc_type; }
  // Bytes of one accumulator on the device: 16 for arg ops ({T v; long i;}).
  std::size_t acc_bytes() const { return is_arg_op(op) ? 16 : dtype_size(acc()); }
  // -D options selecting T, the accumulator and the operator in clreduce.h.
  std::string cl_options() const;
};

// A reduction ready to launch on one device, made by ReduceVariant::plan(): its kernels built,
// the scratch it owns allocated and zeroed, its schedule fixed. Launch it any number of times,
// on the whole array or any sub-range of at most problem().n elements; two plans never share
// scratch, so plans may be in flight together. A plan refers to its Context, which must outlive
// it, and sets kernel arguments when it launches: one thread at a time per plan.
class ReducePlan {
 public:
  virtual ~ReducePlan() = default;
  ReducePlan(const ReducePlan&) = delete;
  ReducePlan& operator=(const ReducePlan&) = delete;

  // The variant that made the plan.
  const std::string& variant() const { return variant_; }
  const ReduceProblem& problem() const { return problem_; }
  // The launch as printable data (--verbose, JSON "policy").
  const LaunchPolicy& policy() const { return policy_; }
  // The longest chain of operations any element passes through in a launch on up to
  // problem().n elements (sets the float error bound).
  std::uint64_t depth() const { return depth_; }
  // The tree of additions a float sum of a launch on n elements (1 <= n <= problem().n) follows,
  // for its error bound (verify/sum_model.hpp): the variant's chains where it knows them, else its
  // depth. Build options that may reorder float additions (-cl-fast-relaxed-math,
  // -cl-unsafe-math-optimizations) or redefine the kernels' macros (-D) leave only the depth of
  // a chain of all n elements.
  SumModel sum_model(std::size_t n) const;
  // Bytes a launch leaves at out: the accumulator (problem().acc_bytes()), followed, for plans
  // whose partial results fold exactly only with more than the rounded value (exact), by that.
  // Chunks, devices and ranks fold these bytes (run/fold.hpp).
  virtual std::size_t out_bytes() const { return problem_.acc_bytes(); }

  // Whether the kernels read a range that starts at any element: they take its first element
  // as an argument and fold the elements before the first vector-aligned address apart (fast's
  // and exact's head), so a range needs no sub-buffer, and host memory used in place needs only
  // its element type's alignment, not the device's base alignment.
  virtual bool any_start() const { return false; }

  // Enqueues the reduction of in's elements [offset, offset + length), 1 <= length <=
  // problem().n, leaving the accumulator at out[0] (problem().acc_bytes() bytes); arg ops'
  // indices count from offset, and out_bytes() bytes of out are written (out must hold them).
  // A range that does not start at element 0 is, unless any_start(), a sub-buffer: its first
  // byte must be a multiple of Context::base_align(). Appends one event per launch. Throws
  // Error(Errc::kUsage) for a range out of bounds, empty or not aligned, or an out smaller than
  // out_bytes().
  void enqueue(const cl::Buffer& in, std::size_t offset, std::size_t length, const cl::Buffer& out,
               std::vector<cl::Event>& events);
  // The whole problem: in[0, problem().n).
  void enqueue(const cl::Buffer& in, const cl::Buffer& out, std::vector<cl::Event>& events) {
    enqueue(in, 0, problem_.n, out, events);
  }

 protected:
  ReducePlan(Context& ctx, std::string variant, const ReduceProblem& p, LaunchPolicy policy,
             std::uint64_t depth);
  // Launches on in[0, n), 1 <= n <= problem().n: sets arguments and enqueues, nothing else.
  virtual void launch(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                      std::vector<cl::Event>& events) = 0;
  // any_start() plans: launches on in[first, first + n) (first + n within in).
  virtual void launch_at(const cl::Buffer& in, std::size_t first, std::size_t n,
                         const cl::Buffer& out, std::vector<cl::Event>& events);
  // sum_model() for the kernels as built: the depth alone unless overridden.
  virtual SumModel model(std::size_t n) const;

  Context& ctx_;

 private:
  std::string variant_;
  ReduceProblem problem_;
  LaunchPolicy policy_;
  std::uint64_t depth_;
};

// A plan of one launch whose groups fold their slices into partials and whose last group, by
// an atomic ticket, folds the partials into out[0] (topdown's scheme, fast's shapes). The kernel
// takes (in, n, partials, ticket, out); partials (one accumulator per group) and the ticket are
// zeroed here, and each launch's last group resets the ticket. A kernel made with first_arg
// takes a sixth, the range's first element (ulong), and reads any start (any_start()). The
// kernel is the plan's own: partials and ticket are set once, n and first when they change.
class TicketPlan : public ReducePlan {
 public:
  bool any_start() const override { return first_arg_; }

 protected:
  TicketPlan(Context& ctx, std::string variant, const ReduceProblem& p, LaunchPolicy policy,
             std::uint64_t depth, cl::Kernel kernel, bool first_arg = false);
  void launch(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
              std::vector<cl::Event>& events) override;
  void launch_at(const cl::Buffer& in, std::size_t first, std::size_t n, const cl::Buffer& out,
                 std::vector<cl::Event>& events) override;

 private:
  cl::Kernel kernel_;
  bool first_arg_;
  cl::Buffer partials_, ticket_;
  std::size_t n_set_ = 0, first_set_ = 0;  // the arguments last set (n = 0: none yet)
};

// A reduction variant: a name, a description and const functions of (context, problem). It
// holds no state; what a device needs (probe answers, chosen shapes) lives in its Context.
class ReduceVariant {
 public:
  virtual ~ReduceVariant() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // Empty when the variant can run the problem on this device; else why not (it is skipped).
  virtual std::string unsupported(Context& ctx, const ReduceProblem& p) const;
  // The plan for this device and problem (p.n >= 1): kernels built, scratch allocated, nothing
  // launched. local_size > 0 overrides the group size (Error(Errc::kUsage) if the device or
  // kernel cannot take it). Throws Error(Errc::kUsage) for p.n = 0, which needs no launch.
  std::unique_ptr<ReducePlan> plan(Context& ctx, const ReduceProblem& p,
                                   std::size_t local_size) const;
  // The implementation path this device gets at the default group size (what LaunchPolicy::path
  // will say, e.g. "shfl.sync"), for --list-variants; empty when the variant has only one.
  virtual std::string device_path(Context& ctx) const;

 protected:
  virtual std::unique_ptr<ReducePlan> make_plan(Context& ctx, const ReduceProblem& p,
                                                std::size_t local_size) const = 0;
};

// Every reduction variant, in the order --variant all runs them.
const std::vector<std::unique_ptr<ReduceVariant>>& reduce_variants();
// The variant named `name`, or nullptr.
ReduceVariant* find_reduce_variant(const std::string& name);
// One line per reduction variant; with a device context, the path each device-dependent
// variant takes there.
std::string format_reduce_variant_list(Context* ctx);

// Helpers for variant files.
// ceil(log2(x)) for x >= 1.
std::uint64_t ceil_log2(std::uint64_t x);
// A grid-stride loop's chains (SumModel::kStrided, one chain per residue mod period) of a
// launch on n elements, then `above` more additions: a depth of ceil(n / period) + above.
SumModel strided_model(std::size_t n, std::uint64_t period, std::uint64_t above);
// True when build options may change the order of a kernel's float additions: options that
// allow reassociation, or -D definitions (which may redefine a kernel's shape).
bool options_may_reorder(const std::string& build_options);
inline std::size_t round_up(std::size_t x, std::size_t m) { return (x + m - 1) / m * m; }
// Picks the group size: `wanted` (user override) or `preferred`, clamped to the device and kernel
// limits. An override the device cannot take throws Error(Errc::kUsage).
std::size_t choose_wg(Context& ctx, const cl::Kernel& k, std::size_t wanted, std::size_t preferred);
// Checks a work-group size override before a kernel is built for it (a build with a group-sized
// static local array may fail to build, not merely refuse the size): throws Error(Errc::kUsage)
// when it exceeds the device's largest group or local_bytes exceeds its local memory. 0 passes.
void check_local_size(Context& ctx, std::size_t local_size, std::size_t local_bytes);
// The device's largest work-group size for `k` (CL_KERNEL_WORK_GROUP_SIZE, capped by the device).
std::size_t kernel_max_wg(Context& ctx, const cl::Kernel& k);

}  // namespace clreduce
