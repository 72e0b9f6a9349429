// scan_runner.cpp: timing as for reductions (profiling events for kernel time, the host clock
// for wall time, which here includes reading back all n outputs) and the element-wise check.
#include "run/scan_runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "clreduce/error.hpp"
#include "io/npy.hpp"
#include "run/omp_scan.hpp"

namespace clreduce {

static double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

std::vector<std::uint8_t> segment_flags(std::size_t n, const std::string& file, std::size_t length) {
  std::vector<std::uint8_t> f;
  if (!file.empty()) {
    f = read_npy_flags(file);
    if (f.size() != n)
      throw Error(Errc::kInput, file + ": " + std::to_string(f.size()) +
                                  " segment flags for an array of " + std::to_string(n) + " elements");
  } else if (length > 0) {
    f.assign(n, 0);
    for (std::size_t i = 0; i < n; i += length) f[i] = 1;
  }
  return f;
}

ScanSession::ScanSession(Context& ctx, const HostArray& data, Op op, RunConfig cfg, ScanOptions opts)
    : ctx_(ctx), data_(data), cfg_(cfg), opts_(std::move(opts)) {
  problem_.op = op;
  problem_.type = data.type;
  problem_.n = data.n;
  problem_.exclusive = opts_.exclusive;
  problem_.segmented = opts_.segmented;
  if (!opts_.segmented) opts_.flags.clear();
  cfg_.repeat = std::max(cfg_.repeat, 1);
  cfg_.warmup = std::max(cfg_.warmup, 0);
  if (is_arg_op(op)) {
    refused_ = op_name(op) + " has no prefix scan (scans take sum, prod, min, max)";
    problem_.acc_type = data.type;
    return;
  }
  problem_.acc_type = resolve_acc(op, data.type, cfg.acc);
  if (opts_.segmented && opts_.flags.size() != data.n)
    throw Error(Errc::kInput, std::to_string(opts_.flags.size()) + " segment flags for an array of " +
                                std::to_string(data.n) + " elements");
  const DeviceInfo& d = ctx.info();
  if ((data.type == DType::kDouble || problem_.acc_type == DType::kDouble) && !d.fp64)
    throw Error(Errc::kUnsupported, d.name + " has no double precision (cl_khr_fp64); try float");
  const std::size_t out_bytes = data.n * problem_.acc_bytes();
  if (std::max(data.bytes.size(), out_bytes) > d.max_alloc)
    throw Error(Errc::kUnsupported, "scan output of " + std::to_string(out_bytes) + " bytes exceeds " +
                                      d.name + "'s largest allocation (" + std::to_string(d.max_alloc) +
                                      " bytes)");
  const ScanMode mode{op, problem_.acc_type, opts_.exclusive};
  host_out_.assign(out_bytes, 0);
  std::vector<double> t;
  for (int r = 0; r < cfg_.repeat; ++r) {
    const double t0 = now_ms();
    sequential_scan(data, mode, opts_.flags, host_out_.data());
    t.push_back(now_ms() - t0);
  }
  seq_ms_ = median(t);
  // The loop must pass its own check (depth n: a chain of n operations).
  const ScanVerdict self = verify_scan(data, mode, opts_.flags, data.n, host_out_.data());
  if (!self.ok) throw Error(Errc::kInternal, "internal: the sequential scan disagrees with the reference: " + self.why);
  expected_ = self.expected_last;
}

RunRecord ScanSession::run_omp() {
  RunRecord rec;
  rec.mode = "scan";
  rec.kind = "peer";
  rec.variant = "omp";
  rec.op = problem_.op;
  rec.type = problem_.type;
  rec.acc = problem_.acc_type;
  rec.n = problem_.n;
  rec.exclusive = problem_.exclusive;
  rec.segmented = problem_.segmented;
  rec.device = ctx_.info().name;
  rec.expected = expected_;
  rec.seq_ms = seq_ms_;
  rec.skip_reason = refused_.empty() ? omp_scan_unsupported(problem_.op, problem_.type, problem_.acc_type,
                                                            problem_.exclusive, problem_.segmented)
                                     : refused_;
  if (!rec.skip_reason.empty()) {
    rec.skipped = true;
    return rec;
  }
  std::fill(host_out_.begin(), host_out_.end(), 0xA5);
  const OmpScanResult r = omp_scan(data_, problem_.acc_type, cfg_.warmup, cfg_.repeat, host_out_.data());
  rec.kernel_ms = rec.wall_ms = r.timing.ms_median;
  rec.kernel_ms_min = r.timing.ms_min;
  rec.kernel_ms_max = r.timing.ms_max;
  rec.policy.path = "openmp two-pass threads=" + std::to_string(r.timing.threads);
  const ScanVerdict verdict = verify_scan(data_, ScanMode{problem_.op, problem_.acc_type, problem_.exclusive},
                                          opts_.flags, r.depth, host_out_.data());
  rec.verified = verdict.ok;
  rec.verify_note = verdict.why;
  rec.bound = verdict.bound;
  rec.first_wrong = verdict.first_wrong;
  rec.wrong_count = verdict.wrong;
  if (problem_.n) rec.result = Value::from_bytes(problem_.acc_type, host_out_.data() + host_out_.size() - problem_.acc_bytes());
  if (rec.kernel_ms > 0) {
    rec.gbps = static_cast<double>(data_.bytes.size() + host_out_.size()) / (rec.kernel_ms * 1e6);
    rec.speedup = rec.seq_ms / rec.kernel_ms;
  }
  return rec;
}

RunRecord ScanSession::run(ScanVariant& v, HostArray* output) {
  RunRecord rec;
  rec.mode = "scan";
  rec.variant = v.name();
  rec.op = problem_.op;
  rec.type = problem_.type;
  rec.acc = problem_.acc_type;
  rec.n = problem_.n;
  rec.exclusive = problem_.exclusive;
  rec.segmented = problem_.segmented;
  rec.device = ctx_.info().name;
  rec.expected = expected_;
  rec.seq_ms = seq_ms_;
  rec.skip_reason = refused_.empty() ? v.unsupported(ctx_, problem_) : refused_;
  if (!rec.skip_reason.empty()) {
    rec.skipped = true;
    return rec;
  }
  const std::size_t n = problem_.n;
  const std::size_t out_bytes = n * problem_.acc_bytes();
  const std::size_t flag_bytes = problem_.segmented ? n : 0;
  if (n > 0) {
    rec.policy = v.policy(ctx_, problem_, cfg_.local_size);
    cl::Buffer in = ctx_.scratch("input", data_.bytes.size());
    cl::Buffer flags = ctx_.scratch(problem_.segmented ? "scan.flags" : "scan.noflags", std::max<std::size_t>(flag_bytes, 1));
    cl::Buffer out = ctx_.scratch("scan.output", out_bytes);
    // The sentinel: 0xA5 bytes for integers (far from any generated prefix), NaN for floats.
    const cl_uchar sentinel = is_float(problem_.acc_type) ? 0xFF : 0xA5;
    std::vector<double> kernel_ms, wall_ms;
    for (int r = 0; r < cfg_.warmup + cfg_.repeat; ++r) {
      // A host write, not a fill: Oclgrind would report the kernels' later loads of a filled
      // buffer as uninitialised.
      std::fill(host_out_.begin(), host_out_.end(), sentinel);
      ctx_.queue().enqueueWriteBuffer(out, CL_TRUE, 0, out_bytes, host_out_.data());
      std::vector<cl::Event> events;
      const double t0 = now_ms();
      ctx_.queue().enqueueWriteBuffer(in, CL_FALSE, 0, data_.bytes.size(), data_.bytes.data());
      if (flag_bytes) ctx_.queue().enqueueWriteBuffer(flags, CL_FALSE, 0, flag_bytes, opts_.flags.data());
      v.enqueue(ctx_, problem_, rec.policy, in, flags, out, events);
      ctx_.queue().enqueueReadBuffer(out, CL_TRUE, 0, out_bytes, host_out_.data());
      const double t1 = now_ms();
      const double k = events_ms(events);
      rec.launches = events.size();
      if (r >= cfg_.warmup) {
        kernel_ms.push_back(k);
        wall_ms.push_back(t1 - t0);
      }
    }
    if (const std::string note = v.run_note(); !note.empty()) rec.policy.path += "; " + note;
    set_timings(rec, kernel_ms, wall_ms);
    rec.result = Value::from_bytes(problem_.acc_type, host_out_.data() + out_bytes - problem_.acc_bytes());
  }
  const ScanMode mode{problem_.op, problem_.acc_type, problem_.exclusive};
  const std::uint64_t depth = n ? v.depth(problem_, rec.policy) : 0;
  const ScanVerdict verdict = verify_scan(data_, mode, opts_.flags, depth, host_out_.data());
  rec.verified = verdict.ok;
  rec.verify_note = verdict.why;
  rec.bound = verdict.bound;
  rec.first_wrong = verdict.first_wrong;
  rec.wrong_count = verdict.wrong;
  if (rec.kernel_ms > 0) {
    rec.gbps = static_cast<double>(data_.bytes.size() + out_bytes + flag_bytes) / (rec.kernel_ms * 1e6);
    rec.speedup = rec.seq_ms / rec.kernel_ms;
  }
  if (output) {
    output->type = problem_.acc_type;
    output->n = n;
    output->bytes = host_out_;
  }
  return rec;
}

}  // namespace clreduce
