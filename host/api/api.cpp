// api.cpp: the public API (include/clreduce/clreduce.hpp) over the internals. Every call into
// the variant interfaces (unsupported, policy, enqueue, depth, run_note), the references and the
// device context is in this one file, so a change of those interfaces is adapted here alone.
#include "clreduce/clreduce.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include "core/checked.hpp"
#include "io/npy.hpp"
#include "reduce/variant.hpp"
#include "run/runner.hpp"
#include "runtime/context.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_dir.hpp"
#include "runtime/transfer.hpp"
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

// A user's buffer must belong to this device's context and hold n elements of type t. `why`
// says where t comes from and `hint` what else the caller may change, for the message.
void check_buffer(Context& ctx, const cl::Buffer& b, std::size_t n, DType t, const char* what,
                  const std::string& why = "", const std::string& hint = "") {
  if (b() == nullptr) throw Error(Errc::kUsage, std::string(what) + " buffer is empty (no cl_mem)");
  if (b.getInfo<CL_MEM_CONTEXT>()() != ctx.context()())
    throw Error(Errc::kUsage,
                std::string(what) +
                    " buffer belongs to another cl::Context: create it in Device::context()");
  const std::size_t size = b.getInfo<CL_MEM_SIZE>(), elem = dtype_size(t);
  if (size / elem < n)
    throw Error(Errc::kUsage, std::string(what) + " buffer holds " + std::to_string(size) +
                                  " bytes, " + std::to_string(size / elem) + " " + dtype_name(t) +
                                  " elements, fewer than n = " + std::to_string(n) + why +
                                  ": pass a buffer of " + std::to_string(n * elem) +
                                  " bytes or a smaller n" + hint);
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

HostArray read_back(Context& ctx, DType type, const cl::Buffer& b, std::size_t n) {
  HostArray a;
  a.type = type;
  a.n = n;
  a.bytes.resize(checked_bytes(n, dtype_size(type), "reading a buffer back"));
  enqueue_read(ctx.queue(), b, 0, a.bytes.size(), a.bytes.data(), ctx.tuning().transfer_piece);
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

// One reduction of `in` (a buffer of ctx's, or the upload target of `host` when host is set).
Result run_reduce(Context& ctx, Op op, DType type, const cl::Buffer* user_in, const void* host,
                  std::size_t n, const Options& o, bool check) {
  ReduceVariant& v = reduce_variant(o.variant);
  ReduceProblem p;
  p.op = op;
  p.type = type;
  p.n = n;
  p.acc_type = resolve_acc(op, type, o.acc);
  const DeviceInfo& d = ctx.info();
  check_fp64(d, type, p.acc_type);
  check_fits(d, type, n);
  if (n == 0 && !has_identity(op))
    throw Error(Errc::kUsage, op_name(op) + " of an empty array has no identity (n = 0)");
  const std::size_t bytes = checked_bytes(n, dtype_size(type), "the input");
  if (user_in) check_buffer(ctx, *user_in, n, type, "input");
  refuse_unsupported(v.name(), d, v.unsupported(ctx, p));

  Result r = start_result(v.name(), op, type, p.acc_type, n);
  const std::size_t builds = ctx.programs_built();
  std::unique_ptr<ReducePlan> plan;
  if (n == 0) {  // sum and prod: the identity, with no launch
    r.value = identity_value(op, p.acc_type);
  } else {
    plan = v.plan(ctx, p, o.local_size);
    const cl::Buffer in = user_in ? *user_in : ctx.scratch("api.input", bytes);
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
          plan->enqueue(in, out, events);
          enqueue_read(ctx.queue(), out, 0, p.acc_bytes(), result, piece);
          wait(ctx, bytes, v.name() + " " + op_name(op) + " of " + std::to_string(n) + " elements");
        });
    r.value = Value::from_bytes(p.acc_type, result);
    if (is_arg_op(op)) std::memcpy(&r.value.index, result + 8, 8);
    r.plan = plan->policy().str();
  }
  r.builds = ctx.programs_built() - builds;
  if (check) {
    const HostArray a = host ? host_copy(type, host, n) : read_back(ctx, type, *user_in, n);
    r.expected = reference_reduce(a, op, p.acc_type);
    // A float product's error grows with each of its n - 1 multiplications whatever the order;
    // a sum's with the variant's tree (its chains' partial sums, or its depth).
    const ErrorBudget budget =
        n == 0            ? ErrorBudget{}
        : op == Op::kProd ? ErrorBudget{n, 0.0L}
                          : sum_budget(plan->sum_model(n), a.type, a.bytes.data(), n).budget;
    const Verdict verdict = plan && plan->policy().correctly_rounded
                                ? verify_bitwise(r.value, r.expected)
                                : verify(r.value, r.expected, op, budget, float_stats(a, op));
    set_verdict(r, verdict.ok, verdict.why);
  }
  return r;
}

// One scan of `in` into `out` (buffers of ctx's), or of host memory `host_in` into `host_out`.
Result run_scan(Context& ctx, Op op, DType type, const cl::Buffer* user_in, const void* host_in,
                std::size_t n, const cl::Buffer* user_out, void* host_out, const Options& o,
                bool check) {
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
  check_fits(d, type, n);
  check_fits(d, p.acc_type, n);
  const std::size_t in_bytes = checked_bytes(n, dtype_size(type), "the input"),
                    out_bytes = checked_bytes(n, p.acc_bytes(), "the scan's output");
  if (user_in) check_buffer(ctx, *user_in, n, type, "input");
  if (user_out)
    check_buffer(ctx, *user_out, n, p.acc_type, "output",
                 " (a " + op_name(op) + " scan of " + dtype_name(type) + " writes " +
                     dtype_name(p.acc_type) + ")",
                 acc_hint(op, type, o.acc));
  refuse_unsupported(v.name(), d, v.unsupported(ctx, p));

  Result r = start_result(v.name(), op, type, p.acc_type, n);
  const std::size_t builds = ctx.programs_built();
  std::unique_ptr<ScanPlan> plan;
  if (n > 0) {
    plan = v.plan(ctx, p, o.local_size);
    const cl::Buffer in = user_in ? *user_in : ctx.scratch("api.input", in_bytes);
    const cl::Buffer out = user_out ? *user_out : ctx.scratch("api.scan.output", out_bytes);
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
          plan->enqueue(in, flags, out, events);
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
    if (const std::string note = plan->run_note(); !note.empty()) r.plan += "; " + note;
  }
  r.builds = ctx.programs_built() - builds;
  if (check) {
    const HostArray a = host_in ? host_copy(type, host_in, n) : read_back(ctx, type, *user_in, n);
    HostArray got;
    if (!host_out) got = read_back(ctx, p.acc_type, *user_out, n);
    const ScanMode mode{op, p.acc_type, p.exclusive};
    const std::uint64_t depth = n ? plan->depth() : 0;
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

struct Device::Impl {
  Impl(const DeviceInfo& info, const std::string& kernel_dir, const Tuning& tuning)
      : summary(summarize(info)),
        ctx(info, find_kernel_dir(kernel_dir, false, "kernel_dir"), false, tuning) {}
  // On the program's own context; its queue is waited for before each call.
  Impl(const DeviceInfo& info, const cl::Context& context, const cl::CommandQueue& queue,
       const std::string& kernel_dir, const Tuning& tuning)
      : summary(summarize(info)),
        ctx(info, context, find_kernel_dir(kernel_dir, false, "kernel_dir"), false, tuning),
        program_queue(queue) {}

  // Before a call on a program's own queue: everything enqueued there so far has completed.
  Context& ready() {
    if (program_queue)
      finish(*program_queue, 0, "the program's commands enqueued before a clreduce call");
    return ctx;
  }

  DeviceSummary summary;
  Context ctx;
  std::optional<cl::CommandQueue> program_queue;
};

namespace {

// The program's own objects must belong together: the device in the context, the queue on both.
DeviceInfo check_program_objects(const cl::Context& context, const cl::Device& device,
                                 const cl::CommandQueue& queue) {
  if (context() == nullptr || device() == nullptr || queue() == nullptr)
    throw Error(Errc::kUsage, "Device(context, device, queue): an empty OpenCL object");
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
    : impl_(std::make_unique<Impl>(check_program_objects(context, device, queue), context, queue,
                                   kernel_dir, tuning)) {}
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
Tuning& Device::tuning() { return impl_->ctx.tuning(); }

Result Device::reduce(Op op, DType type, const void* data, std::size_t n, const Options& options) {
  return run_reduce(impl_->ready(), op, type, nullptr, data, n, options, options.verify);
}

Result Device::reduce(Op op, DType type, const cl::Buffer& data, std::size_t n,
                      const Options& options) {
  return run_reduce(impl_->ready(), op, type, &data, nullptr, n, options, options.verify);
}

Result Device::scan(Op op, DType type, const void* in, std::size_t n, DType out_type, void* out,
                    const Options& options) {
  const DType acc = resolve_acc(op, type, options.acc);
  if (out_type != acc && !is_arg_op(op))
    throw Error(Errc::kUsage, op_name(op) + " scan of " + dtype_name(type) + " writes " +
                                  dtype_name(acc) + ", not " + dtype_name(out_type) +
                                  ": pass an output of " + dtype_name(acc) +
                                  acc_hint(op, type, options.acc));
  return run_scan(impl_->ready(), op, type, nullptr, in, n, nullptr, out, options, options.verify);
}

Result Device::scan(Op op, DType type, const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                    const Options& options) {
  return run_scan(impl_->ready(), op, type, &in, nullptr, n, &out, nullptr, options,
                  options.verify);
}

}  // namespace clreduce
