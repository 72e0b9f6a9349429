// runner.cpp: timing with profiling events (kernel time) and the host clock (wall time).
#include "run/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "clreduce/error.hpp"
#include "run/omp_reduce.hpp"
#include "verify/exact_sum.hpp"

namespace clreduce {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// The depth verify() needs: a sum's error follows the longest chain of additions (`chain`), but
// a product's relative error grows with every one of its n - 1 multiplications, whatever the
// order, so a tree is no tighter than the loop.
double events_ms(std::vector<cl::Event>& events) {
  double ms = 0.0;
  for (auto& e : events)
    ms += static_cast<double>(e.getProfilingInfo<CL_PROFILING_COMMAND_END>() -
                              e.getProfilingInfo<CL_PROFILING_COMMAND_START>()) * 1e-6;
  return ms;
}

void set_timings(RunRecord& rec, const std::vector<double>& kernel_ms,
                 const std::vector<double>& wall_ms) {
  rec.kernel_ms = median(kernel_ms);
  rec.kernel_ms_min = *std::min_element(kernel_ms.begin(), kernel_ms.end());
  rec.kernel_ms_max = *std::max_element(kernel_ms.begin(), kernel_ms.end());
  rec.wall_ms = median(wall_ms);
}

static std::uint64_t error_depth(const ReduceProblem& p, std::uint64_t chain) {
  return p.op == Op::kProd ? p.n : chain;
}

static double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

void check_fits(const DeviceInfo& d, DType t, std::size_t n) {
  if (n > d.max_alloc / dtype_size(t))
    throw Error(Errc::kUnsupported, std::to_string(n) + " elements of " + dtype_name(t) +
                                      " exceed " + d.name + "'s largest allocation (" +
                                      std::to_string(d.max_alloc) + " bytes)");
}

ReduceSession::ReduceSession(Context& ctx, const HostArray& data, Op op, RunConfig cfg)
    : ctx_(ctx), data_(data), cfg_(cfg) {
  problem_.op = op;
  problem_.type = data.type;
  problem_.n = data.n;
  problem_.acc_type = resolve_acc(op, data.type, cfg.acc);
  cfg_.repeat = std::max(cfg_.repeat, 1);
  cfg_.warmup = std::max(cfg_.warmup, 0);
  const DeviceInfo& d = ctx.info();
  if ((data.type == DType::kDouble || problem_.acc() == DType::kDouble) && !d.fp64)
    throw Error(Errc::kUnsupported, d.name + " has no double precision (cl_khr_fp64); try float");
  check_fits(d, data.type, data.n);
  expected_ = reference_reduce(data, op, problem_.acc_type);  // throws for n = 0 without identity
  abs_sum_ = abs_sum(data);
  std::vector<double> t;
  for (int r = 0; r < cfg_.repeat; ++r) {
    const double t0 = now_ms();
    const Value v = sequential_reduce(data, op, problem_.acc_type);
    t.push_back(now_ms() - t0);
    if (r == 0 && !is_float(v.type) && !(v.i == expected_.i && v.u == expected_.u))
      throw Error(Errc::kInternal, "internal: sequential loop disagrees with the reference");
  }
  seq_ms_ = median(t);
}

RunRecord ReduceSession::base_record(const std::string& name) const {
  RunRecord rec;
  rec.variant = name;
  rec.op = problem_.op;
  rec.type = problem_.type;
  rec.acc = problem_.acc_type;
  rec.n = problem_.n;
  rec.device = ctx_.info().name;
  rec.expected = expected_;
  rec.seq_ms = seq_ms_;
  return rec;
}

RunRecord ReduceSession::run(ReduceVariant& v) {
  RunRecord rec = base_record(v.name());
  rec.skip_reason = v.unsupported(ctx_, problem_);
  if (!rec.skip_reason.empty()) {
    rec.skipped = true;
    return rec;
  }
  if (problem_.n == 0) {  // sum and prod: the identity, with no launch
    rec.result = identity_value(problem_.op, problem_.acc_type);
  } else {
    rec.policy = v.policy(ctx_, problem_, cfg_.local_size);
    cl::Buffer in = ctx_.scratch("input", data_.bytes.size());
    cl::Buffer out = ctx_.scratch("result", 16);
    std::vector<unsigned char> result(16, 0);
    std::vector<double> kernel_ms, wall_ms;
    for (int r = 0; r < cfg_.warmup + cfg_.repeat; ++r) {
      // Pre-fill the result with a sentinel so an unwritten result cannot pass.
      std::fill(result.begin(), result.end(), 0xA5);
      ctx_.queue().enqueueWriteBuffer(out, CL_TRUE, 0, 16, result.data());
      std::vector<cl::Event> events;
      const double t0 = now_ms();
      ctx_.queue().enqueueWriteBuffer(in, CL_FALSE, 0, data_.bytes.size(), data_.bytes.data());
      v.enqueue(ctx_, problem_, rec.policy, in, out, events);
      ctx_.queue().enqueueReadBuffer(out, CL_TRUE, 0, problem_.acc_bytes(), result.data());
      const double t1 = now_ms();
      const double k = events_ms(events);
      rec.launches = events.size();
      if (r >= cfg_.warmup) {
        kernel_ms.push_back(k);
        wall_ms.push_back(t1 - t0);
      }
    }
    set_timings(rec, kernel_ms, wall_ms);
    rec.result = Value::from_bytes(problem_.acc(), result.data());
    if (is_arg_op(problem_.op)) {
      std::int64_t idx;
      std::memcpy(&idx, result.data() + 8, 8);
      rec.result.index = idx;
    }
  }
  finish(rec, problem_.n ? v.depth(problem_, rec.policy) : 0);
  return rec;
}

RunRecord ReduceSession::run_omp() {
  RunRecord rec = base_record("omp");
  rec.kind = "peer";
  const OmpResult r = omp_reduce(data_, problem_.op, problem_.acc_type, cfg_.warmup, cfg_.repeat);
  rec.result = r.value;
  rec.kernel_ms = rec.wall_ms = r.timing.ms_median;
  rec.kernel_ms_min = r.timing.ms_min;
  rec.kernel_ms_max = r.timing.ms_max;
  rec.policy.path = "openmp threads=" + std::to_string(r.timing.threads);
  finish(rec, r.depth);
  return rec;
}

void ReduceSession::finish(RunRecord& rec, std::uint64_t chain) const {
  const std::uint64_t depth = problem_.n ? error_depth(problem_, chain) : 0;
  const Verdict verdict = rec.policy.correctly_rounded
                              ? verify_bitwise(rec.result, expected_)
                              : verify(rec.result, expected_, problem_.op, depth, abs_sum_);
  rec.verified = verdict.ok;
  rec.verify_note = verdict.why;
  rec.bound = verdict.bound;
  if (problem_.op == Op::kSum && is_float(expected_.type)) {  // expected_ is the exact sum
    const FloatError err = float_error(rec.result, expected_);
    rec.has_error = true;
    rec.err_ulp = err.ulps;
    rec.err_rel = err.rel;
  }
  if (rec.kernel_ms > 0) {
    rec.gbps = static_cast<double>(data_.bytes.size()) / (rec.kernel_ms * 1e6);
    rec.speedup = rec.seq_ms / rec.kernel_ms;
  }
}

RunRecord ReduceSession::run_copy() {
  RunRecord rec = base_record("copy");
  rec.kind = "ceiling";
  const std::size_t bytes = data_.bytes.size();
  if (bytes == 0) {
    rec.skipped = true;
    rec.skip_reason = "nothing to copy (n = 0)";
    return rec;
  }
  try {
    cl::Buffer in = ctx_.scratch("input", bytes);
    cl::Buffer dst = ctx_.scratch("copy", bytes);
    ctx_.queue().enqueueWriteBuffer(in, CL_TRUE, 0, bytes, data_.bytes.data());
    std::vector<double> kernel_ms;
    for (int r = 0; r < cfg_.warmup + cfg_.repeat; ++r) {
      cl::Event e;
      ctx_.queue().enqueueCopyBuffer(in, dst, 0, 0, bytes, nullptr, &e);
      e.wait();
      if (r >= cfg_.warmup)
        kernel_ms.push_back(static_cast<double>(e.getProfilingInfo<CL_PROFILING_COMMAND_END>() -
                                                e.getProfilingInfo<CL_PROFILING_COMMAND_START>()) * 1e-6);
    }
    std::vector<unsigned char> back(bytes);
    ctx_.queue().enqueueReadBuffer(dst, CL_TRUE, 0, bytes, back.data());
    rec.verified = back == data_.bytes;
    if (!rec.verified) rec.verify_note = "the copy differs from the input";
    rec.kernel_ms = rec.wall_ms = median(kernel_ms);
    rec.kernel_ms_min = *std::min_element(kernel_ms.begin(), kernel_ms.end());
    rec.kernel_ms_max = *std::max_element(kernel_ms.begin(), kernel_ms.end());
    rec.launches = 1;
    rec.policy.path = "clEnqueueCopyBuffer";
    if (rec.kernel_ms > 0) rec.gbps = 2.0 * static_cast<double>(bytes) / (rec.kernel_ms * 1e6);
  } catch (const cl::Error& e) {
    rec.skipped = true;
    rec.skip_reason = std::string("copy failed: ") + e.what() + " " + cl_error_name(e.err());
  }
  return rec;
}

}  // namespace clreduce
