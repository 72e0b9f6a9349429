// scan_runner.cpp: scans through the harness's one loop (wall time here includes reading back all
// n outputs) and its verify-and-rate step, after the element-wise check.
#include "run/scan_runner.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "clreduce/error.hpp"
#include "core/checked.hpp"
#include "io/npy.hpp"
#include "io/text.hpp"
#include "run/omp_scan.hpp"
#include "run/shares.hpp"

namespace clreduce {

namespace {

// Counts a session's runs, warm-up and timed: next() is true for the last, the run whose output
// is verified and the only one that starts from the sentinel. A host write of the sentinel
// before every run left the output's lines dirty in the device's cache for the kernel to evict
// (at 2^22 on the H200, 7-25% of the kernel's time), which a library call or a peer's loop does
// not pay.
class FinalRun {
 public:
  explicit FinalRun(const RunConfig& cfg)
      : runs_(cfg.warmup + std::max<std::uint64_t>(cfg.repeat, 1)) {}
  bool next() { return ++started_ == runs_; }

 private:
  std::uint64_t runs_, started_ = 0;
};

}  // namespace

std::vector<std::uint8_t> segment_flags(std::size_t n, const std::string& file,
                                        std::size_t length) {
  std::vector<std::uint8_t> f;
  if (!file.empty()) {
    f = read_npy_flags(file);
    if (f.size() != n)
      throw Error(Errc::kInput, printable(file) + ": " + std::to_string(f.size()) +
                                    " segment flags for an array of " + std::to_string(n) +
                                    " elements");
  } else if (length > 0) {
    f.assign(n, 0);
    for (std::size_t i = 0; i < n; i = length < n - i ? i + length : n) f[i] = 1;  // no wrap
  }
  return f;
}

ScanSession::ScanSession(Context& ctx, const HostArray& data, Op op, RunConfig cfg,
                         ScanOptions opts)
    : Session(ctx, data, std::move(cfg)), opts_(std::move(opts)) {
  problem_.op = op;
  problem_.type = data.type;
  problem_.n = data.n;
  problem_.exclusive = opts_.exclusive;
  problem_.segmented = opts_.segmented;
  if (!opts_.segmented) opts_.flags.clear();
  if (is_arg_op(op)) {
    refused_ = op_name(op) + " has no prefix scan (scans take sum, prod, min, max)";
    problem_.acc_type = data.type;
    return;
  }
  problem_.acc_type = resolve_acc(op, data.type, cfg_.acc);
  if (opts_.segmented && opts_.flags.size() != data.n)
    throw Error(Errc::kInput, std::to_string(opts_.flags.size()) +
                                  " segment flags for an array of " + std::to_string(data.n) +
                                  " elements");
  check_fp64(problem_.acc_type);
  const std::size_t out_bytes = checked_bytes(data.n, problem_.acc_bytes(), "the scan's output");
  host_out_.allocate_uninit(out_bytes);  // the sequential scan writes every element
  if (opts_.segmented) device_flags_.assign(opts_.flags.begin(), opts_.flags.end());
  layout_ = choose_layout(
      ctx.info(), ctx.tuning(), data.n,
      ElementBytes{dtype_size(data.type), opts_.segmented ? 1u : 0u, problem_.acc_bytes()},
      HostArrays{data.bytes.data(), opts_.segmented ? device_flags_.data() : nullptr,
                 host_out_.data()});
  const ScanMode mode{op, problem_.acc_type, opts_.exclusive};
  time_sequential([&] { sequential_scan(data, mode, opts_.flags, host_out_.data()); });
  // The loop must pass its own check (depth n: a chain of n operations).
  const ScanVerdict self = verify_scan(data, mode, opts_.flags, data.n, host_out_.data());
  if (!self.ok)
    throw Error(Errc::kInternal,
                "internal: the sequential scan disagrees with the reference: " + self.why);
  expected_ = self.expected_last;
  // MPI: the reference's state where this rank's slice starts, from the slices before it.
  if (cfg_.ranks && cfg_.ranks->many())
    ref_start_ = exscan_ref_state(op, scan_ref_state(data, mode, opts_.flags));
}

ScanSession::ScanSession(const std::vector<Context*>& ctxs, const HostArray& data, Op op,
                         RunConfig cfg, ScanOptions opts)
    : ScanSession(*ctxs.at(0), data, op, std::move(cfg), std::move(opts)) {
  if (ctxs.size() < 2 || !refused_.empty()) return;
  // A share before the last reduces itself first (its total is the next share's carry), and
  // no share's scan starts before the totals before it are known: the run takes the slowest
  // first pass plus the slowest second pass. With one share a device (scan-split off, given
  // weights, segmented scans), equal shares are best: with a total taking r and a scan s per
  // element, max(a (r + s), a r + b s) over shares a and b is least at a = b (two devices:
  // 2 s / (r + s) of one device's speed, 1.5x for int32 -> int64 at the copy rate).
  // Split (the default for an unsegmented scan at default shares): the last device also takes
  // the array's first piece, which no carry reaches, and scans it (its output final, its total
  // its carry-out) while devices 0 .. k-2 reduce theirs; then those k - 1 shares and the last
  // device's own are scanned with their carries. The first piece weighs r/s (its scan as long
  // as a total) and the k others 1: each device busy for (r + s) / (k s + r) of one device's
  // time, k s + r over r + s of its speed (two devices: 1.75x for int32 -> int64 by bytes).
  // The last device holds the first piece beside its share, each laid out as if alone: where
  // the two would not fit together (past 0.85 of the memory it plans for, as one array past
  // that streams), the scan runs unsplit.
  const ElementBytes e{dtype_size(data.type), opts_.segmented ? 1u : 0u, problem_.acc_bytes()};
  const auto lay_out = [&](const std::vector<Context*>& on,
                           const std::vector<std::size_t>& counts) {
    parts_.clear();
    std::size_t at = 0;
    for (std::size_t d = 0; d < on.size(); ++d) {
      Part p;
      p.ctx = on[d];
      p.view = view_of(data, at, counts[d]);
      p.first = at;
      p.layout = choose_layout(
          p.ctx->info(), p.ctx->tuning(), counts[d], e,
          HostArrays{p.view.bytes.data(), opts_.segmented ? device_flags_.data() + at : nullptr,
                     host_out_.data() + at * e.out});
      at += counts[d];
      parts_.push_back(std::move(p));
    }
  };
  split_ = !opts_.segmented && cfg_.share_weights.empty() && ctxs[0]->tuning().scan_split == "auto";
  if (split_) {
    const double in = static_cast<double>(e.in);
    std::vector<double> weights(ctxs.size() + 1, 1.0);
    const double piece = ctxs[0]->tuning().scan_split_piece;  // scan-split-piece, else bytes
    weights[0] = piece > 0 ? piece : in / (in + static_cast<double>(e.out));
    std::vector<Context*> on = ctxs;
    on.insert(on.begin(), ctxs.back());
    lay_out(on, split_shares(data.n, weights, device_share_grain(ctxs, {e.in, e.flags, e.out})));
    const Context& last = *ctxs.back();
    const double both = static_cast<double>(device_bytes(parts_.front().layout, e)) +
                        static_cast<double>(device_bytes(parts_.back().layout, e));
    crowded_ = both > 0.85 * static_cast<double>(planned_memory(last.info(), last.tuning()));
    split_ = !crowded_;
  }
  if (!split_) lay_out(ctxs, share_counts(ctxs, problem_.acc_type, e));
}

std::unique_ptr<ReducePlan> ScanSession::total_plan(Context& ctx, std::size_t n) const {
  if (problem_.segmented || n == 0) return nullptr;
  const ReduceVariant* fast = find_reduce_variant("fast");
  ReduceProblem rp;
  rp.op = problem_.op;
  rp.type = problem_.type;
  rp.n = n;
  rp.acc_type = problem_.acc_type;
  if (!fast || !fast->unsupported(ctx, rp).empty()) return nullptr;
  return fast->plan(ctx, rp, 0);
}

RunRecord ScanSession::run_parts(const ScanVariant& v, RunRecord rec) {
  const std::size_t k = parts_.size(), n = problem_.n, acc = problem_.acc_bytes();
  std::vector<std::unique_ptr<ScanPlan>> plans(k);
  std::vector<std::unique_ptr<ReducePlan>> totals(k);
  const std::string what =
      v.name() + " scan of " + std::to_string(n) + " " + dtype_name(problem_.type) + " elements";
  std::uint64_t chain = 0, pieces = 0;
  std::size_t last = 0;  // the last share with elements: nothing after it needs its total
  for (std::size_t d = 0; d < k; ++d)
    if (parts_[d].view.n) last = d;
  bool reduce_first = !problem_.segmented;
  for (std::size_t d = 0; d < k; ++d) {
    Part& part = parts_[d];
    if (part.view.n == 0) continue;
    ScanProblem pp = problem_;
    pp.n = part.layout.chunks > 1 ? part.layout.chunk : part.view.n;
    pp.carry_in = true;
    if (std::string why = v.unsupported(*part.ctx, pp); !why.empty()) {
      rec.skipped = true;
      rec.skip_reason = part.ctx->info().name + ": " + why;
      return rec;
    }
    plans[d] = v.plan(*part.ctx, pp, cfg_.local_size);
    if (rec.policy.path.empty()) rec.policy = plans[d]->policy();
    chain = std::max<std::uint64_t>(chain, plans[d]->depth());
    pieces += part.layout.chunks;
    if (reduce_first && d < last && !(split_ && d == 0)) {
      totals[d] = total_plan(*part.ctx, pp.n);
      if (!totals[d]) reduce_first = false;
    }
    if (!part.array) {
      part.array = std::make_unique<ChunkedArray>(
          *part.ctx, part.layout, part.view,
          opts_.segmented ? device_flags_.data() + part.first : nullptr,
          host_out_.data() + part.first * acc,
          ElementBytes{dtype_size(data_.type), opts_.segmented ? 1u : 0u, acc});
      part.upload_ms = part.array->upload("uploading " + std::to_string(part.view.n) +
                                          " elements to " + part.ctx->info().name);
    }
  }
  if (reduce_first && last > 0)
    rec.policy.path +=
        split_ ? "; the first piece scanned beside the shares' totals first, then carry-in"
        : crowded_
            ? "; shares' totals first, then carry-in (unsplit: the first piece beside the last "
              "share would pass 0.85 of the last device's memory)"
            : "; shares' totals first, then carry-in";
  // A share's carry comes through the totals of the shares before it (a tree each).
  for (std::size_t d = 0; reduce_first && d < k; ++d)
    if (totals[d]) chain = std::max<std::uint64_t>(chain, plans[d]->depth() + totals[d]->depth());
  const unsigned char sentinel = is_float(problem_.acc_type) ? 0xFF : 0xA5;
  std::vector<std::vector<Sample>> part_samples(k);
  std::vector<std::vector<double>> part_before(k);  // each share's first pass, each timed run
  std::vector<double> combine;
  std::uint64_t run_index = 0;
  FinalRun final_runs(cfg_);
  const std::vector<Sample> whole = repeat_runs(cfg_.warmup, cfg_.repeat, [&] {
    const bool final_run = final_runs.next();
    if (final_run) host_out_.assign(host_out_.size(), sentinel);
    for (std::size_t d = 0; d < k; ++d) {
      if (!plans[d]) continue;
      if (final_run) parts_[d].array->prepare_scan(what);
      if (totals[d]) parts_[d].array->prepare_reduce(totals[d]->out_bytes(), what + " (total)");
    }
    std::vector<Sample> s(k);
    std::vector<ScanCarry> carries(k);
    std::vector<double> carry_ms(k, 0.0);
    // Split without totals first, the last device's two pieces would run in the same pass:
    // one after another then, not from two threads on one context.
    const bool threads = ctx_.tuning().share_threads == "on" && !(split_ && !reduce_first);
    const double t0 = now_ms();
    if (reduce_first) {
      // Every share but the last: its total, one read of its input.
      run_parallel(
          k,
          [&](std::size_t d) {
            if (split_ && d == 0 && plans[0]) {
              // The first piece: no carry reaches it, so its scan is final, and its total is
              // its carry-out.
              std::vector<cl::Event> events;
              parts_[0].array->scan(*plans[0], events, what, false);
              carries[0] = parts_[0].array->carry_out(*plans[0], what);
              parts_[0].array->read_output(what);
              s[0].kernel_ms = events_ms(events);
              s[0].launches = events.size();
              return;
            }
            if (!totals[d]) return;  // the last share: nothing after it needs its total
            carries[d].empty = false;
            std::vector<cl::Event> events;
            carries[d].value = parts_[d].array->reduce(*totals[d], events, what + " (total)");
            s[d].kernel_ms = carry_ms[d] = events_ms(events);
            s[d].launches = events.size();
          },
          threads);
    } else {
      run_parallel(
          k,
          [&](std::size_t d) {
            if (!plans[d]) return;
            std::vector<cl::Event> events;
            parts_[d].array->scan(*plans[d], events, what, false);
            carries[d] = parts_[d].array->carry_out(*plans[d], what);
            s[d].kernel_ms = events_ms(events);
            s[d].launches = events.size();
          },
          threads);
    }
    const double t1 = now_ms();
    std::vector<double> before(k);
    for (std::size_t d = 0; d < k; ++d) before[d] = s[d].kernel_ms;
    const std::vector<ScanCarry> into = exclusive_carries(problem_.op, carries);
    const double t2 = now_ms();
    run_parallel(
        k,
        [&](std::size_t d) {
          if (!plans[d]) return;
          if (reduce_first && split_ && d == 0) {  // scanned in the first pass
            s[d].wall_ms = now_ms() - t0;
            return;
          }
          std::vector<cl::Event> events;
          if (reduce_first) {
            parts_[d].array->scan(*plans[d], events, what, true,
                                  into[d].empty ? nullptr : &into[d].value);
          } else {
            if (!into[d].empty) parts_[d].array->add_carry(*plans[d], into[d].value, events, what);
            parts_[d].array->read_output(what);
            carry_ms[d] = events_ms(events);
          }
          s[d].kernel_ms += events_ms(events);
          s[d].launches += events.size();
          s[d].wall_ms = now_ms() - t0;
        },
        threads);
    const double t3 = now_ms();
    // The run's kernel time is its critical path: no share's second pass starts before every
    // share's first pass (the totals, or the scans whose carries are added after) has ended, so
    // the slowest first pass plus the slowest second pass, not the slowest share's own sum.
    Sample all{0.0, t3 - t0, 0};
    double carry_max = 0.0, first_max = 0.0, second_max = 0.0;
    for (std::size_t d = 0; d < k; ++d) {
      first_max = std::max(first_max, before[d]);
      second_max = std::max(second_max, s[d].kernel_ms - before[d]);
      all.launches += s[d].launches;
      carry_max = std::max(carry_max, carry_ms[d]);
    }
    all.kernel_ms = first_max + second_max;
    if (run_index++ >= cfg_.warmup) {
      for (std::size_t d = 0; d < k; ++d) {
        part_samples[d].push_back(s[d]);
        part_before[d].push_back(before[d]);
      }
      combine.push_back((t2 - t1) + carry_max);
    }
    return all;
  });
  set_timings(rec, whole);
  rec.combine_ms = median(combine);
  if (n) rec.result = Value::from_bytes(problem_.acc_type, host_out_.data() + (n - 1) * acc);
  const ScanMode mode{problem_.op, problem_.acc_type, problem_.exclusive};
  // A share's carry passes through the shares and chunks before it: one operation each.
  const ScanVerdict verdict =
      verify_scan(data_, mode, opts_.flags, chain + pieces + k, host_out_.data());
  rec.scan->first_wrong = verdict.first_wrong;
  rec.scan->wrong_count = verdict.wrong;
  const std::size_t flag_bytes = problem_.segmented ? n : 0;
  std::vector<PartInfo> infos;
  std::vector<Share> shares;
  for (std::size_t d = 0; d < k; ++d) {
    const Part& part = parts_[d];
    const std::size_t m = part.view.n;
    PartInfo info = share_info(
        *part.ctx, part.first, m, part_samples[d],
        static_cast<double>(m * (dtype_size(data_.type) + acc) + (problem_.segmented ? m : 0)));
    // A share's output is checked with the whole's (its carry comes from the shares before it).
    info.verified = verdict.ok;
    if (!part_before[d].empty()) info.before_ms = median(part_before[d]);
    if (m > 0)
      info.result =
          Value::from_bytes(problem_.acc_type, host_out_.data() + (part.first + m - 1) * acc);
    infos.push_back(info);
    shares.push_back(Share{&part.layout, part.upload_ms});
  }
  rec.devices = static_cast<int>(k - (split_ ? 1 : 0));
  set_shares(rec, std::move(infos), shares);
  finish(rec, verdict.ok, verdict.why, verdict.bound,
         static_cast<double>(data_.bytes.size() + n * acc + flag_bytes));
  rec.overflow = verdict.overflow;
  return rec;
}

namespace {

// Each timed run's critical path over the ranks (every rank's first and second passes, in run
// order, the same count on every rank): its slowest first pass plus its slowest second pass.
std::vector<double> critical_path(const std::vector<double>& firsts,
                                  const std::vector<double>& seconds, int ranks) {
  const std::size_t runs = firsts.size();
  std::vector<unsigned char> mine(2 * runs * sizeof(double));
  if (runs) {
    std::memcpy(mine.data(), firsts.data(), runs * sizeof(double));
    std::memcpy(mine.data() + runs * sizeof(double), seconds.data(), runs * sizeof(double));
  }
  const std::vector<unsigned char> all = gather_bytes_ranks(mine);
  std::vector<double> path(runs, 0.0);
  for (std::size_t i = 0; i < runs; ++i) {
    double first = 0.0, second = 0.0;
    for (int r = 0; r < ranks; ++r) {
      double f = 0.0, s = 0.0;
      const unsigned char* at = all.data() + static_cast<std::size_t>(r) * mine.size();
      std::memcpy(&f, at + i * sizeof(double), sizeof f);
      std::memcpy(&s, at + (runs + i) * sizeof(double), sizeof s);
      first = std::max(first, f);
      second = std::max(second, s);
    }
    path[i] = first + second;
  }
  return path;
}

}  // namespace

RunRecord ScanSession::run_ranked(const ScanVariant& v, RunRecord rec, const ScanProblem& pp) {
  const Ranks& R = *cfg_.ranks;
  const std::size_t n = problem_.n, acc = problem_.acc_bytes(), in = dtype_size(data_.type);
  const std::string what =
      v.name() + " scan of " + std::to_string(n) + " " + dtype_name(problem_.type) + " elements";
  const ElementBytes bytes{in, 0u, acc};
  // Split (RunConfig::first_piece): rank 0's slice begins with the array's first piece, which the
  // last rank scans (it reaches no carry) while the other ranks reduce their shares; rank 0's
  // share is then the rest of its slice. Every rank must be able to take its part, else none
  // does, and rank 0 scans its whole slice as the unsplit run does.
  const std::uint64_t first_piece = problem_.segmented ? 0 : cfg_.first_piece;
  const int last_rank = R.size - 1;
  std::unique_ptr<ScanPlan> plan, piece_plan;
  std::unique_ptr<ReducePlan> total;
  bool split = false, crowded = false;
  if (first_piece > 0) {
    bool ready = true;
    RankPiece& rp = rank_piece_;
    try {
      if (R.rank == 0 || R.rank == last_rank) {
        const bool share = R.rank == 0;  // rank 0: its share; the last rank: the first piece
        const std::size_t m = share ? n - first_piece : first_piece;
        if (!rp.array && !share && rp.in.size() != m * in) {
          rp.in.allocate_uninit(m * in);  // filled from rank 0 below
          rp.out.allocate_uninit(m * acc);
        }
        if (share && !rp.array) {
          rp.view = view_of(data_, first_piece, m);
          rp.out_at = host_out_.data() + first_piece * acc;
        } else if (!rp.array) {
          rp.view.type = data_.type;
          rp.view.n = m;
          rp.view.bytes.adopt(
              rp.in.data(), rp.in.size(), [](void*, std::size_t, void*) {}, nullptr);
          rp.out_at = rp.out.data();
        }
        if (m > 0) {
          if (!rp.array)
            rp.layout = choose_layout(ctx_.info(), ctx_.tuning(), m, bytes,
                                      HostArrays{rp.view.bytes.data(), nullptr, rp.out_at});
          ScanProblem pm = problem_;
          pm.n = rp.layout.chunks > 1 ? rp.layout.chunk : m;
          pm.carry_in = true;
          // The last rank holds the piece beside its slice, each laid out as if alone: where
          // the two would not stay resident together, the ranks run unsplit.
          const double both = static_cast<double>(device_bytes(rp.layout, bytes)) +
                              static_cast<double>(device_bytes(layout_, bytes));
          crowded = !share &&
                    both > 0.85 * static_cast<double>(planned_memory(ctx_.info(), ctx_.tuning()));
          if (crowded || !v.unsupported(ctx_, pm).empty()) {
            ready = false;
          } else {
            piece_plan = v.plan(ctx_, pm, cfg_.local_size);
            if (share) {
              total = total_plan(ctx_, pm.n);
              ready = total != nullptr;
            }
          }
        }
      }
      if (R.rank != 0 && R.rank != last_rank && n > 0) {
        total = total_plan(ctx_, pp.n);
        ready = total != nullptr;
      }
    } catch (const std::bad_alloc&) {
      ready = false;
    }
    split = all_ranks(ready);
    crowded = !all_ranks(!crowded);  // the reason every rank's path gives
    if (!split) {
      piece_plan.reset();
      total.reset();
    }
  }
  if (split) {
    RankPiece& rp = rank_piece_;
    if (!rp.moved) {  // the first piece's input, once for every variant
      if (R.rank == 0) send_bytes(last_rank, data_.bytes.data(), first_piece * in);
      if (R.rank == last_rank) recv_bytes(0, rp.in.data(), first_piece * in);
      rp.moved = true;
    }
    if (piece_plan && !rp.array) {
      rp.array =
          std::make_unique<ChunkedArray>(ctx_, rp.layout, rp.view, nullptr, rp.out_at, bytes);
      rp.upload_ms = rp.array->upload("uploading " + std::to_string(rp.view.n) + " elements");
    }
  }
  // This rank's share on the device: rank 0's past the first piece when split, else its slice.
  ChunkedArray* array = nullptr;
  ScanPlan* share_plan = nullptr;
  if (split && R.rank == 0) {
    array = rank_piece_.array.get();
    share_plan = piece_plan.get();
  } else if (n > 0) {
    plan = v.plan(ctx_, pp, cfg_.local_size);
    share_plan = plan.get();
    array = &device_array();
    // Unsplit, the last rank's total reaches no one; it is reduced anyway, so that every rank
    // takes the same path (a rank whose device cannot reduce it makes every rank add its carry
    // instead).
    if (!split && !total) total = total_plan(ctx_, pp.n);
  }
  ChunkedArray* piece = split && R.rank == last_rank ? rank_piece_.array.get() : nullptr;
  const bool reduce_first = split || (all_ranks(n == 0 || total != nullptr) && !problem_.segmented);
  const bool take_total = array && reduce_first && !(split && R.rank == last_rank);
  if (share_plan) rec.policy = share_plan->policy();
  if (piece) rec.policy = piece_plan->policy();
  if (split)
    rec.policy.path +=
        "; the first piece scanned on the last rank beside the ranks' totals, "
        "then carry-in";
  else if (reduce_first)
    rec.policy.path += crowded ? "; ranks' totals first, then carry-in (unsplit: the first piece "
                                 "beside the last rank's slice would pass 0.85 of its device's "
                                 "memory)"
                               : "; ranks' totals first, then carry-in";
  const unsigned char sentinel = is_float(problem_.acc_type) ? 0xFF : 0xA5;
  std::vector<double> mpi, firsts, seconds;
  std::uint64_t run_index = 0;
  FinalRun final_runs(cfg_);
  barrier_ranks();
  time_device(
      rec,
      [&] {
        const bool final_run = final_runs.next();
        if (final_run) host_out_.assign(host_out_.size(), sentinel);
        if (piece && final_run) {
          rank_piece_.out.assign(rank_piece_.out.size(), sentinel);
          piece->prepare_scan(what + " (first piece)");
        }
        if (array && final_run) array->prepare_scan(what);
        if (take_total) array->prepare_reduce(total->out_bytes(), what + " (total)");
      },
      [&](std::vector<cl::Event>& events) {
        ScanCarry mine, first;
        if (piece) {  // no carry reaches it: its scan is final, its total the ranks' first carry
          piece->scan(*piece_plan, events, what + " (first piece)", false);
          first = piece->carry_out(*piece_plan, what + " (first piece)");
        }
        if (take_total) {
          mine.value = array->reduce(*total, events, what + " (total)");
          mine.empty = false;
        } else if (array && !reduce_first) {
          array->scan(*share_plan, events, what, false);
          mine = array->carry_out(*share_plan, what);
        }
        const double first_ms = events_ms(events);
        const double t0 = now_ms();
        if (split) first = bcast_carry(first, last_rank);
        const ScanCarry into = fold_carry(problem_.op, first, exscan_carry(problem_.op, mine));
        const double ms = now_ms() - t0;
        if (array && reduce_first) {
          array->scan(*share_plan, events, what, true, into.empty ? nullptr : &into.value);
        } else if (array) {
          if (!into.empty) array->add_carry(*share_plan, into.value, events, what);
          array->read_output(what);
        }
        if (piece) piece->read_output(what + " (first piece)");
        if (run_index++ >= cfg_.warmup) {
          mpi.push_back(ms);
          firsts.push_back(first_ms);
          seconds.push_back(events_ms(events) - first_ms);
        }
      });
  // Split: the first piece's output, from the last rank into rank 0's.
  if (split && R.rank == last_rank) send_bytes(0, rank_piece_.out.data(), first_piece * acc);
  if (split && R.rank == 0) recv_bytes(last_rank, host_out_.data(), first_piece * acc);
  if (split && R.rank == 0)
    set_layout(rec, rank_piece_.layout, rank_piece_.upload_ms);
  else
    set_layout(rec, layout_, upload_ms_ + (piece ? rank_piece_.upload_ms : 0.0));
  if (n) rec.result = Value::from_bytes(problem_.acc_type, host_out_.data() + (n - 1) * acc);
  const ScanMode mode{problem_.op, problem_.acc_type, problem_.exclusive};
  // The carry from the ranks before passes through their totals' trees (reduce_first) or their
  // scans, then one operation per rank (and the first piece's).
  const ChunkLayout& lay = split && R.rank == 0 ? rank_piece_.layout : layout_;
  const std::uint64_t depth =
      (share_plan ? share_plan->depth() : 0) + (piece_plan ? piece_plan->depth() : 0) +
      (total ? total->depth() : 0) + (lay.chunks > 1 ? lay.chunks : 0) + R.size + 1;
  const ScanVerdict verdict =
      verify_scan(data_, mode, opts_.flags, depth, host_out_.data(), &ref_start_);
  const std::size_t flag_bytes = problem_.segmented ? n : 0;
  finish(rec, verdict.ok, verdict.why, verdict.bound,
         static_cast<double>(data_.bytes.size() + n * acc + flag_bytes));
  rec.overflow = verdict.overflow;
  // The whole: every rank's verdict, the wrong elements of all, the last rank's last element,
  // the slowest rank's wall time, and as kernel time the run's critical path: no rank's second
  // pass starts before every first pass has ended (its carry comes through them), so the slowest
  // first pass plus the slowest second pass, where that exceeds the slowest rank's own sum.
  const std::uint64_t wrong = sum_ranks(verdict.wrong);
  rec.verified = all_ranks(verdict.ok);
  rec.combine_ms = mpi.empty() ? 0.0 : median(mpi);
  rec.result = last_of_ranks(rec.result, n == 0);
  rec.expected = last_of_ranks(verdict.expected_last, n == 0);  // with the carry from before
  rec.scan->first_wrong =
      verdict.first_wrong >= 0 ? verdict.first_wrong + static_cast<std::int64_t>(cfg_.first) : -1;
  rec.scan->wrong_count = wrong;
  if (!rec.verified && verdict.ok)
    rec.verify_note = std::to_string(wrong) + " elements wrong on other ranks";
  join_rank_times(rec, in + acc + (problem_.segmented ? 1 : 0),
                  critical_path(firsts, seconds, R.size));
  return rec;
}

RunRecord ScanSession::run_omp() {
  RunRecord rec = record("omp", problem_.op, problem_.acc_type);
  rec.kind = "peer";
  rec.expected = expected_;
  rec.scan = ScanRunInfo{problem_.exclusive, problem_.segmented, -1, 0};
  rec.skip_reason = refused_.empty()
                        ? omp_scan_unsupported(problem_.op, problem_.type, problem_.acc_type,
                                               problem_.exclusive, problem_.segmented)
                        : refused_;
  if (!rec.skip_reason.empty()) {
    rec.skipped = true;
    return rec;
  }
  host_out_.assign(host_out_.size(), 0xA5);
  const OmpScanResult r = omp_scan(data_, problem_.acc_type, static_cast<int>(cfg_.warmup),
                                   static_cast<int>(cfg_.repeat), host_out_.data());
  rec.kernel_ms = rec.wall_ms = r.timing.ms_median;
  rec.kernel_ms_min = r.timing.ms_min;
  rec.kernel_ms_max = r.timing.ms_max;
  rec.policy.path = "openmp two-pass threads=" + std::to_string(r.timing.threads);
  const ScanVerdict verdict =
      verify_scan(data_, ScanMode{problem_.op, problem_.acc_type, problem_.exclusive}, opts_.flags,
                  r.depth, host_out_.data());
  rec.scan->first_wrong = verdict.first_wrong;
  rec.scan->wrong_count = verdict.wrong;
  if (problem_.n)
    rec.result = Value::from_bytes(problem_.acc_type,
                                   host_out_.data() + host_out_.size() - problem_.acc_bytes());
  finish(rec, verdict.ok, verdict.why, verdict.bound,
         static_cast<double>(data_.bytes.size() + host_out_.size()));
  rec.overflow = verdict.overflow;
  return rec;
}

ChunkedArray& ScanSession::device_array() {
  if (!array_) {
    array_ = std::make_unique<ChunkedArray>(
        ctx_, layout_, data_, opts_.segmented ? device_flags_.data() : nullptr, host_out_.data(),
        ElementBytes{dtype_size(data_.type), opts_.segmented ? 1u : 0u, problem_.acc_bytes()});
    if (cfg_.progress && layout_.chunks > 1)
      array_->on_chunk([this](std::size_t done, std::size_t total) {
        cfg_.progress("chunk " + std::to_string(done) + "/" + std::to_string(total));
      });
    upload_ms_ = array_->upload("uploading " + std::to_string(data_.n) + " elements");
  }
  return *array_;
}

HostArray ScanSession::last_output() const {
  HostArray a;
  a.type = problem_.acc_type;
  a.n = problem_.n;
  a.bytes.adopt(
      const_cast<unsigned char*>(host_out_.data()), host_out_.size(),
      [](void*, std::size_t, void*) {}, nullptr);
  return a;
}

RunRecord ScanSession::run(const ScanVariant& v, HostArray* output) {
  std::vector<Context*> others;
  for (const Part& part : parts_) others.push_back(part.ctx);
  return guarded(v.name() + " " + op_name(problem_.op) + " scan of " + std::to_string(problem_.n) +
                     " " + dtype_name(problem_.type) + " elements",
                 others, [&] { return run_one(v, output); });
}

RunRecord ScanSession::run_one(const ScanVariant& v, HostArray* output) {
  RunRecord rec = record(v.name(), problem_.op, problem_.acc_type);
  rec.expected = expected_;
  rec.scan = ScanRunInfo{problem_.exclusive, problem_.segmented, -1, 0};
  if (!parts_.empty() && refused_.empty()) return run_parts(v, rec);
  const bool ranked = cfg_.ranks && cfg_.ranks->many();
  ScanProblem pp = problem_;
  if (layout_.chunks > 1) {
    pp.n = layout_.chunk;
    pp.carry_in = true;
  }
  if (ranked) pp.carry_in = true;  // the carry from the ranks before
  rec.skip_reason = refused_.empty() ? (problem_.n ? v.unsupported(ctx_, pp) : "") : refused_;
  if (ranked && refused_.empty() && !all_ranks(rec.skip_reason.empty()) && rec.skip_reason.empty())
    rec.skip_reason = "another rank's device cannot run it";
  if (!rec.skip_reason.empty()) {
    rec.skipped = true;
    return rec;
  }
  if (ranked) return run_ranked(v, rec, pp);
  const std::size_t n = problem_.n;
  const std::size_t out_bytes = host_out_.size();  // n * acc_bytes, checked when it was made
  const std::size_t flag_bytes = problem_.segmented ? n : 0;
  std::unique_ptr<ScanPlan> plan;
  if (n > 0) {
    plan = v.plan(ctx_, pp, cfg_.local_size);
    rec.policy = plan->policy();
    ChunkedArray& array = device_array();
    const std::string what =
        v.name() + " scan of " + std::to_string(n) + " " + dtype_name(problem_.type) + " elements";
    // The sentinel: 0xA5 bytes for integers (far from any generated prefix), NaN for floats.
    // On the device, a host write, not a fill: Oclgrind would report the kernels' later loads of
    // a filled buffer as uninitialised.
    const unsigned char sentinel = is_float(problem_.acc_type) ? 0xFF : 0xA5;
    FinalRun final_runs(cfg_);  // only the last run, the one verified, starts from it
    time_device(
        rec,
        [&] {
          if (!final_runs.next()) return;
          host_out_.assign(host_out_.size(), sentinel);
          array.prepare_scan(what);
        },
        [&](std::vector<cl::Event>& events) { array.scan(*plan, events, what); });
    set_layout(rec, layout_, upload_ms_);
    rec.result =
        Value::from_bytes(problem_.acc_type, host_out_.data() + out_bytes - problem_.acc_bytes());
  }
  const ScanMode mode{problem_.op, problem_.acc_type, problem_.exclusive};
  // Each chunk's carry comes through the chunks before it: one more operation per chunk.
  const std::uint64_t depth = plan ? plan->depth() + (layout_.chunks > 1 ? layout_.chunks : 0) : 0;
  const ScanVerdict verdict = verify_scan(data_, mode, opts_.flags, depth, host_out_.data());
  rec.scan->first_wrong = verdict.first_wrong;
  rec.scan->wrong_count = verdict.wrong;
  finish(rec, verdict.ok, verdict.why, verdict.bound,
         static_cast<double>(data_.bytes.size() + out_bytes + flag_bytes));
  rec.overflow = verdict.overflow;
  if (output) {
    output->type = problem_.acc_type;
    output->n = n;
    output->bytes = host_out_;
  }
  return rec;
}

}  // namespace clreduce
