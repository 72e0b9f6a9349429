// api.cpp: the public API (include/clreduce/clreduce.hpp) over the internals. Every call into
// the variant interfaces (unsupported, policy, enqueue, depth), the references and the
// device context is in this one file, so a change of those interfaces is adapted here alone.
#include "clreduce/clreduce.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "core/checked.hpp"
#include "io/npy.hpp"
#include "reduce/expr.hpp"
#include "reduce/expr_check.hpp"
#include "reduce/expr_ops.hpp"
#include "reduce/segments.hpp"
#include "reduce/variant.hpp"
#include "run/chunks.hpp"
#include "run/expr_chunks.hpp"
#include "run/fold.hpp"
#include "run/runner.hpp"
#include "runtime/context.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_dir.hpp"
#include "runtime/transfer.hpp"
#include "scan/compact.hpp"
#include "scan/scan_variant.hpp"
#include "verify/reference.hpp"
#include "verify/scan_reference.hpp"

namespace clreduce {

namespace {

DeviceSummary summarize(const DeviceInfo& d) {
  DeviceSummary s;
  s.index = d.index;
  s.name = d.name;
  s.platform = d.platform_name;
  s.vendor = d.vendor;
  s.type = d.type;
  s.version = d.device_version;
  s.opencl_c = d.c_version;
  s.compute_units = d.compute_units;
  s.global_mem = d.global_mem;
  s.max_alloc = d.max_alloc;
  s.local_mem = d.local_mem;
  s.max_wg_size = d.max_wg_size;
  s.fp64 = d.fp64;
  return s;
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

ReduceVariant& reduce_variant(const std::string& name) {
  const std::string n = name.empty() ? "fast" : name;
  if (ReduceVariant* v = find_reduce_variant(n)) return *v;
  if (find_scan_variant(n)) throw Error(Errc::kUsage, "'" + n + "' is a scan variant: call scan()");
  throw Error(Errc::kUsage, "unknown reduction variant '" + n +
                                "' (valid: " + join(reduce_variant_names()) + ")");
}

ScanVariant& scan_variant(const std::string& name) {
  const std::string n = name.empty() ? "scan-fast" : name;
  if (ScanVariant* v = find_scan_variant(n)) return *v;
  if (find_reduce_variant(n))
    throw Error(Errc::kUsage, "'" + n + "' is a reduction variant: call reduce()");
  throw Error(Errc::kUsage,
              "unknown scan variant '" + n + "' (valid: " + join(scan_variant_names()) + ")");
}

void check_fp64(const DeviceInfo& d, DType type, DType acc) {
  if ((type == DType::kDouble || acc == DType::kDouble) && !d.fp64)
    throw Error(Errc::kUnsupported, d.name + " has no double precision (cl_khr_fp64)");
}

// What the caller can change when a result type does not suit: for sums and products of 32-bit
// integers, the accumulator NumPy widens them to, unless Options::acc already chose.
std::string acc_hint(Op op, DType type, const std::string& acc) {
  const DType wide = acc_dtype(op, type);
  if (wide == type || !acc.empty()) return "";
  return "; Options::acc = \"" + dtype_name(type) + "\" keeps " + dtype_name(type) +
         " (wrapping on overflow)";
}

// A user's buffer must belong to this device's context and hold elements [first, first + n) of
// type t. `why` says where t comes from and `hint` what else the caller may change, for the
// message.
void check_buffer(Context& ctx, const cl::Buffer& b, std::size_t first, std::size_t n, DType t,
                  const char* what, const std::string& why = "", const std::string& hint = "") {
  if (b() == nullptr) throw Error(Errc::kUsage, std::string(what) + " buffer is empty (no cl_mem)");
  if (b.getInfo<CL_MEM_CONTEXT>()() != ctx.context()())
    throw Error(Errc::kUsage,
                std::string(what) +
                    " buffer belongs to another cl::Context: create it in Device::context()");
  const std::size_t size = b.getInfo<CL_MEM_SIZE>(), elem = dtype_size(t);
  if (size / elem < first || size / elem - first < n) {
    const std::string range = first ? "elements [" + std::to_string(first) + ", " +
                                          std::to_string(sat_add(first, n)) + ")"
                                    : "n = " + std::to_string(n);
    throw Error(Errc::kUsage, std::string(what) + " buffer holds " + std::to_string(size) +
                                  " bytes, " + std::to_string(size / elem) + " " + dtype_name(t) +
                                  " elements, fewer than " + range + why + ": pass a buffer of " +
                                  std::to_string(sat_mul(sat_add(first, n), elem)) +
                                  " bytes or a smaller " + (first ? "range" : "n") + hint);
  }
}

HostArray host_copy(DType type, const void* data, std::size_t n) {
  HostArray a;
  a.type = type;
  a.n = n;
  a.bytes.resize(checked_bytes(n, dtype_size(type), "a copy of the array"));
  if (n) std::memcpy(a.bytes.data(), data, a.bytes.size());
  return a;
}

// Waits for all of ctx's queue, within the time limit for work that moves `bytes` (the timeout
// knob when set, as for every other wait).
void wait(Context& ctx, std::size_t bytes, const std::string& what) {
  finish(ctx.queue(), ctx.time_limit(static_cast<double>(bytes)), what);
}

HostArray read_back(Context& ctx, DType type, const cl::Buffer& b, std::size_t first,
                    std::size_t n) {
  HostArray a;
  a.type = type;
  a.n = n;
  a.bytes.resize(checked_bytes(n, dtype_size(type), "reading a buffer back"));
  enqueue_read(ctx.queue(), b, first * dtype_size(type), a.bytes.size(), a.bytes.data(),
               ctx.tuning().transfer_piece);
  wait(ctx, a.bytes.size(), "reading a buffer back");
  return a;
}

// Runs `once` warmup + repeat times, each after an untimed `prepare`, and records in r the medians
// of the timed runs' kernel time (the events `once` appends) and host-clock time.
template <class Prepare, class Once>
void timed_runs(const Options& o, Result& r, Prepare prepare, Once once) {
  std::vector<double> kernel_ms, wall_ms;
  const int warmup = std::max(o.warmup, 0), repeat = std::max(o.repeat, 1);
  for (int run = 0; run < warmup + repeat; ++run) {
    prepare();
    std::vector<cl::Event> events;
    const double t0 = now_ms();
    once(events);
    const double t1 = now_ms();
    r.launches = events.size();
    if (run >= warmup) {
      kernel_ms.push_back(events_ms(events));
      wall_ms.push_back(t1 - t0);
    }
  }
  r.kernel_ms = median(kernel_ms);
  r.kernel_ms_min = *std::min_element(kernel_ms.begin(), kernel_ms.end());
  r.kernel_ms_max = *std::max_element(kernel_ms.begin(), kernel_ms.end());
  r.wall_ms = median(wall_ms);
}

// A result before the run: what was asked.
Result start_result(const std::string& variant, Op op, DType type, DType acc, std::size_t n) {
  Result r;
  r.variant = variant;
  r.name = op_name(op);
  r.op = op;
  r.type = type;
  r.acc = acc;
  r.n = n;
  r.value.type = acc;
  r.verdict = "not checked";
  return r;
}

void refuse_unsupported(const std::string& variant, const DeviceInfo& d, const std::string& why) {
  if (!why.empty())
    throw Error(Errc::kUnsupported, variant + " cannot run this on " + d.name + ": " + why);
}

void set_verdict(Result& r, bool ok, const std::string& why) {
  r.checked = true;
  r.verified = ok;
  r.verdict = ok ? (why.empty() ? "verified" : "verified as an overflow: " + why) : why;
}

// The acc bytes of v (a value of acc), with its index at byte 8 for an arg op (16 bytes).
std::vector<unsigned char> value_bytes(const Value& v, DType acc, bool arg) {
  std::vector<unsigned char> b(arg ? 16 : dtype_size(acc), 0);
  dispatch_dtype(acc, [&](auto zero) {
    const auto a = value_as<decltype(zero)>(v);
    std::memcpy(b.data(), &a, sizeof a);
  });
  if (arg) std::memcpy(b.data() + 8, &v.index, 8);
  return b;
}

// A buffer of ctx's holding at least `bytes` bytes from byte `offset`, for writing a result.
void check_result_buffer(Context& ctx, const cl::Buffer& b, std::size_t offset, std::size_t bytes,
                         const char* what) {
  if (b() == nullptr) throw Error(Errc::kUsage, std::string(what) + " buffer is empty (no cl_mem)");
  if (b.getInfo<CL_MEM_CONTEXT>()() != ctx.context()())
    throw Error(Errc::kUsage,
                std::string(what) +
                    " buffer belongs to another cl::Context: create it in Device::context()");
  const std::size_t size = b.getInfo<CL_MEM_SIZE>();
  if (offset > size || size - offset < bytes)
    throw Error(Errc::kUsage,
                std::string(what) + " buffer holds " + std::to_string(size) +
                    " bytes: " + std::to_string(bytes) + " from byte offset " +
                    std::to_string(offset) + " do not fit; pass a buffer of at least " +
                    std::to_string(sat_add(offset, bytes)) + " bytes or a smaller offset");
}

// The step every reduction takes, blocking or not: in[0, n) reduced by a plan made for up to
// max_n elements, its result (acc_bytes(): the value, and an arg op's index at byte 8) written
// at out's byte `offset`. Where offset is 0 and the plan leaves nothing after the result (or
// out is the caller's scratch, `spill`), the plan writes out itself; else into its own result
// buffer, copied from there. n = 0 copies the identity (sum, prod). Made once: enqueue()
// allocates nothing.
class ReduceCall {
 public:
  ReduceCall(Context& ctx, ReduceVariant& v, const ReduceProblem& p, std::size_t local_size)
      : ctx_(ctx), p_(p) {
    plan_ = v.plan(ctx, p, local_size);
    result_ = ctx.zeroed_buffer(std::max<std::size_t>(16, plan_->out_bytes()));
    if (has_identity(p.op)) {
      const std::vector<unsigned char> id =
          value_bytes(identity_value(p.op, p.acc_type), p.acc_type, is_arg_op(p.op));
      identity_ = ctx.zeroed_buffer(id.size());
      ctx.write(identity_, id.size(), id.data(), "a reduction's identity");
    }
  }

  ReducePlan& plan() { return *plan_; }
  const ReduceProblem& problem() const { return p_; }

  void enqueue(const cl::Buffer& in, std::size_t first, std::size_t n, const cl::Buffer& out,
               std::size_t offset, std::vector<cl::Event>& events, bool spill = false) {
    const std::size_t bytes = p_.acc_bytes();
    cl::CommandQueue& q = ctx_.queue();
    if (n == 0) {
      q.enqueueCopyBuffer(identity_, out, 0, offset, bytes, nullptr, ctx_.event_slot(events));
      return;
    }
    if (offset == 0 && (spill || plan_->out_bytes() == bytes)) {
      plan_->enqueue(in, first, n, out, events);
      return;
    }
    plan_->enqueue(in, first, n, result_, events);
    q.enqueueCopyBuffer(result_, out, 0, offset, bytes, nullptr, ctx_.event_slot(events));
  }

 private:
  Context& ctx_;
  ReduceProblem p_;
  std::unique_ptr<ReducePlan> plan_;
  cl::Buffer result_, identity_;
};

// A view of the caller's n elements of `type` at `data`, for the chunk driver (nothing copied).
HostArray host_view(DType type, const void* data, std::size_t n) {
  HostArray a;
  a.type = type;
  a.n = n;
  a.bytes.adopt(
      static_cast<unsigned char*>(const_cast<void*>(data)),
      checked_bytes(n, dtype_size(type), "the input"), [](void*, std::size_t, void*) {}, nullptr);
  return a;
}

// Whether plan reads in[first, ...) where it lies: a range at element 0, at a multiple of the
// base alignment (a sub-buffer), or any range of a plan whose kernels take its first element.
bool reads_at(const Context& ctx, const ReducePlan& plan, std::size_t first) {
  return first == 0 || plan.any_start() ||
         first * dtype_size(plan.problem().type) % ctx.base_align() == 0;
}

// How a host array lies on device d for a reduction by variant v, and the plan for it (made for
// a chunk's elements when there are several): used in place (a CPU device) at the element
// type's alignment where the plan's kernels read any start, else at in_place_alignment(d);
// otherwise copied, whole or in chunks (past one allocation, or tuning().max_chunk), or streamed
// (past device memory).
std::unique_ptr<ReducePlan> host_plan(Context& ctx, ReduceVariant& v, const ReduceProblem& p,
                                      const void* host, std::size_t local_size, ChunkLayout& L) {
  const DeviceInfo& d = ctx.info();
  const ElementBytes e{dtype_size(p.type)};
  const auto plan_for = [&](const ChunkLayout& layout) {
    ReduceProblem pp = p;
    if (layout.chunks > 1) pp.n = layout.chunk;
    refuse_unsupported(v.name(), d, v.unsupported(ctx, pp));
    return v.plan(ctx, pp, local_size);
  };
  L = choose_layout(d, ctx.tuning(), p.n, e, HostArrays{host}, e.in);
  std::unique_ptr<ReducePlan> plan = plan_for(L);
  if (L.in_place && !plan->any_start()) {
    const ChunkLayout strict = choose_layout(d, ctx.tuning(), p.n, e, HostArrays{host});
    if (strict.chunk != L.chunk || strict.chunks != L.chunks) plan = plan_for(strict);
    L = strict;
  }
  if (L.chunks > 1)
    if (const std::string why = ReduceFold::cannot_fold(*plan); !why.empty())
      throw Error(Errc::kUnsupported,
                  v.name() + " cannot reduce an array in chunks (" + L.str() + "): " + why);
  return plan;
}

// The float error budget of plan's run over the host array `a` laid out as L: a sum's from each
// chunk's tree and the chunks' fold; a product's n factors.
ErrorBudget host_budget(const ReducePlan& plan, const HostArray& a, const ChunkLayout& L) {
  const ReduceProblem& p = plan.problem();
  if (p.op == Op::kProd) return ErrorBudget{a.n, 0.0L};
  if (L.chunks <= 1 || p.op != Op::kSum || !is_float(p.acc()))
    return sum_budget(plan.sum_model(a.n), a.type, a.bytes.data(), a.n).budget;
  std::vector<SumPiece> pieces;
  const std::size_t size = dtype_size(a.type);
  for (std::size_t c = 0; c < L.chunks; ++c)
    pieces.push_back(sum_budget(plan.sum_model(L.length(c)), a.type,
                                a.bytes.data() + L.begin(c) * size, L.length(c)));
  return fold_budgets(pieces).budget;
}

// One reduction of in[first, first + n) (a buffer of ctx's), or of n elements at `host`.
Result run_reduce(Context& ctx, Op op, DType type, const cl::Buffer* user_in, std::size_t first,
                  const void* host, std::size_t n, const Options& o, bool check) {
  ReduceVariant& v = reduce_variant(o.variant);
  ReduceProblem p;
  p.op = op;
  p.type = type;
  p.n = n;
  p.acc_type = resolve_acc(op, type, o.acc);
  const DeviceInfo& d = ctx.info();
  check_fp64(d, type, p.acc_type);
  if (n == 0 && !has_identity(op))
    throw Error(Errc::kUsage, op_name(op) + " of an empty array has no identity (n = 0)");
  const std::size_t size = dtype_size(type), bytes = checked_bytes(n, size, "the input");
  if (user_in) {
    check_fits(d, type, n);
    check_buffer(ctx, *user_in, first, n, type, "input");
    refuse_unsupported(v.name(), d, v.unsupported(ctx, p));
  }

  Result r = start_result(v.name(), op, type, p.acc_type, n);
  const std::size_t builds = ctx.programs_built();
  std::unique_ptr<ReducePlan> plan;
  ChunkLayout L;
  L.n = n;
  L.chunk = std::max<std::size_t>(n, 1);
  L.chunks = n ? 1 : 0;
  if (n == 0) {  // sum and prod: the identity, with no launch
    r.value = identity_value(op, p.acc_type);
  } else if (host) {
    plan = host_plan(ctx, v, p, host, o.local_size, L);
  } else {
    refuse_unsupported(v.name(), d, v.unsupported(ctx, p));
    plan = v.plan(ctx, p, o.local_size);
  }
  const std::string what = v.name() + " " + op_name(op) + " of " + std::to_string(n) + " " +
                           dtype_name(type) + " elements";
  if (plan && host && (L.in_place || L.chunks > 1 || L.streamed())) {
    // The chunk driver: in place, in chunks or streamed.
    const HostArray view = host_view(type, host, n);
    ChunkedArray array(ctx, L, view, nullptr, nullptr, ElementBytes{size});
    timed_runs(
        o, r, [&] { array.prepare_reduce(plan->out_bytes(), what); },
        [&](std::vector<cl::Event>& events) {
          array.upload(what);  // nothing in place or streamed
          r.value = array.reduce(*plan, events, what);
        });
    r.layout = L.str();
    r.plan = plan->policy().str();
  } else if (plan) {
    // One buffer: the caller's, read where it lies; else the host array, or a range of the
    // caller's buffer the plan cannot read there (no kernel argument for its first element, and
    // not at the base alignment: no sub-buffer), copied into scratch.
    const bool direct = user_in && reads_at(ctx, *plan, first);
    const cl::Buffer in = direct ? *user_in : ctx.scratch("api.input", bytes);
    const std::size_t at = direct ? first : 0;
    // The accumulator, and after it whatever else the plan leaves (exact: its exact state).
    const cl::Buffer out = ctx.scratch("api.result", std::max<std::size_t>(16, plan->out_bytes()));
    const std::size_t piece = ctx.tuning().transfer_piece;
    unsigned char result[16];
    timed_runs(
        o, r,
        [&] {  // a sentinel first, so a result no kernel wrote cannot pass for one
          std::memset(result, 0xA5, sizeof result);
          enqueue_write(ctx.queue(), out, 0, sizeof result, result, piece);
          wait(ctx, sizeof result, "writing the result's sentinel");
        },
        [&](std::vector<cl::Event>& events) {
          if (host) enqueue_write(ctx.queue(), in, 0, bytes, host, piece);
          if (user_in && !direct)
            for_each_piece(0, bytes, piece, 1, [&](std::size_t off, std::size_t len) {
              ctx.queue().enqueueCopyBuffer(*user_in, in, first * size + off, off, len);
            });
          plan->enqueue(in, at, n, out, events);
          enqueue_read(ctx.queue(), out, 0, p.acc_bytes(), result, piece);
          wait(ctx, bytes, what);
        });
    r.value = Value::from_bytes(p.acc_type, result);
    if (is_arg_op(op)) std::memcpy(&r.value.index, result + 8, 8);
    r.layout = host ? "whole, copied" : direct ? "" : "range copied";
    r.plan = plan->policy().str();
  }
  r.builds = ctx.programs_built() - builds;
  if (check) {
    const HostArray a = host ? host_copy(type, host, n) : read_back(ctx, type, *user_in, first, n);
    r.expected = reference_reduce(a, op, p.acc_type);
    // A float product's error grows with each of its n - 1 multiplications whatever the order;
    // a sum's with the variant's tree (its chains' partial sums, or its depth).
    const ErrorBudget budget = plan ? host_budget(*plan, a, L) : ErrorBudget{};
    const Verdict verdict = plan && plan->policy().correctly_rounded
                                ? verify_bitwise(r.value, r.expected)
                                : verify(r.value, r.expected, op, budget, float_stats(a, op));
    set_verdict(r, verdict.ok, verdict.why);
  }
  return r;
}

// One scan of `in` into `out` (buffers of ctx's), or of host memory `host_in` into `host_out`.
// Copies bytes [src_at, src_at + bytes) of src to dst from byte dst_at on ctx's queue, in
// transfer pieces; the last copy's event is appended to events.
void enqueue_copy(Context& ctx, const cl::Buffer& src, std::size_t src_at, const cl::Buffer& dst,
                  std::size_t dst_at, std::size_t bytes, std::vector<cl::Event>& events) {
  for_each_piece(0, bytes, ctx.tuning().transfer_piece, 1, [&](std::size_t off, std::size_t len) {
    const bool last = off + len == bytes;
    ctx.queue().enqueueCopyBuffer(src, dst, src_at + off, dst_at + off, len, nullptr,
                                  last ? ctx.event_slot(events) : nullptr);
  });
}

// What a buffer scan copied: its input range, its output range, both or neither (Result::layout).
std::string ranges_copied(bool in, bool out) {
  return in && out ? "input and output ranges copied"
         : in      ? "input range copied"
         : out     ? "output range copied"
                   : "";
}

// One scan of in[first, first + n) into out[out_first, out_first + n) (buffers of ctx's), or of
// n elements at host_in into host_out.
Result run_scan(Context& ctx, Op op, DType type, const cl::Buffer* user_in, std::size_t first,
                const void* host_in, std::size_t n, const cl::Buffer* user_out,
                std::size_t out_first, void* host_out, const Options& o, bool check) {
  ScanVariant& v = scan_variant(o.variant);
  if (is_arg_op(op))
    throw Error(Errc::kUsage, op_name(op) + " has no prefix scan (scans take sum, prod, min, max)");
  ScanProblem p;
  p.op = op;
  p.type = type;
  p.n = n;
  p.acc_type = resolve_acc(op, type, o.acc);
  p.exclusive = o.exclusive;
  p.segmented = !o.segments.empty();
  if (p.segmented && o.segments.size() != n)
    throw Error(Errc::kInput, std::to_string(o.segments.size()) +
                                  " segment flags for an array of " + std::to_string(n) +
                                  " elements");
  const DeviceInfo& d = ctx.info();
  check_fp64(d, type, p.acc_type);
  const std::size_t in_bytes = checked_bytes(n, dtype_size(type), "the input"),
                    out_bytes = checked_bytes(n, p.acc_bytes(), "the scan's output");
  if (user_in) check_buffer(ctx, *user_in, first, n, type, "input");
  if (user_out)
    check_buffer(ctx, *user_out, out_first, n, p.acc_type, "output",
                 " (a " + op_name(op) + " scan of " + dtype_name(type) + " writes " +
                     dtype_name(p.acc_type) + ")",
                 acc_hint(op, type, o.acc));
  // Host arrays: in place (a CPU device; the input, flags and output at in_place_alignment()),
  // in chunks (past one allocation or tuning().max_chunk; each chunk takes the running value of
  // those before it), or streamed (past device memory); else copied whole, as buffers are read.
  ChunkLayout L;
  const ElementBytes e{dtype_size(type), p.segmented ? 1u : 0u, p.acc_bytes()};
  if (host_in && n > 0)
    L = choose_layout(d, ctx.tuning(), n, e,
                      HostArrays{host_in, p.segmented ? o.segments.data() : nullptr, host_out});
  const bool driver = host_in && n > 0 && (L.in_place || L.chunks > 1 || L.streamed());
  ScanProblem pp = p;
  if (driver && L.chunks > 1) {
    pp.n = L.chunk;
    pp.carry_in = true;
  }
  if (!driver) {
    check_fits(d, type, n);
    check_fits(d, p.acc_type, n);
  }
  refuse_unsupported(v.name(), d, v.unsupported(ctx, pp));

  Result r = start_result(v.name(), op, type, p.acc_type, n);
  const std::size_t builds = ctx.programs_built();
  std::unique_ptr<ScanPlan> plan;
  if (driver) {
    plan = v.plan(ctx, pp, o.local_size);
    const std::string what = v.name() + " " + op_name(op) + " scan of " + std::to_string(n) + " " +
                             dtype_name(type) + " elements";
    const HostArray view = host_view(type, host_in, n);
    ChunkedArray array(ctx, L, view, p.segmented ? o.segments.data() : nullptr,
                       static_cast<unsigned char*>(host_out), e);
    const unsigned char sentinel = is_float(p.acc_type) ? 0xFF : 0xA5;
    timed_runs(
        o, r,
        [&] {
          if (!check) return;  // the device writes every output element
          std::memset(host_out, sentinel, out_bytes);
          array.prepare_scan(what);
        },
        [&](std::vector<cl::Event>& events) {
          array.upload(what);  // nothing in place or streamed
          array.scan(*plan, events, what);
        });
    r.value = Value::from_bytes(
        p.acc_type, static_cast<const unsigned char*>(host_out) + out_bytes - p.acc_bytes());
    r.layout = L.str();
    r.plan = plan->policy().str();
  } else if (n > 0) {
    plan = v.plan(ctx, p, o.local_size);
    if (host_in) r.layout = "whole, copied";
    // A buffer's range where it lies (a sub-buffer) when it starts at a multiple of the base
    // alignment, else a copy in scratch: the input's before the scan, the output's after it.
    const std::size_t in_at = first * dtype_size(type), out_at = out_first * p.acc_bytes();
    const bool copy_in = user_in && in_at % ctx.base_align() != 0,
               copy_out = user_out && out_at % ctx.base_align() != 0;
    if (user_in) r.layout = ranges_copied(copy_in, copy_out);
    const cl::Buffer in = user_in && !copy_in ? ctx.view(*user_in, in_at, in_bytes)
                                              : ctx.scratch("api.input", in_bytes);
    const cl::Buffer out = user_out && !copy_out ? ctx.view(*user_out, out_at, out_bytes)
                                                 : ctx.scratch("api.scan.output", out_bytes);
    const cl::Buffer flags =
        ctx.scratch(p.segmented ? "api.scan.flags" : "api.scan.noflags", p.segmented ? n : 1);
    const std::size_t piece = ctx.tuning().transfer_piece;
    if (p.segmented) {
      enqueue_write(ctx.queue(), flags, 0, n, o.segments.data(), piece);
      wait(ctx, n, "writing the segment flags");
    }
    // The sentinel when checking: 0xA5 bytes for integers, NaN for floats.
    const cl_uchar sentinel = is_float(p.acc_type) ? 0xFF : 0xA5;
    timed_runs(
        o, r,
        [&] {
          if (!check) return;
          for_each_piece(0, out_bytes, piece, 1, [&](std::size_t at, std::size_t len) {
            ctx.queue().enqueueFillBuffer(out, sentinel, at, len);
          });
          wait(ctx, out_bytes, "filling the scan output with its sentinel");
        },
        [&](std::vector<cl::Event>& events) {
          if (host_in) enqueue_write(ctx.queue(), in, 0, in_bytes, host_in, piece);
          if (copy_in) enqueue_copy(ctx, *user_in, in_at, in, 0, in_bytes, events);
          plan->enqueue(in, flags, out, events);
          if (copy_out) enqueue_copy(ctx, out, 0, *user_out, out_at, out_bytes, events);
          if (host_out) enqueue_read(ctx.queue(), out, 0, out_bytes, host_out, piece);
          wait(ctx, in_bytes + out_bytes, v.name() + " of " + std::to_string(n) + " elements");
        });
    unsigned char last[8];
    if (host_out) {
      std::memcpy(last, static_cast<const unsigned char*>(host_out) + out_bytes - p.acc_bytes(),
                  p.acc_bytes());
    } else {
      enqueue_read(ctx.queue(), out, out_bytes - p.acc_bytes(), p.acc_bytes(), last, piece);
      wait(ctx, p.acc_bytes(), "reading the scan's last element");
    }
    r.value = Value::from_bytes(p.acc_type, last);
    r.plan = plan->policy().str();
  }
  r.builds = ctx.programs_built() - builds;
  if (check) {
    const HostArray a =
        host_in ? host_copy(type, host_in, n) : read_back(ctx, type, *user_in, first, n);
    HostArray got;
    if (!host_out) got = read_back(ctx, p.acc_type, *user_out, out_first, n);
    const ScanMode mode{op, p.acc_type, p.exclusive};
    // Each chunk's carry comes through the chunks before it: one more operation per chunk.
    const std::uint64_t depth = n ? plan->depth() + (driver && L.chunks > 1 ? L.chunks : 0) : 0;
    const ScanVerdict verdict =
        verify_scan(a, mode, o.segments, depth,
                    host_out ? static_cast<const unsigned char*>(host_out) : got.bytes.data());
    r.expected = verdict.expected_last;
    set_verdict(r, verdict.ok, verdict.why);
  }
  return r;
}

}  // namespace

DType result_dtype(Op op, DType t, const std::string& acc) { return resolve_acc(op, t, acc); }

std::vector<std::string> reduce_variant_names() {
  std::vector<std::string> names;
  for (const auto& v : reduce_variants()) names.push_back(v->name());
  return names;
}

std::vector<std::string> scan_variant_names() {
  std::vector<std::string> names;
  for (const auto& v : scan_variants()) names.push_back(v->name());
  return names;
}

void save_npy(const std::string& path, DType t, const void* data, std::size_t n) {
  write_npy(path, host_copy(t, data, n));
}

namespace {
Result run_row_reduce(Context& ctx, Op op, DType type, const cl::Buffer* user_in, std::size_t first,
                      const void* host, std::size_t n, const Options& o);
}  // namespace

struct Device::Impl {
  Impl(const DeviceInfo& info, const std::string& kernel_dir, const Tuning& tuning)
      : summary(summarize(info)),
        ctx(info, find_kernel_dir(kernel_dir, false, "kernel_dir"), false, tuning) {}
  // On the program's own context; its queue is waited for before each call. QueueUse::kProgram:
  // ctx runs on that queue itself.
  Impl(const DeviceInfo& info, const cl::Context& context, const cl::CommandQueue& queue,
       QueueUse queue_use, const std::string& kernel_dir, const Tuning& tuning)
      : summary(summarize(info)),
        ctx(info, context, find_kernel_dir(kernel_dir, false, "kernel_dir"), false, tuning,
            queue_use == QueueUse::kProgram ? &queue : nullptr),
        program_queue(queue),
        use(queue_use) {}

  // Before a call on a program's own queue: everything enqueued there so far has completed.
  Context& ready() {
    if (program_queue)
      finish(*program_queue, 0, "the program's commands enqueued before a clreduce call");
    return ctx;
  }

  // Where a plan's call marks the program's queue before it runs on ctx's: the program's queue
  // when ctx has a queue of its own beside it, else none (one in-order queue orders the calls).
  cl::CommandQueue* marker_queue() {
    return program_queue && use == QueueUse::kOwn ? &*program_queue : nullptr;
  }

  DeviceSummary summary;
  Context ctx;
  std::optional<cl::CommandQueue> program_queue;
  QueueUse use = QueueUse::kOwn;
};

namespace {

// The program's own objects must belong together: the device in the context, the queue on both;
// a queue run on directly (QueueUse::kProgram) in order.
DeviceInfo check_program_objects(const cl::Context& context, const cl::Device& device,
                                 const cl::CommandQueue& queue, QueueUse use) {
  if (context() == nullptr || device() == nullptr || queue() == nullptr)
    throw Error(Errc::kUsage, "Device(context, device, queue): an empty OpenCL object");
  if (use != QueueUse::kOwn && use != QueueUse::kProgram)
    throw Error(Errc::kUsage,
                "Device(context, device, queue, use): use is neither "
                "QueueUse::kOwn nor QueueUse::kProgram");
  if (use == QueueUse::kProgram &&
      (queue.getInfo<CL_QUEUE_PROPERTIES>() & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE))
    throw Error(Errc::kUsage,
                "Device(context, device, queue, QueueUse::kProgram): the queue is out of order, "
                "and clreduce runs its calls' commands directly only on an in-order queue: pass "
                "an in-order queue, or QueueUse::kOwn (a queue of clreduce's own, ordered after "
                "the program's by a marker)");
  const std::vector<cl::Device> devices = context.getInfo<CL_CONTEXT_DEVICES>();
  if (std::none_of(devices.begin(), devices.end(),
                   [&](const cl::Device& d) { return d() == device(); }))
    throw Error(Errc::kUsage, "Device(context, device, queue): the device (" +
                                  device.getInfo<CL_DEVICE_NAME>() +
                                  ") is not one of the context's devices");
  if (queue.getInfo<CL_QUEUE_CONTEXT>()() != context())
    throw Error(Errc::kUsage,
                "Device(context, device, queue): the queue belongs to another cl::Context");
  if (queue.getInfo<CL_QUEUE_DEVICE>()() != device())
    throw Error(Errc::kUsage, "Device(context, device, queue): the queue is another device's");
  return find_device(device);
}

}  // namespace

std::vector<DeviceSummary> Device::list() {
  std::vector<DeviceSummary> out;
  for (const DeviceInfo& d : list_devices()) out.push_back(summarize(d));
  return out;
}

Device::Device(const std::string& spec, const std::string& kernel_dir, const Tuning& tuning)
    : impl_(std::make_unique<Impl>(select_device(list_devices(), spec), kernel_dir, tuning)) {}
Device::Device(std::size_t index, const std::string& kernel_dir, const Tuning& tuning)
    : Device(std::to_string(index), kernel_dir, tuning) {}
Device::Device(const cl::Context& context, const cl::Device& device, const cl::CommandQueue& queue,
               const std::string& kernel_dir, const Tuning& tuning)
    : Device(context, device, queue, QueueUse::kOwn, kernel_dir, tuning) {}
Device::Device(const cl::Context& context, const cl::Device& device, const cl::CommandQueue& queue,
               QueueUse use, const std::string& kernel_dir, const Tuning& tuning)
    : impl_(std::make_unique<Impl>(check_program_objects(context, device, queue, use), context,
                                   queue, use, kernel_dir, tuning)) {}
Device Device::from_environment(const std::string& spec) {
  const Tuning tuning = tuning_from_env();
  return Device(spec, find_kernel_dir("", true), tuning);
}
Device::~Device() = default;
Device::Device(Device&&) noexcept = default;
Device& Device::operator=(Device&&) noexcept = default;

const DeviceSummary& Device::summary() const { return impl_->summary; }
const std::string& Device::kernel_dir() const { return impl_->ctx.kernel_dir(); }
cl::Context& Device::context() { return impl_->ctx.context(); }
cl::CommandQueue& Device::queue() {
  return impl_->program_queue ? *impl_->program_queue : impl_->ctx.queue();
}
cl::Device Device::device() const { return impl_->ctx.info().device; }
QueueUse Device::queue_use() const { return impl_->use; }
Tuning& Device::tuning() { return impl_->ctx.tuning(); }

Result Device::reduce(Op op, DType type, const void* data, std::size_t n, const Options& options) {
  if (!is_variant_dtype(type))
    return run_row_reduce(impl_->ready(), op, type, nullptr, 0, data, n, options);
  return run_reduce(impl_->ready(), op, type, nullptr, 0, data, n, options, options.verify);
}

Result Device::reduce(Op op, DType type, const cl::Buffer& data, std::size_t n,
                      const Options& options) {
  if (!is_variant_dtype(type))
    return run_row_reduce(impl_->ready(), op, type, &data, 0, nullptr, n, options);
  return run_reduce(impl_->ready(), op, type, &data, 0, nullptr, n, options, options.verify);
}

Result Device::reduce(Op op, DType type, const cl::Buffer& data, std::size_t first, std::size_t n,
                      const Options& options) {
  if (!is_variant_dtype(type))
    return run_row_reduce(impl_->ready(), op, type, &data, first, nullptr, n, options);
  return run_reduce(impl_->ready(), op, type, &data, first, nullptr, n, options, options.verify);
}

Result Device::scan(Op op, DType type, const void* in, std::size_t n, DType out_type, void* out,
                    const Options& options) {
  const DType acc = resolve_acc(op, type, options.acc);
  if (out_type != acc && !is_arg_op(op))
    throw Error(Errc::kUsage, op_name(op) + " scan of " + dtype_name(type) + " writes " +
                                  dtype_name(acc) + ", not " + dtype_name(out_type) +
                                  ": pass an output of " + dtype_name(acc) +
                                  acc_hint(op, type, options.acc));
  return run_scan(impl_->ready(), op, type, nullptr, 0, in, n, nullptr, 0, out, options,
                  options.verify);
}

Result Device::scan(Op op, DType type, const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                    const Options& options) {
  return run_scan(impl_->ready(), op, type, &in, 0, nullptr, n, &out, 0, nullptr, options,
                  options.verify);
}

Result Device::scan(Op op, DType type, const cl::Buffer& in, std::size_t first, std::size_t n,
                    const cl::Buffer& out, std::size_t out_first, const Options& options) {
  return run_scan(impl_->ready(), op, type, &in, first, nullptr, n, &out, out_first, nullptr,
                  options, options.verify);
}

// ---- Derived ops, user expressions, segments and axes.

const std::vector<Derived>& all_derived() {
  static const std::vector<Derived> v = {Derived::kDot, Derived::kNorm2, Derived::kMean,
                                         Derived::kVar, Derived::kStd,   Derived::kCount,
                                         Derived::kAny, Derived::kAll,   Derived::kLogSumExp};
  return v;
}

std::string derived_name(Derived op) { return expr_op_names().at(static_cast<std::size_t>(op)); }

Derived parse_derived(const std::string& name) {
  for (Derived d : all_derived())
    if (derived_name(d) == name) return d;
  throw Error(Errc::kUsage,
              "unknown derived op '" + name + "' (valid: " + join(expr_op_names()) + ")");
}

Segments Segments::from_offsets(std::vector<std::int64_t> offsets) {
  Segments s;
  s.offsets = std::move(offsets);
  return s;
}

Segments Segments::along_axes(std::vector<std::uint64_t> shape, std::vector<std::int64_t> axes,
                              bool keepdims) {
  Segments s;
  s.by_axes = true;
  s.shape = std::move(shape);
  s.axes = std::move(axes);
  s.keepdims = keepdims;
  return s;
}

namespace {

static_assert(static_cast<int>(Derived::kLogSumExp) == 8, "Derived lists expr_op_names() in order");

// The arrays of one call on the device: host arrays written into scratch buffers of their own
// (a write enqueued by upload(), in the timed runs), buffers of the context checked and used
// where they are.
struct CallInputs {
  std::vector<cl::Buffer> buffers;
  std::vector<DType> types;
  std::vector<const void*> host;  // per array: its host memory, or null for a buffer
  std::size_t n = 0;
  // Every array is host memory, to run through the chunk driver (run/expr_chunks.hpp: any
  // length, in place on CPU devices): no buffers are made for them here.
  bool chunked = false;

  void upload(Context& ctx) const {
    for (std::size_t k = 0; k < buffers.size(); ++k)
      if (host[k] && n)
        enqueue_write(ctx.queue(), buffers[k], 0, n * dtype_size(types[k]), host[k],
                      ctx.tuning().transfer_piece);
  }
  std::size_t bytes() const {
    std::size_t b = 0;
    for (DType t : types) b += n * dtype_size(t);
    return b;
  }
  // Host copies of every array (a buffer read back), for the references.
  std::vector<HostArray> on_host(Context& ctx) const {
    std::vector<HostArray> out;
    for (std::size_t k = 0; k < buffers.size(); ++k)
      out.push_back(host[k] ? host_copy(types[k], host[k], n)
                            : read_back(ctx, types[k], buffers[k], 0, n));
    return out;
  }
  // Element 0 of array 0 as a double (0 for n = 0).
  double first(Context& ctx) const {
    if (n == 0) return 0.0;
    unsigned char b[8] = {};
    if (host[0])
      std::memcpy(b, host[0], dtype_size(types[0]));
    else
      ctx.read(buffers[0], dtype_size(types[0]), b, "an array's first element");
    if (types[0] == DType::kFloat16) {  // no C++ type: its bits, converted exactly
      std::uint16_t h;
      std::memcpy(&h, b, sizeof h);
      return half_to_double(h);
    }
    return dispatch_dtype(types[0], [&](auto zero) {
      decltype(zero) v;
      std::memcpy(&v, b, sizeof v);
      return static_cast<double>(v);
    });
  }
};

CallInputs call_inputs(Context& ctx, const std::vector<ArrayRef>& arrays, std::size_t n,
                       std::size_t wanted, bool chunks = false) {
  if (arrays.empty() || arrays.size() > kMaxExprInputs)
    throw Error(Errc::kUsage, "a derived op or a user expression takes 1 to 4 input arrays, not " +
                                  std::to_string(arrays.size()));
  if (arrays.size() < wanted)
    throw Error(Errc::kUsage, "the expressions name " + std::string(1, "xyzw"[wanted - 1]) +
                                  ", but " + std::to_string(arrays.size()) + " array" +
                                  (arrays.size() == 1 ? " is" : "s are") +
                                  " given (one per name: x, y, z, w)");
  const DeviceInfo& d = ctx.info();
  CallInputs c;
  c.n = n;
  c.chunked = chunks && std::all_of(arrays.begin(), arrays.end(),
                                    [](const ArrayRef& a) { return a.data != nullptr; });
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const ArrayRef& a = arrays[k];
    check_fp64(d, a.type, a.type);
    if (c.chunked) {
      checked_bytes(n, dtype_size(a.type), "an input");
      c.types.push_back(a.type);
      c.host.push_back(a.data);
      continue;
    }
    check_fits(d, a.type, n);
    const std::string what = "input " + std::to_string(k);
    const std::size_t bytes = checked_bytes(n, dtype_size(a.type), "an input");
    c.types.push_back(a.type);
    c.host.push_back(a.data);
    if (a.data) {
      c.buffers.push_back(
          ctx.scratch("api.expr_input" + std::to_string(k), std::max<std::size_t>(bytes, 1)));
    } else {
      if (a.buffer() == nullptr)
        throw Error(Errc::kUsage, what + " holds neither host memory nor a buffer");
      check_buffer(ctx, a.buffer, 0, n, a.type, what.c_str());
      c.buffers.push_back(a.buffer);
    }
  }
  return c;
}

// A user expression's spec over the inputs' types.
ExprSpec user_spec(const Expression& e, const std::vector<DType>& types, const Options& o) {
  ExprSpec spec;
  spec.map = e.map;
  spec.reduce = e.reduce;
  spec.identity = e.identity;
  spec.post = e.post;
  spec.where = o.where;
  spec.inputs = types;
  spec.acc = e.acc.empty() ? default_expr_acc(types) : parse_dtype(e.acc);
  for (const auto& [flag, text] : {std::pair<const char*, const std::string&>{"map", e.map},
                                   {"reduce", e.reduce},
                                   {"identity", e.identity}})
    check_expression(flag, text);
  if (!e.post.empty()) check_expression("post", e.post);
  if (!o.where.empty()) check_expression("where", o.where);
  return spec;
}

// The arrays a spec's expressions name (map and where).
std::size_t named_arrays(const Expression& e, const Options& o) {
  return std::max(inputs_named(e.map), o.where.empty() ? std::size_t{1} : inputs_named(o.where));
}

std::size_t named_arrays(Derived op, const Options& o) {
  if (!o.where.empty()) check_expression("where", o.where);
  return std::max(expr_op_arrays(derived_name(op)),
                  o.where.empty() ? std::size_t{1} : inputs_named(o.where));
}

// whole: a reduction of the whole arrays (run_expr_call(), which runs var's second pass where
// it is needed), not of segments.
ExprSpec derived_spec(Context& ctx, Derived op, const CallInputs& c, const Options& o, bool whole) {
  ExprOpOptions eo;
  eo.where = o.where;
  eo.ddof = o.ddof;
  eo.fp64 = ctx.info().fp64;
  eo.shift = c.first(ctx);
  eo.second_pass = whole;
  set_row_tuning(eo, ctx.tuning());
  return expr_op_spec(derived_name(op), c.types, eo);
}

void check_spec_fp64(const DeviceInfo& d, const ExprSpec& spec) {
  check_fp64(d, spec.acc, spec.acc);
}

// One reduction of the engine (a derived op: row non-empty; else a user expression).
Result run_expr_call(Context& ctx, const std::string& row, const ExprSpec& spec,
                     const CallInputs& c, const Options& o) {
  check_spec_fp64(ctx.info(), spec);
  const std::size_t n = c.n;
  const std::size_t builds = ctx.programs_built();
  // Host arrays: through the chunk driver, whole, in chunks, streamed or in place; the chunks'
  // accumulators folded in order on the device.
  std::vector<HostArray> views;
  std::unique_ptr<ExprArrays> xa;
  if (c.chunked) {
    for (std::size_t k = 0; k < c.types.size(); ++k)
      views.push_back(host_view(c.types[k], c.host[k], n));
    xa = std::make_unique<ExprArrays>(ctx, views);
  }
  ExprReduction er(ctx, spec, xa ? xa->plan_n() : n, o.local_size);
  const std::uint64_t fold_depth = xa ? xa->fold_depth() : 0;
  const ExprPieces pieces = [&](const ExprReduction::ExprPieceFn& f) {
    if (!xa) return f(c.buffers, n);
    xa->each([&](std::size_t, std::size_t len, const std::vector<cl::Buffer>& in) { f(in, len); });
  };
  const TimeLimit limit = ctx.time_limit(static_cast<double>(c.bytes()));
  if (xa) xa->upload("the inputs");
  if (row.empty()) {
    if (!xa) c.upload(ctx);
    ExprLaws laws;
    if (xa)
      xa->each([&](std::size_t, std::size_t len,
                   const std::vector<cl::Buffer>& in) { laws = er.check_laws(in, len, limit); },
               1);
    else
      laws = er.check_laws(c.buffers, n, limit);
    if (!laws.failure.empty()) throw Error(Errc::kUsage, laws.failure);
  }
  Result r = start_result("expr", Op::kSum, spec.inputs.front(), spec.acc, n);
  r.name = row.empty() ? "expr" : row;
  const std::size_t as = er.acc_bytes();
  const cl::Buffer out = ctx.scratch("api.expr_result", as);
  std::vector<unsigned char> got(as);
  const std::vector<unsigned char> sentinel(as, 0xA5);
  ExprSpec used = spec;  // var's shifted sums: the shift of the pass that gave the result
  timed_runs(
      o, r,
      [&] {  // a sentinel first, so a result no kernel wrote cannot pass for one
        ctx.write(out, as, sentinel.data(), "writing the result's sentinel");
      },
      [&](std::vector<cl::Event>& events) {
        const auto pass = [&] {
          if (xa) {
            xa->enqueue(er, out, events);
          } else {
            c.upload(ctx);
            er.enqueue(c.buffers, n, out, events);
          }
          enqueue_read(ctx.queue(), out, 0, as, got.data(), ctx.tuning().transfer_piece);
          wait(ctx, c.bytes(), "the reduction of " + std::to_string(n) + " elements");
        };
        pass();
        used = spec;
        const double second = var_second_shift(spec, got, n, er.depth() + fold_depth);
        if (!std::isnan(second)) {
          // var's first pass needs a second one, shifted by its mean.
          er.set_shift(second);
          ctx.write(out, as, sentinel.data(), "writing the result's sentinel");
          pass();
          er.set_shift(spec.shift);
          used.shift = second;
        }
      });
  r.plan = er.policy().str();
  if (xa) r.layout = xa->layout().str();
  if (!row.empty() && expr_op_needs_elements(row)) {
    // min, max, argmin, argmax (a built-in op on an engine type): the selected element exactly,
    // with no post, in the element's type; the arg ops' index after the value.
    r.value = Value::from_bytes(spec.acc, got.data());
    r.value.type = expr_op_result_type(row, spec.inputs.front(), spec.acc);
    if (spec.acc == DType::kInt64) r.value.u = static_cast<std::uint64_t>(r.value.i);
    if (spec.acc == DType::kUInt64) r.value.i = static_cast<std::int64_t>(r.value.u);
    if (spec.arg == 1) std::memcpy(&r.value.index, got.data() + 8, 8);
    if (o.verify) {
      const ExprOpReference ref = expr_op_reference(row, xa ? views : c.on_host(ctx), {}, o.ddof,
                                                    r.value.type, er.depth() + fold_depth);
      const bool same =
          is_float(r.value.type)
              ? (r.value.f == ref.value.f || (std::isnan(r.value.f) && std::isnan(ref.value.f)))
          : is_signed(r.value.type) ? r.value.i == ref.value.i
                                    : r.value.u == ref.value.u;
      r.expected = ref.value;
      set_verdict(r, same && r.value.index == ref.value.index,
                  same ? "the index differs from the first extreme's"
                       : "the selected element differs from the reference's");
    }
  } else if (!row.empty()) {
    r.value = er.post_bytes(got, n, limit).front();
    if (o.verify) {
      const ExprVerdict v =
          verify_row(row, xa ? views : c.on_host(ctx), where_mask(er, pieces, n, limit), o.ddof,
                     spec.acc, er.depth() + fold_depth, r.value, &used);
      r.expected = v.expected;
      set_verdict(r, v.ok, v.why);
    }
  } else {
    const Value acc = Value::from_bytes(spec.acc, got.data());
    if (o.verify) {
      std::vector<cl::Event> seq;
      const ExprVerdict v = verify_user(er, pieces, n, fold_depth, acc, limit, seq);
      r.value = v.result;
      r.expected = v.expected;
      set_verdict(r, v.ok, v.why);
    } else {
      r.value = er.post({acc}, n, limit).front();
    }
  }
  r.acc = r.value.type;
  r.builds = ctx.programs_built() - builds;
  return r;
}

SegmentLayout segment_layout(const Segments& s, std::size_t n, std::vector<std::uint64_t>* shape) {
  if (s.by_axes) {
    std::uint64_t count = 1;
    for (std::uint64_t d : s.shape) count = sat_mul(count, d);
    if (count != n)
      throw Error(Errc::kUsage, "Segments::along_axes: a shape of " + std::to_string(count) +
                                    " elements for an array of n = " + std::to_string(n));
    AxisReduction r = axis_reduction(s.shape, s.axes, s.keepdims);
    *shape = r.shape;
    return std::move(r.layout);
  }
  HostArray off;
  off.type = DType::kInt64;
  off.n = s.offsets.size();
  off.bytes.resize(off.n * 8);
  if (off.n) std::memcpy(off.bytes.data(), s.offsets.data(), off.n * 8);
  SegmentLayout L;
  L.offsets = check_offsets(off, n, "Segments::from_offsets");
  *shape = {L.results()};
  return L;
}

// An op without identity refuses an empty segment, naming the first.
void check_empty_segments(const SegmentLayout& L, bool by_axes, const std::string& op) {
  for (std::uint64_t q = 0; q < L.results(); ++q)
    if (L.length(q) == 0)
      throw Error(Errc::kUsage,
                  (by_axes ? std::string("the reduced axes hold no elements")
                           : "segment " + std::to_string(q) + " ([" + std::to_string(L.offsets[q]) +
                                 ", " + std::to_string(L.offsets[q + 1]) + ")) is empty") +
                      ": " + op + " has no identity");
}

// One segmented reduction: a built-in op (spec null) or the engine's (row: a derived op's name,
// else a user expression).
SegmentedResult run_segments_call(Context& ctx, Op op, const ExprSpec* spec, const std::string& row,
                                  const CallInputs& c, const Segments& segs, const Options& o) {
  const DeviceInfo& d = ctx.info();
  const std::size_t n = c.n;
  SegmentedResult r;
  SegmentLayout layout = segment_layout(segs, n, &r.shape);
  const std::uint64_t m = layout.results();
  DType acc;
  if (spec) {
    check_spec_fp64(d, *spec);
    acc = spec->acc;
    r.name = row.empty() ? "expr" : row;
  } else {
    if (is_arg_op(op) && segs.by_axes && segs.axes.size() != 1)
      throw Error(Errc::kUsage, op_name(op) + " takes one axis, not " +
                                    std::to_string(segs.axes.size()) + " (NumPy's does)");
    acc = resolve_acc(op, c.types[0], o.acc);
    check_fp64(d, c.types[0], acc);
    if (!has_identity(op)) check_empty_segments(layout, segs.by_axes, op_name(op));
    r.name = op_name(op);
  }
  r.type = c.types[0];
  r.acc = acc;
  r.n = n;
  r.verdict = "not checked";
  const std::size_t builds = ctx.programs_built();
  std::unique_ptr<SegmentReduction> sr =
      spec ? std::make_unique<SegmentReduction>(ctx, *spec, layout, o.local_size)
           : std::make_unique<SegmentReduction>(ctx, op, c.types[0], acc, layout, o.local_size);
  const TimeLimit limit = ctx.time_limit(static_cast<double>(c.bytes()));
  if (spec && row.empty()) {
    c.upload(ctx);
    const ExprLaws laws = sr->check_laws(c.buffers, n, o.local_size, limit);
    if (!laws.failure.empty()) throw Error(Errc::kUsage, laws.failure);
  }
  const std::size_t ab = sr->acc_bytes();
  std::vector<unsigned char> got(m * ab);
  if (m > 0) {
    const cl::Buffer out = ctx.scratch("api.segments_result", m * ab);
    const std::vector<unsigned char> sentinel(m * ab, 0x5A);
    Result t;
    timed_runs(
        o, t, [&] { ctx.write(out, m * ab, sentinel.data(), "the segments' sentinel"); },
        [&](std::vector<cl::Event>& events) {
          c.upload(ctx);
          sr->enqueue(c.buffers, out, events);
          enqueue_read(ctx.queue(), out, 0, m * ab, got.data(), ctx.tuning().transfer_piece);
          wait(ctx, c.bytes() + m * ab, "the segmented reduction");
        });
    r.kernel_ms = t.kernel_ms;
    r.wall_ms = t.wall_ms;
    r.launches = t.launches;
  }
  r.plan = sr->policy().str();
  // The results: a built-in op's from the bytes (arg ops: the index at byte 8), the engine's
  // after post.
  std::vector<Value> results;
  std::vector<Value> accs;  // user expressions: before post, for verify
  if (!spec) {
    for (std::uint64_t q = 0; q < m; ++q) {
      results.push_back(Value::from_bytes(acc, got.data() + q * ab));
      if (is_arg_op(op)) std::memcpy(&results.back().index, got.data() + q * ab + 8, 8);
    }
  } else if (!row.empty() || !o.verify) {
    results = sr->post_bytes(got, limit);
  } else {
    for (std::uint64_t q = 0; q < m; ++q)
      results.push_back(Value::from_bytes(acc, got.data() + q * ab));
  }
  if (o.verify) {
    SegmentVerdict v;
    if (!spec) {
      v = verify_segments(*sr, op, acc, c.on_host(ctx)[0], results);
    } else if (!row.empty()) {
      v = verify_segments_row(*sr, row, c.on_host(ctx),
                              sr->where_mask(c.buffers, n, o.local_size, limit), o.ddof, acc,
                              results);
    } else {
      std::vector<cl::Event> seq;
      v = verify_segments_user(*sr, c.buffers, acc, results, limit, seq);
    }
    r.checked = true;
    r.verified = v.ok;
    r.verdict = v.ok ? "verified" : v.why;
  }
  // Every result as a value of acc (post's type for the engine's: acc too).
  r.values.type = spec && !results.empty() ? results.front().type : acc;
  r.acc = r.values.type;
  r.values.n = m;
  const std::size_t vs = dtype_size(r.values.type);
  r.values.bytes.resize(m * vs);
  for (std::uint64_t q = 0; q < m; ++q)
    dispatch_dtype(r.values.type, [&](auto zero) {
      const auto v = value_as<decltype(zero)>(results[q]);
      std::memcpy(r.values.bytes.data() + q * vs, &v, vs);
    });
  if (!spec && is_arg_op(op))
    for (const Value& v : results) r.indices.push_back(v.index);
  r.builds = ctx.programs_built() - builds;
  return r;
}

CallInputs one_input(Context& ctx, DType type, const void* host, const cl::Buffer* buffer,
                     std::size_t n) {
  return call_inputs(ctx, {buffer ? ArrayRef(type, *buffer) : ArrayRef(type, host)}, n, 1);
}

// A built-in op over elements of one of the engine's input types (float16, bool, int8, uint8,
// int16, uint16), which no variant takes: the engine's row for the op, as the command line runs
// it. in[first, first + n) of a buffer is read where it lies when it starts at a multiple of the
// base alignment (a sub-buffer), else copied on the device first.
Result run_row_reduce(Context& ctx, Op op, DType type, const cl::Buffer* user_in, std::size_t first,
                      const void* host, std::size_t n, const Options& o) {
  if (!o.variant.empty())
    throw Error(Errc::kUsage, "variant " + o.variant + " does not take " + dtype_name(type) +
                                  " (the variants take int32, uint32, int64, uint64, float and "
                                  "double; the others run through the reduction engine: no "
                                  "variant)");
  if (n == 0 && !has_identity(op))
    throw Error(Errc::kUsage, op_name(op) + " of an empty array has no identity (n = 0)");
  static const unsigned char none[8] = {};
  std::optional<cl::Buffer> range;
  std::string layout;
  if (user_in) {
    check_buffer(ctx, *user_in, first, n, type, "input");
    const std::size_t size = dtype_size(type), at = first * size,
                      bytes = std::max<std::size_t>(n * size, 1);
    if (n == 0) {
      host = none;
    } else if (at % ctx.base_align() == 0) {
      range = ctx.view(*user_in, at, bytes);
    } else {
      range = ctx.scratch("api.row_input", bytes);
      std::vector<cl::Event> events;
      enqueue_copy(ctx, *user_in, at, *range, 0, n * size, events);
      wait(ctx, bytes, "copying the input's range");
      layout = "range copied";
    }
  }
  const CallInputs c = one_input(ctx, type, range ? nullptr : host, range ? &*range : nullptr, n);
  ExprOpOptions eo;
  eo.acc = o.acc;
  eo.fp64 = ctx.info().fp64;
  set_row_tuning(eo, ctx.tuning());
  Result r = run_expr_call(ctx, op_name(op), expr_op_spec(op_name(op), c.types, eo), c, o);
  r.op = op;
  r.layout = user_in ? layout : "whole, copied";
  return r;
}

}  // namespace

Result Device::reduce(Derived op, const std::vector<ArrayRef>& inputs, std::size_t n,
                      const Options& options) {
  Context& ctx = impl_->ready();
  const CallInputs c = call_inputs(ctx, inputs, n, named_arrays(op, options), true);
  return run_expr_call(ctx, derived_name(op), derived_spec(ctx, op, c, options, true), c, options);
}

Result Device::reduce(const Expression& expression, const std::vector<ArrayRef>& inputs,
                      std::size_t n, const Options& options) {
  Context& ctx = impl_->ready();
  const std::size_t named = named_arrays(expression, options);
  const CallInputs c = call_inputs(ctx, inputs, n, named, true);
  return run_expr_call(ctx, "", user_spec(expression, c.types, options), c, options);
}

SegmentedResult Device::reduce_segments(Op op, DType type, const void* data, std::size_t n,
                                        const Segments& segments, const Options& options) {
  Context& ctx = impl_->ready();
  return run_segments_call(ctx, op, nullptr, "", one_input(ctx, type, data, nullptr, n), segments,
                           options);
}

SegmentedResult Device::reduce_segments(Op op, DType type, const cl::Buffer& data, std::size_t n,
                                        const Segments& segments, const Options& options) {
  Context& ctx = impl_->ready();
  return run_segments_call(ctx, op, nullptr, "", one_input(ctx, type, nullptr, &data, n), segments,
                           options);
}

SegmentedResult Device::reduce_segments(Derived op, const std::vector<ArrayRef>& inputs,
                                        std::size_t n, const Segments& segments,
                                        const Options& options) {
  Context& ctx = impl_->ready();
  const CallInputs c = call_inputs(ctx, inputs, n, named_arrays(op, options));
  const ExprSpec spec = derived_spec(ctx, op, c, options, false);
  return run_segments_call(ctx, Op::kSum, &spec, derived_name(op), c, segments, options);
}

SegmentedResult Device::reduce_segments(const Expression& expression,
                                        const std::vector<ArrayRef>& inputs, std::size_t n,
                                        const Segments& segments, const Options& options) {
  Context& ctx = impl_->ready();
  const CallInputs c = call_inputs(ctx, inputs, n, named_arrays(expression, options));
  const ExprSpec spec = user_spec(expression, c.types, options);
  return run_segments_call(ctx, Op::kSum, &spec, "", c, segments, options);
}

// ---- Calls that only enqueue.

namespace {

// The events a call waits for: `wait` (each of ctx's context, else Errc::kUsage) and, on a
// Device of the program's own queue beside clreduce's, a marker there (every command enqueued
// before the call). On the program's queue itself (QueueUse::kProgram) its order is the gate.
std::vector<cl::Event> gate(Context& ctx, cl::CommandQueue* marker_queue,
                            const std::vector<cl::Event>& wait) {
  for (std::size_t k = 0; k < wait.size(); ++k) {
    if (wait[k]() == nullptr)
      throw Error(Errc::kUsage,
                  "wait list: event " + std::to_string(k) + " is empty (no cl_event)");
    if (wait[k].getInfo<CL_EVENT_CONTEXT>()() != ctx.context()())
      throw Error(Errc::kUsage, "wait list: event " + std::to_string(k) +
                                    " belongs to another cl::Context: a plan waits only for "
                                    "events of its Device's context");
  }
  std::vector<cl::Event> all = wait;
  if (marker_queue) {
    all.emplace_back();
    marker_queue->enqueueMarkerWithWaitList(nullptr, &all.back());
  }
  return all;
}

// Enqueues `body` on ctx's queue after the gate's events (a barrier), flushes, and returns the
// last command's event (the barrier's, or a marker's, when body enqueues nothing); under
// Context::EventsOff, no event (nothing made for one).
template <class Body>
cl::Event enqueue_gated(Context& ctx, const std::vector<cl::Event>& gated, Body body) {
  std::vector<cl::Event> events;
  cl::CommandQueue& q = ctx.queue();
  if (!gated.empty()) q.enqueueBarrierWithWaitList(&gated, ctx.event_slot(events));
  body(events);
  if (events.empty() && !ctx.events_off()) {
    events.emplace_back();
    q.enqueueMarkerWithWaitList(nullptr, &events.back());
  }
  q.flush();
  return ctx.events_off() ? cl::Event() : events.back();
}

void check_plan_n(std::size_t n, std::size_t max_n, const char* what) {
  if (n > max_n)
    throw Error(Errc::kUsage, std::string(what) + " made for max_n = " + std::to_string(max_n) +
                                  " elements cannot take n = " + std::to_string(n) +
                                  ": make it for the largest n it will take");
}

}  // namespace

struct Reduction::Impl {
  Device::Impl* dev;
  DType type;
  std::size_t max_n;
  std::unique_ptr<ReduceCall> call;
};

Reduction::Reduction(Device& device, Op op, DType type, std::size_t max_n,
                     const PlanOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Device::Impl& d = *device.impl_;
  Context& ctx = d.ctx;
  ReduceVariant& v = reduce_variant(options.variant);
  ReduceProblem p;
  p.op = op;
  p.type = type;
  p.n = std::max<std::size_t>(max_n, 1);
  p.acc_type = resolve_acc(op, type, options.acc);
  check_fp64(ctx.info(), type, p.acc_type);
  check_fits(ctx.info(), type, p.n);
  refuse_unsupported(v.name(), ctx.info(), v.unsupported(ctx, p));
  impl_->dev = &d;
  impl_->type = type;
  impl_->max_n = max_n;
  impl_->call = std::make_unique<ReduceCall>(ctx, v, p, options.local_size);
}
Reduction::~Reduction() = default;
Reduction::Reduction(Reduction&&) noexcept = default;
Reduction& Reduction::operator=(Reduction&&) noexcept = default;

Op Reduction::op() const { return impl_->call->problem().op; }
DType Reduction::type() const { return impl_->type; }
DType Reduction::result_type() const { return impl_->call->problem().acc_type; }
std::size_t Reduction::max_n() const { return impl_->max_n; }
std::size_t Reduction::result_bytes() const { return impl_->call->problem().acc_bytes(); }
std::string Reduction::plan() const { return impl_->call->plan().policy().str(); }

cl::Event Reduction::enqueue(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                             std::size_t out_offset, const std::vector<cl::Event>& wait) {
  return enqueue(in, 0, n, out, out_offset, wait);
}

cl::Event Reduction::enqueue(const cl::Buffer& in, std::size_t first, std::size_t n,
                             const cl::Buffer& out, std::size_t out_offset,
                             const std::vector<cl::Event>& wait) {
  cl::Event done;
  enqueue(in, first, n, out, out_offset, wait, &done);
  return done;
}

void Reduction::enqueue(const cl::Buffer& in, std::size_t first, std::size_t n,
                        const cl::Buffer& out, std::size_t out_offset,
                        const std::vector<cl::Event>& wait, cl::Event* event) {
  Context& ctx = impl_->dev->ctx;
  const ReduceProblem& p = impl_->call->problem();
  check_plan_n(n, impl_->max_n, "a Reduction");
  if (n == 0 && !has_identity(p.op))
    throw Error(Errc::kUsage, op_name(p.op) + " of an empty array has no identity (n = 0)");
  check_buffer(ctx, in, first, n, p.type, "input");
  check_result_buffer(ctx, out, out_offset, p.acc_bytes(), "output");
  if (n && !reads_at(ctx, impl_->call->plan(), first))
    throw Error(Errc::kUsage,
                "a Reduction with " + impl_->call->plan().variant() +
                    " reads a range from element " + std::to_string(first) +
                    " only where it starts at a multiple of " + std::to_string(ctx.base_align()) +
                    " bytes (the device's base alignment): " +
                    "make the plan with the variant fast or exact, which take any first element, "
                    "or copy the range");
  const std::vector<cl::Event> gated = gate(ctx, impl_->dev->marker_queue(), wait);
  std::optional<Context::EventsOff> off;
  if (!event && impl_->dev->use == QueueUse::kProgram) off.emplace(ctx);
  cl::Event done = enqueue_gated(ctx, gated, [&](std::vector<cl::Event>& events) {
    impl_->call->enqueue(in, first, n, out, out_offset, events);
  });
  if (event) *event = std::move(done);
}

struct Scan::Impl {
  Device::Impl* dev;
  ScanProblem p;
  std::size_t max_n;
  std::unique_ptr<ScanPlan> plan;
  // PlanOptions::any_offset: where ranges off the base alignment are copied (max_n elements).
  bool any_offset = false;
  cl::Buffer in_copy, flags_copy, out_copy;

  cl::Event enqueue(const cl::Buffer& in, std::size_t first, std::size_t n, const cl::Buffer* flags,
                    const cl::Buffer& out, std::size_t out_first,
                    const std::vector<cl::Event>& wait, bool no_event = false);
};

Scan::Scan(Device& device, Op op, DType type, std::size_t max_n, const PlanOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Device::Impl& d = *device.impl_;
  Context& ctx = d.ctx;
  if (is_arg_op(op))
    throw Error(Errc::kUsage, op_name(op) + " has no prefix scan (scans take sum, prod, min, max)");
  if (!options.variant.empty()) scan_variant(options.variant);  // a name it knows
  ScanProblem& p = impl_->p;
  p.op = op;
  p.type = type;
  p.n = std::max<std::size_t>(max_n, 1);
  p.acc_type = resolve_acc(op, type, options.acc);
  p.exclusive = options.exclusive;
  p.segmented = options.segmented;
  check_fp64(ctx.info(), type, p.acc_type);
  check_fits(ctx.info(), type, p.n);
  check_fits(ctx.info(), p.acc_type, p.n);
  impl_->dev = &d;
  impl_->max_n = max_n;
  impl_->plan = make_named_scan_plan(ctx, p, options.variant, options.local_size);
  impl_->any_offset = options.any_offset;
  if (options.any_offset) {
    impl_->in_copy = ctx.zeroed_buffer(p.n * dtype_size(type));
    impl_->out_copy = ctx.zeroed_buffer(p.n * p.acc_bytes());
    if (p.segmented) impl_->flags_copy = ctx.zeroed_buffer(p.n);
  }
}
Scan::~Scan() = default;
Scan::Scan(Scan&&) noexcept = default;
Scan& Scan::operator=(Scan&&) noexcept = default;

Op Scan::op() const { return impl_->p.op; }
DType Scan::type() const { return impl_->p.type; }
DType Scan::result_type() const { return impl_->p.acc_type; }
std::size_t Scan::max_n() const { return impl_->max_n; }
std::string Scan::plan() const { return impl_->plan->policy().str(); }

cl::Event Scan::Impl::enqueue(const cl::Buffer& in, std::size_t first, std::size_t n,
                              const cl::Buffer* flags, const cl::Buffer& out, std::size_t out_first,
                              const std::vector<cl::Event>& wait, bool no_event) {
  Context& ctx = dev->ctx;
  check_plan_n(n, max_n, "a Scan");
  check_buffer(ctx, in, first, n, p.type, "input");
  check_buffer(ctx, out, out_first, n, p.acc_type, "output",
               " (a " + op_name(p.op) + " scan of " + dtype_name(p.type) + " writes " +
                   dtype_name(p.acc_type) + ")",
               acc_hint(p.op, p.type, ""));
  if (flags) check_result_buffer(ctx, *flags, first, n, "flags (one byte per element)");
  // Each range where it lies (a sub-buffer) at a multiple of the base alignment, else through
  // the plan's copy of it.
  const std::size_t in_at = first * dtype_size(p.type), out_at = out_first * p.acc_bytes();
  const std::size_t align = ctx.base_align();
  const bool copy_in = in_at % align != 0, copy_flags = flags && first % align != 0,
             copy_out = out_at % align != 0;
  if (n && (copy_in || copy_flags || copy_out) && !any_offset)
    throw Error(Errc::kUsage,
                std::string("a Scan reads and writes ranges only where they start at a multiple "
                            "of ") +
                    std::to_string(align) + " bytes (the device's base alignment), not " +
                    (copy_out && !copy_in && !copy_flags
                         ? "the output at element " + std::to_string(out_first)
                         : "the input at element " + std::to_string(first)) +
                    ": make the plan with PlanOptions::any_offset, which copies such ranges");
  cl::Buffer x, f, y;
  if (n) {  // views first, so a runtime's refusal throws before anything is enqueued
    x = copy_in ? in_copy : ctx.view(in, in_at, n * dtype_size(p.type));
    f = !flags ? in : copy_flags ? flags_copy : ctx.view(*flags, first, n);
    y = copy_out ? out_copy : ctx.view(out, out_at, n * p.acc_bytes());
  }
  const std::vector<cl::Event> gated = gate(ctx, dev->marker_queue(), wait);
  std::optional<Context::EventsOff> off;
  if (no_event && dev->use == QueueUse::kProgram) off.emplace(ctx);
  return enqueue_gated(ctx, gated, [&](std::vector<cl::Event>& events) {
    if (!n) return;
    if (copy_in) enqueue_copy(ctx, in, in_at, x, 0, n * dtype_size(p.type), events);
    if (copy_flags) enqueue_copy(ctx, *flags, first, f, 0, n, events);
    plan->enqueue(x, f, y, 0, n, nullptr, events);
    if (copy_out) enqueue_copy(ctx, y, 0, out, out_at, n * p.acc_bytes(), events);
  });
}

cl::Event Scan::enqueue(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                        const std::vector<cl::Event>& wait) {
  return enqueue(in, 0, n, out, 0, wait);
}

cl::Event Scan::enqueue(const cl::Buffer& in, std::size_t first, std::size_t n,
                        const cl::Buffer& out, std::size_t out_first,
                        const std::vector<cl::Event>& wait) {
  if (impl_->p.segmented)
    throw Error(Errc::kUsage, "a segmented Scan takes its flags: call enqueue_segmented()");
  return impl_->enqueue(in, first, n, nullptr, out, out_first, wait);
}

void Scan::enqueue(const cl::Buffer& in, std::size_t first, std::size_t n, const cl::Buffer& out,
                   std::size_t out_first, const std::vector<cl::Event>& wait, cl::Event* event) {
  if (impl_->p.segmented)
    throw Error(Errc::kUsage, "a segmented Scan takes its flags: call enqueue_segmented()");
  cl::Event done = impl_->enqueue(in, first, n, nullptr, out, out_first, wait, event == nullptr);
  if (event) *event = std::move(done);
}

cl::Event Scan::enqueue_segmented(const cl::Buffer& in, std::size_t n, const cl::Buffer& flags,
                                  const cl::Buffer& out, const std::vector<cl::Event>& wait) {
  return enqueue_segmented(in, 0, n, flags, out, 0, wait);
}

cl::Event Scan::enqueue_segmented(const cl::Buffer& in, std::size_t first, std::size_t n,
                                  const cl::Buffer& flags, const cl::Buffer& out,
                                  std::size_t out_first, const std::vector<cl::Event>& wait) {
  if (!impl_->p.segmented)
    throw Error(Errc::kUsage,
                "a Scan made without PlanOptions::segmented takes no flags: call enqueue()");
  return impl_->enqueue(in, first, n, &flags, out, out_first, wait);
}

Predicate Predicate::where(const std::string& expression) {
  Predicate p;
  p.expr = expression;
  return p;
}

struct Compaction::Impl {
  Device::Impl* dev;
  Mode mode;
  std::unique_ptr<Compactor> compactor;
};

Compaction::Compaction(Device& device, DType type, std::size_t max_n, const Predicate& predicate,
                       Mode mode, const PlanOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Device::Impl& d = *device.impl_;
  check_fits(d.ctx.info(), type, max_n);
  CompactWhere w;
  w.cmp = static_cast<CompareOp>(predicate.cmp);
  w.value = predicate.value;
  w.expr = predicate.expr;
  w.label = "Predicate::expr";
  impl_->dev = &d;
  impl_->mode = mode;
  impl_->compactor = std::make_unique<Compactor>(d.ctx, type, max_n, w, mode == Mode::kPartition,
                                                 options.local_size);
}
Compaction::~Compaction() = default;
Compaction::Compaction(Compaction&&) noexcept = default;
Compaction& Compaction::operator=(Compaction&&) noexcept = default;

DType Compaction::type() const { return impl_->compactor->type(); }
std::size_t Compaction::max_n() const { return impl_->compactor->max_n(); }
Compaction::Mode Compaction::mode() const { return impl_->mode; }
std::string Compaction::plan() const { return impl_->compactor->scan().policy().str(); }

cl::Event Compaction::enqueue(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                              const cl::Buffer& count, std::size_t count_offset,
                              const std::vector<cl::Event>& wait) {
  Context& ctx = impl_->dev->ctx;
  Compactor& c = *impl_->compactor;
  check_plan_n(n, c.max_n(), "a Compaction");
  check_buffer(ctx, in, 0, n, c.type(), "input");
  check_buffer(ctx, out, 0, n, c.type(), "output");
  check_result_buffer(ctx, count, count_offset, 8, "count");
  if (n && in() == out()) throw Error(Errc::kUsage, "a compaction's output may not be its input");
  const std::vector<cl::Event> gated = gate(ctx, impl_->dev->marker_queue(), wait);
  return enqueue_gated(ctx, gated, [&](std::vector<cl::Event>& events) {
    c.enqueue(in, n, out, count, count_offset, events);
  });
}

static_assert(static_cast<int>(Cmp::kLess) == static_cast<int>(CompareOp::kLess) &&
                  static_cast<int>(Cmp::kNotEqual) == static_cast<int>(CompareOp::kNotEqual),
              "Cmp and CompareOp list the comparisons in one order");

}  // namespace clreduce
