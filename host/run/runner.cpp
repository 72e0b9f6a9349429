// runner.cpp: the harness's one timed loop (profiling events for kernel time, the host clock for
// wall time), its verify-and-rate step, and the reduction session: plans, the OpenMP peer and
// the copy ceiling, all through them.
#include "run/runner.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>

#include "clreduce/error.hpp"
#include "run/fold.hpp"
#include "run/omp_reduce.hpp"
#include "run/shares.hpp"
#include "runtime/transfer.hpp"
#include "verify/exact_sum.hpp"

namespace clreduce {

void set_timings(RunRecord& rec, const std::vector<Sample>& samples) {
  std::vector<double> kernel, wall;
  for (const Sample& s : samples) {
    kernel.push_back(s.kernel_ms);
    wall.push_back(s.wall_ms);
  }
  const Spread k = spread(kernel);
  rec.kernel_ms = k.median;
  rec.kernel_ms_min = k.min;
  rec.kernel_ms_max = k.max;
  rec.wall_ms = median(wall);
  rec.launches = samples.back().launches;
}

RunRecord peer_row(const RunRecord& rec) {
  RunRecord omp;
  omp.variant = "omp";
  omp.kind = "peer";
  omp.op = rec.op;
  omp.op_text = rec.op_text;
  omp.minmax = rec.minmax;
  omp.type = rec.type;
  omp.acc = rec.acc;
  omp.n = rec.n;
  omp.device = rec.device;
  omp.seed = rec.seed;
  omp.warmup = rec.warmup;
  omp.repeat = rec.repeat;
  omp.input = rec.input;
  return omp;
}

void set_peer_timing(RunRecord& rec, const PeerTiming& t) {
  rec.kernel_ms = rec.wall_ms = t.ms_median;
  rec.kernel_ms_min = t.ms_min;
  rec.kernel_ms_max = t.ms_max;
  rec.policy.path = "openmp threads=" + std::to_string(t.threads);
}

void add_vs_omp(RunRecord& r, const RunRecord& peer) {
  if (peer.skipped || !peer.verified || peer.kernel_ms <= 0 || r.skipped || r.kernel_ms <= 0 ||
      r.n == 0)
    return;
  r.ratios.emplace_back("vs_omp", peer.noisy || r.noisy ? std::numeric_limits<double>::quiet_NaN()
                                                        : peer.kernel_ms / r.kernel_ms);
}

Session::Session(Context& ctx, const HostArray& data, RunConfig cfg)
    : ctx_(ctx), data_(data), cfg_(std::move(cfg)) {
  cfg_.repeat = std::max<std::uint64_t>(cfg_.repeat, 1);
}

void Session::check_fp64(DType acc) const {
  const DeviceInfo& d = ctx_.info();
  if ((data_.type == DType::kDouble || acc == DType::kDouble) && !d.fp64)
    throw Error(Errc::kUnsupported, d.name + " has no double precision (cl_khr_fp64); try float");
}

RunRecord Session::record(const std::string& variant, Op op, DType acc) const {
  RunRecord rec;
  rec.variant = variant;
  rec.op = op;
  rec.type = data_.type;
  rec.acc = acc;
  rec.n = data_.n;
  rec.device = ctx_.info().name;
  rec.driver = ctx_.info().driver_version;
  rec.platform_version = ctx_.info().platform_version;
  rec.seq_ms = seq_ms_;
  rec.seq_ms_min = seq_ms_min_;
  rec.seq_ms_max = seq_ms_max_;
  rec.seq_runs = seq_runs_;
  return rec;
}

void Session::time_sequential(const std::function<void()>& fn) {
  std::vector<double> ms;
  const bool once = data_.bytes.size() > kSeqOnceBytes;
  seq_runs_ = once ? 1 : cfg_.repeat;
  for (const Sample& s :
       repeat_runs(once ? 0 : cfg_.warmup, seq_runs_, [&] { return time_call(fn); }))
    ms.push_back(s.wall_ms);
  const Spread t = spread(ms);
  seq_ms_ = t.median;
  seq_ms_min_ = t.min;
  seq_ms_max_ = t.max;
}

TimeLimit Session::timeout_s(double bytes) const { return ctx_.time_limit(bytes); }

void Session::set_layout(RunRecord& rec, const ChunkLayout& layout, double upload_ms) const {
  rec.chunks = layout.chunks;
  rec.layout = layout.str();
  rec.upload_ms = upload_ms;
  const double e2e = upload_ms + rec.wall_ms;
  if (e2e > 0 && !data_.bytes.empty())
    rec.e2e_gbps = static_cast<double>(data_.bytes.size()) / (e2e * 1e6);
}

PartInfo Session::share_info(const Context& ctx, std::uint64_t first, std::uint64_t n,
                             const std::vector<Sample>& samples, double bytes) const {
  PartInfo info;
  info.device = ctx.info().name;
  info.device_index = static_cast<int>(ctx.info().index);
  info.driver = ctx.info().driver_version;
  info.platform_version = ctx.info().platform_version;
  info.first = first;
  info.n = n;
  if (samples.empty()) return info;  // an empty share ran nothing
  std::vector<double> km, wm;
  for (const Sample& x : samples) {
    km.push_back(x.kernel_ms);
    wm.push_back(x.wall_ms);
  }
  info.kernel_ms = median(km);
  info.wall_ms = median(wm);
  if (info.kernel_ms > 0 && bytes > 0) info.gbps = bytes / (info.kernel_ms * 1e6);
  return info;
}

void Session::set_shares(RunRecord& rec, std::vector<PartInfo> parts,
                         const std::vector<Share>& shares) const {
  double slowest = -1.0;
  std::string layout;
  rec.chunks = 0;
  rec.upload_ms = 0.0;
  for (std::size_t d = 0; d < parts.size(); ++d) {
    const PartInfo& p = parts[d];
    rec.chunks += shares[d].layout->chunks;
    rec.upload_ms += shares[d].upload_ms;
    layout += (d ? "; " : "") + std::string("device ") + std::to_string(p.device_index) + ": " +
              std::to_string(p.n) + " (" + shares[d].layout->str() + ")";
    if (p.n > 0 && p.kernel_ms > slowest) {
      slowest = p.kernel_ms;
      rec.slowest = p.device;
    }
  }
  const std::size_t devices = rec.devices ? static_cast<std::size_t>(rec.devices) : parts.size();
  rec.layout =
      std::to_string(devices) + " devices" +
      (devices == parts.size() ? std::string() : ", " + std::to_string(parts.size()) + " pieces") +
      ": " + layout;
  rec.parts = std::move(parts);
  const double e2e = rec.upload_ms + rec.wall_ms;
  if (e2e > 0 && !data_.bytes.empty())
    rec.e2e_gbps = static_cast<double>(data_.bytes.size()) / (e2e * 1e6);
}

std::vector<std::size_t> Session::share_counts(const std::vector<Context*>& ctxs, DType acc,
                                               ElementBytes e) const {
  if (!cfg_.share_weights.empty() && cfg_.share_weights.size() != ctxs.size())
    throw Error(Errc::kUsage, std::to_string(cfg_.share_weights.size()) + " shares for " +
                                  std::to_string(ctxs.size()) + " devices");
  for (const Context* c : ctxs)
    if ((data_.type == DType::kDouble || acc == DType::kDouble) && !c->info().fp64)
      throw Error(Errc::kUnsupported,
                  c->info().name + " has no double precision (cl_khr_fp64); try float");
  return split_shares(
      data_.n,
      cfg_.share_weights.empty() ? std::vector<double>(ctxs.size(), 1.0) : cfg_.share_weights,
      device_share_grain(ctxs, {e.in, e.flags, e.out}));
}

void Session::join_rank_times(RunRecord& rec, std::size_t bytes_per_element,
                              const std::vector<double>& critical) const {
  const std::vector<double> kernel = gather_ranks(rec.kernel_ms);
  const std::vector<double> kernel_min = gather_ranks(rec.kernel_ms_min);
  const std::vector<double> kernel_max = gather_ranks(rec.kernel_ms_max);
  const std::vector<double> wall = gather_ranks(rec.wall_ms);
  const std::vector<double> upload = gather_ranks(rec.upload_ms);
  const std::vector<double> seq = gather_ranks(rec.seq_ms);
  const int ranks = static_cast<int>(kernel.size());
  rec.ranks = ranks;
  rec.n = cfg_.total;
  rec.parts.clear();
  double slowest = -1.0, seq_ms = 0.0, wall_ms = 0.0, upload_ms = 0.0, e2e_ms = 0.0;
  for (int r = 0; r < ranks; ++r) {
    const Slice sl = rank_slice(cfg_.total, r, ranks, cfg_.first_piece);
    const auto at = static_cast<std::size_t>(r);
    PartInfo p;
    p.rank = r;
    p.device = "rank " + std::to_string(r);
    p.first = sl.first;
    p.n = sl.count;
    p.kernel_ms = kernel[at];
    p.wall_ms = wall[at];
    if (p.kernel_ms > 0)
      p.gbps = static_cast<double>(p.n * bytes_per_element) / (p.kernel_ms * 1e6);
    p.verified = rec.verified;
    if (p.kernel_ms > slowest) {
      slowest = p.kernel_ms;
      rec.slowest = p.device;
      rec.kernel_ms_min = kernel_min[at];
      rec.kernel_ms_max = kernel_max[at];
    }
    seq_ms += seq[at];
    wall_ms = std::max(wall_ms, wall[at]);
    upload_ms = std::max(upload_ms, upload[at]);
    e2e_ms = std::max(e2e_ms, upload[at] + wall[at]);
    rec.parts.push_back(p);
  }
  // The slices' loops one after another: their fastest and slowest runs added alike.
  double seq_min = 0.0, seq_max = 0.0;
  for (double x : gather_ranks(rec.seq_ms_min)) seq_min += x;
  for (double x : gather_ranks(rec.seq_ms_max)) seq_max += x;
  rec.seq_ms_min = seq_min;
  rec.seq_ms_max = seq_max;
  // The whole: the slowest rank's kernel time and the slowest rank's wall time (the ranks run at
  // once: the whole is done when the last is), the whole array's bytes, the slices' sequential
  // loops one after another (as one process would run them).
  rec.kernel_ms = slowest;
  if (!critical.empty()) {
    rec.kernel_ms = median(critical);
    rec.kernel_ms_min = *std::min_element(critical.begin(), critical.end());
    rec.kernel_ms_max = *std::max_element(critical.begin(), critical.end());
  }
  rec.wall_ms = wall_ms;
  rec.upload_ms = upload_ms;
  rec.e2e_gbps =
      e2e_ms > 0 ? static_cast<double>(cfg_.total * dtype_size(data_.type)) / (e2e_ms * 1e6) : 0.0;
  rec.seq_ms = seq_ms;
  if (rec.kernel_ms > 0) {
    rec.gbps = static_cast<double>(cfg_.total * bytes_per_element) / (rec.kernel_ms * 1e6);
    rec.speedup = rec.seq_ms / rec.kernel_ms;
  }
}

void Session::time_device(RunRecord& rec, const std::function<void()>& prepare,
                          const std::function<void(std::vector<cl::Event>&)>& body) const {
  set_timings(rec, repeat_runs(cfg_.warmup, cfg_.repeat, [&] {
                prepare();
                std::vector<cl::Event> events;
                const double t0 = now_ms();
                body(events);
                const double t1 = now_ms();
                return Sample{events_ms(events), t1 - t0, events.size()};
              }));
}

void Session::finish(RunRecord& rec, bool ok, const std::string& why, double bound,
                     double bytes_moved) {
  rec.verified = ok;
  rec.verify_note = why;
  rec.bound = bound;
  // With no elements (or no kernel time) there is no rate and no speedup: they stay 0, undefined.
  if (rec.kernel_ms > 0 && rec.n > 0 && bytes_moved > 0) {
    rec.gbps = bytes_moved / (rec.kernel_ms * 1e6);
    if (rec.kind != "ceiling" && rec.seq_ms > 0) rec.speedup = rec.seq_ms / rec.kernel_ms;
  }
}

ReduceSession::ReduceSession(Context& ctx, const HostArray& data, Op op, RunConfig cfg)
    : Session(ctx, data, std::move(cfg)) {
  problem_.op = op;
  problem_.type = data.type;
  problem_.n = data.n;
  problem_.acc_type = resolve_acc(op, data.type, cfg_.acc);
  check_fp64(problem_.acc());
  layout_ = choose_layout(ctx.info(), ctx.tuning(), data.n, ElementBytes{dtype_size(data.type)},
                          HostArrays{data.bytes.data()});
  // A rank's empty slice of a larger array has nothing to check or time.
  const bool empty_slice = data.n == 0 && cfg_.ranks && cfg_.ranks->many() && cfg_.total > 0;
  if (empty_slice) {
    expected_.type = problem_.acc_type;
    return;
  }
  expected_ = reference_reduce(data, op, problem_.acc_type);  // throws for n = 0 without identity
  stats_ = float_stats(data, op);
  bool checked = false;
  time_sequential([&] {
    const Value v = sequential_reduce(data, op, problem_.acc_type);
    if (!checked && !is_float(v.type) && !(v.i == expected_.i && v.u == expected_.u))
      throw Error(Errc::kInternal, "internal: sequential loop disagrees with the reference");
    checked = true;
  });
}

ReduceSession::ReduceSession(const std::vector<Context*>& ctxs, const HostArray& data, Op op,
                             RunConfig cfg)
    : ReduceSession(*ctxs.at(0), data, op, std::move(cfg)) {
  if (ctxs.size() < 2) return;
  const std::vector<std::size_t> counts =
      share_counts(ctxs, problem_.acc(), ElementBytes{dtype_size(data.type), 0, 0});
  std::size_t at = 0;
  for (std::size_t d = 0; d < ctxs.size(); ++d) {
    Part p;
    p.ctx = ctxs[d];
    const DeviceInfo& info = p.ctx->info();
    p.view = view_of(data, at, counts[d]);
    p.first = at;
    p.layout = choose_layout(info, p.ctx->tuning(), counts[d], ElementBytes{dtype_size(data.type)},
                             HostArrays{p.view.bytes.data()});
    if (counts[d]) {
      p.expected = reference_reduce(p.view, op, problem_.acc_type);
      p.stats = float_stats(p.view, op);
    }
    at += counts[d];
    parts_.push_back(std::move(p));
  }
}

RunRecord ReduceSession::run_parts(const ReduceVariant& v, RunRecord rec) {
  const std::size_t k = parts_.size();
  std::vector<std::unique_ptr<ReducePlan>> plans(k);
  const std::string what_all = v.name() + " " + op_name(problem_.op) + " of " +
                               std::to_string(problem_.n) + " " + dtype_name(problem_.type) +
                               " elements";
  for (std::size_t d = 0; d < k; ++d) {
    Part& part = parts_[d];
    if (part.view.n == 0) continue;
    ReduceProblem pp = problem_;
    pp.n = part.layout.chunks > 1 ? part.layout.chunk : part.view.n;
    std::string why = v.unsupported(*part.ctx, pp);
    if (why.empty()) {
      plans[d] = v.plan(*part.ctx, pp, cfg_.local_size);
      why = ReduceFold::cannot_fold(*plans[d]);
    }
    if (!why.empty()) {
      rec.skipped = true;
      rec.skip_reason = part.ctx->info().name + ": " + why;
      return rec;
    }
    if (rec.policy.path.empty()) rec.policy = plans[d]->policy();
    if (!part.array) {
      part.array = std::make_unique<ChunkedArray>(*part.ctx, part.layout, part.view, nullptr,
                                                  nullptr, ElementBytes{dtype_size(data_.type)});
      part.upload_ms = part.array->upload("uploading " + std::to_string(part.view.n) +
                                          " elements to " + part.ctx->info().name);
    }
  }
  std::vector<std::vector<Sample>> part_samples(k);
  std::vector<double> combine;
  std::vector<Value> values(k);
  // Correctly rounded plans (exact): each share's chunks' exact states, folded with the others'
  // and rounded once; other plans fold the shares' results.
  std::size_t exact_bytes = 0;
  for (std::size_t d = 0; d < k; ++d)
    if (plans[d] && plans[d]->policy().correctly_rounded) exact_bytes = plans[d]->out_bytes();
  const bool exact = exact_bytes > 0;
  std::vector<std::optional<ReduceFold>> part_folds(k);
  std::uint64_t run_index = 0;
  const std::vector<Sample> whole = repeat_runs(cfg_.warmup, cfg_.repeat, [&] {
    for (std::size_t d = 0; d < k; ++d)
      if (plans[d]) {
        parts_[d].array->prepare_reduce(plans[d]->out_bytes(),
                                        what_all + " (on " + parts_[d].ctx->info().name + ")");
        if (exact) part_folds[d].emplace(problem_, exact_bytes, true);
      }
    std::vector<Sample> s(k);
    const double t0 = now_ms();
    run_parallel(
        k,
        [&](std::size_t d) {
          if (!plans[d]) return;
          std::vector<cl::Event> events;
          const double a = now_ms();
          values[d] = parts_[d].array->reduce(*plans[d], events,
                                              what_all + " (on " + parts_[d].ctx->info().name + ")",
                                              exact ? &*part_folds[d] : nullptr);
          s[d] = Sample{events_ms(events), now_ms() - a, events.size()};
        },
        ctx_.tuning().share_threads == "on");
    const double t1 = now_ms();
    ReduceFold fold(problem_, exact_bytes, exact);
    for (std::size_t d = 0; d < k; ++d) {
      if (!plans[d]) continue;
      if (exact) {
        fold.add(*part_folds[d], parts_[d].first);
        continue;
      }
      Value piece = values[d];
      if (is_arg_op(problem_.op)) piece.index += static_cast<std::int64_t>(parts_[d].first);
      fold.add(piece);
    }
    rec.result = fold.result();
    const double t2 = now_ms();
    Sample all{0.0, t2 - t0, 0};
    for (const Sample& x : s) {
      all.kernel_ms = std::max(all.kernel_ms, x.kernel_ms);
      all.launches += x.launches;
    }
    if (run_index++ >= cfg_.warmup) {
      for (std::size_t d = 0; d < k; ++d) part_samples[d].push_back(s[d]);
      combine.push_back(t2 - t1);
    }
    return all;
  });
  set_timings(rec, whole);
  rec.combine_ms = median(combine);
  std::vector<PartInfo> infos;
  std::vector<Share> shares;
  std::vector<SumPiece> budgets;  // the shares' float budgets, folded in share order
  for (std::size_t d = 0; d < k; ++d) {
    const Part& part = parts_[d];
    PartInfo info = share_info(*part.ctx, part.first, part.view.n, part_samples[d],
                               static_cast<double>(part.view.bytes.size()));
    info.verified = true;  // an empty share: nothing to check
    if (plans[d]) {
      Value piece = values[d];
      if (is_arg_op(problem_.op)) piece.index += static_cast<std::int64_t>(part.first);
      info.result = piece;
      Value want = part.expected;
      if (is_arg_op(problem_.op)) want.index += static_cast<std::int64_t>(part.first);
      budgets.push_back(budget_of(*plans[d], part.view, part.layout));
      info.verified = plans[d]->policy().correctly_rounded
                          ? verify_bitwise(piece, want).ok
                          : verify(piece, want, problem_.op, budgets.back().budget, part.stats).ok;
    }
    infos.push_back(info);
    shares.push_back(Share{&part.layout, part.upload_ms});
  }
  set_shares(rec, std::move(infos), shares);
  finish_reduce(rec, fold_budgets(budgets).budget);
  return rec;
}

ReduceProblem ReduceSession::plan_problem() const {
  ReduceProblem p = problem_;
  if (layout_.chunks > 1) p.n = layout_.chunk;
  return p;
}

ChunkedArray& ReduceSession::device_array() {
  if (!array_) {
    array_ = std::make_unique<ChunkedArray>(ctx_, layout_, data_, nullptr, nullptr,
                                            ElementBytes{dtype_size(data_.type)});
    if (cfg_.progress && layout_.chunks > 1)
      array_->on_chunk([this](std::size_t done, std::size_t total) {
        cfg_.progress("chunk " + std::to_string(done) + "/" + std::to_string(total));
      });
    upload_ms_ = array_->upload("uploading " + std::to_string(data_.n) + " elements");
  }
  return *array_;
}

RunRecord Session::guarded(const std::string& what, const std::vector<Context*>& others,
                           const std::function<RunRecord()>& f) {
  std::vector<Context*> ctxs{&ctx_};
  for (Context* c : others)
    if (std::find(ctxs.begin(), ctxs.end(), c) == ctxs.end()) ctxs.push_back(c);
  std::vector<std::unique_ptr<Context::Doing>> doing;  // each context once
  for (Context* c : ctxs) doing.push_back(std::make_unique<Context::Doing>(*c, what));
  try {
    return f();
  } catch (const cl::Error& e) {
    throw describe_cl_error(e, what);
  }
}

RunRecord ReduceSession::run(const ReduceVariant& v) {
  std::vector<Context*> others;
  for (const Part& part : parts_) others.push_back(part.ctx);
  return guarded(v.name() + " " + op_name(problem_.op) + " of " + std::to_string(problem_.n) + " " +
                     dtype_name(problem_.type) + " elements",
                 others, [&] { return run_one(v); });
}

RunRecord ReduceSession::run_one(const ReduceVariant& v) {
  RunRecord rec = record(v.name(), problem_.op, problem_.acc_type);
  rec.expected = expected_;
  if (!parts_.empty()) return run_parts(v, rec);
  const ReduceProblem pp = plan_problem();
  rec.skip_reason = problem_.n ? v.unsupported(ctx_, pp) : "";
  const bool ranked = cfg_.ranks && cfg_.ranks->many();
  // Ranks run a variant together or not at all (each collective needs every rank).
  if (ranked && !all_ranks(rec.skip_reason.empty()) && rec.skip_reason.empty())
    rec.skip_reason = "another rank's device cannot run it";
  if (!rec.skip_reason.empty()) {
    rec.skipped = true;
    return rec;
  }
  std::unique_ptr<ReducePlan> plan;
  std::optional<ReduceFold> slice_fold;  // ranks of exact: this slice's pieces, folded
  if (problem_.n == 0) {  // sum and prod: the identity, with no launch (a rank's empty slice:
                          // nothing, which join_ranks() leaves out)
    rec.result.type = problem_.acc_type;
    if (has_identity(problem_.op)) rec.result = identity_value(problem_.op, problem_.acc_type);
    rec.verified = true;
  } else {
    plan = v.plan(ctx_, pp, cfg_.local_size);
    rec.policy = plan->policy();
    if (layout_.chunks > 1) {
      rec.skip_reason = ReduceFold::cannot_fold(*plan);
      if (!rec.skip_reason.empty()) {
        rec.skipped = true;
        return rec;
      }
    }
    ChunkedArray& array = device_array();
    const std::string what = v.name() + " " + op_name(problem_.op) + " of " +
                             std::to_string(problem_.n) + " " + dtype_name(problem_.type) +
                             " elements";
    // Ranks of a correctly rounded plan (exact) combine their slices' exact states.
    const bool keep_state = ranked && plan->policy().correctly_rounded;
    time_device(
        rec,
        [&] {
          array.prepare_reduce(plan->out_bytes(), what);
          if (keep_state) slice_fold.emplace(plan->problem(), plan->out_bytes(), true);
        },
        [&](std::vector<cl::Event>& events) {
          rec.result = array.reduce(*plan, events, what, slice_fold ? &*slice_fold : nullptr);
        });
    set_layout(rec, layout_, upload_ms_);
  }
  // The chunks' results are folded one after another: their budgets with the fold's.
  const SumPiece slice = plan ? budget_of(*plan, data_, layout_) : SumPiece{};
  if (problem_.n > 0 || !ranked) finish_reduce(rec, slice.budget);
  if (ranked) join_ranks(rec, slice, slice_fold ? &*slice_fold : nullptr);
  return rec;
}

SumPiece ReduceSession::budget_of(const ReducePlan& plan, const HostArray& data,
                                  const ChunkLayout& layout) const {
  SumPiece whole;
  whole.count = data.n;
  if (problem_.op == Op::kProd) {  // every multiplication rounds, whatever the order
    whole.budget.depth = data.n;
    return whole;
  }
  if (problem_.op != Op::kSum || !is_float(problem_.acc())) return whole;
  std::vector<SumPiece> pieces;
  const std::size_t size = dtype_size(data.type);
  for (std::size_t c = 0; c < layout.chunks; ++c) {
    const std::size_t len = layout.length(c);
    pieces.push_back(sum_budget(plan.sum_model(len), data.type,
                                data.bytes.data() + layout.begin(c) * size, len));
  }
  return fold_budgets(pieces);
}

void ReduceSession::join_ranks(RunRecord& rec, const SumPiece& slice, const ReduceFold* state) {
  const bool empty = problem_.n == 0;
  // Indices become global; the slice's own verdict stands beside the whole's.
  Value mine = rec.result, want = expected_;
  if (is_arg_op(problem_.op)) {
    mine.index += static_cast<std::int64_t>(cfg_.first);
    want.index += static_cast<std::int64_t>(cfg_.first);
  }
  const bool slice_ok = rec.verified;
  // A correctly rounded plan (exact; an empty slice has none, so every rank asks): the slices'
  // exact states added over the ranks and rounded once, against the host reference's states
  // of the slices, added and rounded alike: both the correctly rounded sum of the whole array.
  const bool exact = !all_ranks(!rec.policy.correctly_rounded);
  Combined got, ref;
  if (exact) {
    if (!empty && !state)
      throw Error(Errc::kInternal, "internal: a correctly rounded slice without its state");
    if (!empty && !expected_state_) expected_state_ = exact_state(data_);
    got = allreduce_exact(problem_.acc(), empty ? ExactState() : state->exact_state());
    ref = allreduce_exact(problem_.acc(), empty ? ExactState() : *expected_state_);
  } else {
    got = allreduce_value(problem_.op, mine, empty);
    ref = allreduce_value(problem_.op, want, empty);
  }
  // A float sum's budget: the slices' (gathered), combined by the MPI reduction in rank order
  // but in any grouping; the whole's magnitudes for its overflow rule.
  const Magnitudes& m = stats_.m;
  const std::vector<double> terms = gather_ranks(static_cast<double>(slice.budget.terms));
  const std::vector<double> depth = gather_ranks(static_cast<double>(slice.budget.depth));
  const std::vector<double> sums = gather_ranks(static_cast<double>(slice.sum));
  const std::vector<double> counts = gather_ranks(static_cast<double>(slice.count));
  const std::vector<double> abs = gather_ranks(static_cast<double>(m.abs_sum));
  const std::vector<double> pos = gather_ranks(static_cast<double>(m.pos_sum));
  const std::vector<double> neg = gather_ranks(static_cast<double>(m.neg_sum));
  const std::vector<double> specials =
      gather_ranks((m.nan ? 1.0 : 0.0) + (m.pos_inf ? 2.0 : 0.0) + (m.neg_inf ? 4.0 : 0.0));
  bool whole_ok = got.has == ref.has;
  Verdict v;
  if (got.has && ref.has) {
    if (is_float(problem_.acc()) && (problem_.op == Op::kSum || problem_.op == Op::kProd) &&
        !exact) {
      std::vector<SumPiece> slices(terms.size());
      FloatStats whole;
      whole.exact = ref.value.f;
      for (std::size_t r = 0; r < slices.size(); ++r) {
        slices[r].budget = {static_cast<std::uint64_t>(depth[r]),
                            static_cast<long double>(terms[r])};
        slices[r].sum = sums[r];
        slices[r].abs_sum = abs[r];
        slices[r].count = static_cast<std::uint64_t>(counts[r]);
        whole.m.abs_sum += abs[r];
        whole.m.pos_sum += pos[r];
        whole.m.neg_sum += neg[r];
        const auto f = static_cast<int>(specials[r]);
        whole.m.nan = whole.m.nan || (f & 1);
        whole.m.pos_inf = whole.m.pos_inf || (f & 2);
        whole.m.neg_inf = whole.m.neg_inf || (f & 4);
      }
      // Floats: the slices' checks hold each slice. A product's combine is checked slice by
      // slice only (its bound needs every factor's magnitude).
      v = problem_.op == Op::kSum
              ? verify(got.value, ref.value, problem_.op, fold_budgets(slices, true).budget, whole)
              : Verdict{true, false, 0.0, ""};
    } else {
      v = verify_bitwise(got.value, ref.value);
      if (!is_float(got.value.type))
        v.ok = got.value.i == ref.value.i && got.value.u == ref.value.u;
      v.ok = v.ok && got.value.index == ref.value.index;
      if (!v.ok) v.why = "the ranks' combined result differs from the combined reference";
    }
    whole_ok = whole_ok && (v.ok || v.overflow);
    if (problem_.op == Op::kSum && is_float(problem_.acc())) {  // the whole's, not the slice's
      const FloatError err = float_error(got.value, ref.value);
      rec.has_error = true;
      rec.err_ulp = err.ulps;
      rec.err_rel = err.rel;
      rec.bound = v.bound;
    }
  }
  rec.verified = all_ranks(slice_ok && whole_ok);
  if (!rec.verified && rec.verify_note.empty())
    rec.verify_note = slice_ok ? v.why : "a rank's slice did not verify";
  rec.result = got.value;
  rec.expected = ref.value;
  rec.combine_ms = got.ms;
  join_rank_times(rec, dtype_size(problem_.type));
}

RunRecord ReduceSession::run_omp() {
  RunRecord rec = record("omp", problem_.op, problem_.acc_type);
  rec.kind = "peer";
  rec.expected = expected_;
  const OmpResult r = omp_reduce(data_, problem_.op, problem_.acc_type, cfg_.warmup, cfg_.repeat);
  rec.result = r.value;
  set_peer_timing(rec, r.timing);
  // Its threads' SIMD loops reassociate as the compiler likes: only the depth is known.
  finish_reduce(rec, ErrorBudget::classical(r.depth, stats_.m.abs_sum));
  return rec;
}

// The budget verify() needs: a sum's error follows its tree (`budget`), but a product's relative
// error grows with every one of its n - 1 multiplications, whatever the order, so a tree is no
// tighter than the loop. A correctly rounded plan (`exact`) is held to the bits of the reference,
// and every float sum's distance from it is recorded.
void ReduceSession::finish_reduce(RunRecord& rec, const ErrorBudget& budget) const {
  const ErrorBudget b = problem_.op == Op::kProd ? ErrorBudget{problem_.n, 0.0L} : budget;
  const Verdict verdict = rec.policy.correctly_rounded
                              ? verify_bitwise(rec.result, expected_)
                              : verify(rec.result, expected_, problem_.op, b, stats_);
  if (problem_.op == Op::kSum && is_float(expected_.type)) {  // expected_ is the exact sum
    const FloatError err = float_error(rec.result, expected_);
    rec.has_error = true;
    rec.err_ulp = err.ulps;
    rec.err_rel = err.rel;
  }
  finish(rec, verdict.ok, verdict.why, verdict.bound, static_cast<double>(data_.bytes.size()));
  rec.overflow = verdict.overflow;
}

RunRecord ReduceSession::run_copy() {
  RunRecord rec = record("copy", problem_.op, problem_.acc_type);
  rec.kind = "ceiling";
  rec.expected = expected_;
  // The copy of one chunk at most (what any one launch reads), and of 1 GiB at most: enough for
  // the rate, and little device memory beside a large resident array.
  const std::size_t bytes =
      std::min({data_.bytes.size(), layout_.chunk * dtype_size(data_.type), std::size_t{1} << 30});
  if (bytes == 0) {
    rec.skipped = true;
    rec.skip_reason = "nothing to copy (n = 0)";
    return rec;
  }
  try {
    cl::Buffer in = ctx_.scratch("input", bytes);
    cl::Buffer dst = ctx_.scratch("copy", bytes);
    const std::size_t piece = ctx_.tuning().transfer_piece;
    enqueue_write(ctx_.queue(), in, 0, bytes, data_.bytes.data(), piece);
    clreduce::finish(ctx_.queue(), timeout_s(static_cast<double>(bytes)), "the copy's upload");
    // NVIDIA GPUs: the runtime's copy, every GPU figure's ceiling. Elsewhere a copy kernel on
    // every compute unit (cl/copy.cl): PoCL's clEnqueueCopyBuffer runs on one thread (the same
    // rate with one compute unit as with all), so on a CPU it is no ceiling.
    const DeviceInfo& info = ctx_.info();
    const bool runtime_copy = info.is_gpu && info.is_nvidia;
    cl::Kernel kernel;
    std::size_t items = 0;
    if (!runtime_copy) {
      kernel = ctx_.kernel("copy.cl", "copy_words", "");
      const std::size_t words = bytes / 16;
      items = std::max<std::size_t>(
          1, std::min<std::size_t>(words, std::size_t{4} * std::max(1u, info.compute_units) *
                                              (info.is_gpu ? 256 : 1)));
      const std::size_t run = (words + items - 1) / items;
      kernel.setArg(0, in);
      kernel.setArg(1, dst);
      kernel.setArg(2, static_cast<cl_ulong>(bytes));
      kernel.setArg(3, static_cast<cl_ulong>(info.is_gpu ? 1 : std::max<std::size_t>(run, 1)));
      kernel.setArg(4, static_cast<cl_ulong>(info.is_gpu ? items : 1));
    }
    time_device(
        rec, [] {},
        [&](std::vector<cl::Event>& events) {
          if (runtime_copy)
            enqueue_copy(ctx_.queue(), in, dst, 0, 0, bytes, piece, &events);
          else
            ctx_.queue().enqueueNDRangeKernel(
                kernel, cl::NullRange, cl::NDRange(items),
                info.is_gpu ? cl::NullRange : cl::NDRange(1),  // CPUs: a group a run
                nullptr, ctx_.event_slot(events));
          clreduce::finish(ctx_.queue(), timeout_s(2.0 * static_cast<double>(bytes)),
                           "the device copy");
        });
    rec.wall_ms = rec.kernel_ms;  // the copy alone: no upload, no read-back
    std::vector<unsigned char> back(bytes);
    enqueue_read(ctx_.queue(), dst, 0, bytes, back.data(), piece);
    clreduce::finish(ctx_.queue(), timeout_s(static_cast<double>(bytes)), "the copy's read-back");
    const bool same = std::memcmp(back.data(), data_.bytes.data(), bytes) == 0;
    rec.policy.path = runtime_copy ? "clEnqueueCopyBuffer"
                                   : "copy kernel, " + std::to_string(items) + " work-items" +
                                         (info.is_gpu ? ", strided" : ", a run each");
    finish(rec, same, same ? "" : "the copy differs from the input", 0.0,
           2.0 * static_cast<double>(bytes));
  } catch (const cl::Error& e) {
    rec.skipped = true;
    rec.skip_reason = std::string("copy failed: ") + e.what() + " " + cl_error_name(e.err());
  }
  return rec;
}

RunRecord ReduceSession::run_host_copy() {
  RunRecord rec = record("copy-h2d", problem_.op, problem_.acc_type);
  rec.kind = "ceiling";
  rec.expected = expected_;
  const std::size_t bytes = std::min(data_.bytes.size(), std::size_t{1} << 30);
  if (bytes == 0) {
    rec.skipped = true;
    rec.skip_reason = "nothing to copy (n = 0)";
    return rec;
  }
  try {
    cl::CommandQueue& q = ctx_.queue();
    cl::Buffer pinned(ctx_.context(), CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, bytes);
    cl::Buffer dst = ctx_.scratch("copy", bytes);
    cl::Event mapped;
    void* host = q.enqueueMapBuffer(pinned, CL_FALSE, CL_MAP_WRITE, 0, bytes, nullptr, &mapped);
    q.flush();
    wait(mapped, timeout_s(static_cast<double>(bytes)), "mapping the pinned copy's buffer");
    std::memcpy(host, data_.bytes.data(), bytes);
    const std::size_t piece = ctx_.tuning().transfer_piece;
    time_device(
        rec, [] {},
        [&](std::vector<cl::Event>& events) {
          enqueue_write(q, dst, 0, bytes, host, piece, &events);
          clreduce::finish(q, timeout_s(static_cast<double>(bytes)), "the host-to-device copy");
        });
    rec.wall_ms = rec.kernel_ms;
    std::vector<unsigned char> back(bytes);
    enqueue_read(q, dst, 0, bytes, back.data(), piece);
    q.enqueueUnmapMemObject(pinned, host);
    clreduce::finish(q, timeout_s(static_cast<double>(bytes)), "the copy's read-back");
    const bool same = std::memcmp(back.data(), data_.bytes.data(), bytes) == 0;
    rec.policy.path = "clEnqueueWriteBuffer from mapped CL_MEM_ALLOC_HOST_PTR";
    finish(rec, same, same ? "" : "the copy differs from the input", 0.0,
           static_cast<double>(bytes));
  } catch (const cl::Error& e) {
    rec.skipped = true;
    rec.skip_reason = std::string("copy failed: ") + e.what() + " " + cl_error_name(e.err());
  }
  return rec;
}

}  // namespace clreduce
