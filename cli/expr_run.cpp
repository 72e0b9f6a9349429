// expr_run.cpp: a user-defined reduction from the command line: its arrays, the law check, the
// timed runs and the verification against the one-work-item reference, printed as one row
// ("expr") in the table, JSON or CSV.
#include "expr_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>

#include "clreduce/error.hpp"
#include "core/checked.hpp"
#include "csv.hpp"
#include "exit_codes.hpp"
#include "io/data.hpp"
#include "io/npy.hpp"
#include "io/report.hpp"
#include "io/text.hpp"
#include "reduce/expr.hpp"
#include "reduce/expr_ops.hpp"
#include "run/chunks.hpp"
#include "run/expr_chunks.hpp"
#include "run/omp_rows.hpp"
#include "run/ranks.hpp"
#include "run/runner.hpp"
#include "run/shares.hpp"
#include "run/timing.hpp"
#include "runtime/device.hpp"
#include "runtime/transfer.hpp"
#include "scan/compact.hpp"

namespace clreduce {
namespace {

const char* const kNames = "x, y, z, w";

// gamma_k = k u / (1 - k u): the classic bound on k roundings of relative size u; infinite when
// k u >= 1 (no bound).
double gamma_k(double k, double u) {
  const double ku = k * u;
  return ku < 1.0 ? ku / (1.0 - ku) : std::numeric_limits<double>::infinity();
}

double unit_roundoff(DType t) {
  return t == DType::kFloat ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
}

std::string input_words(const ExprArgs& a, std::size_t k) {
  return a.inputs[k] == "-" ? std::string("standard input") : "--input " + printable(a.inputs[k]);
}

}  // namespace

void check_expr_args(const ExprArgs& a) {
  if (a.op.empty()) {
    check_expression("--map", a.map);
    check_expression("--reduce", a.reduce);
    check_expression("--identity", a.identity);
    if (!a.post.empty()) check_expression("--post", a.post);
  } else if (!is_expr_op(a.op) && !is_builtin_row(a.op)) {
    throw Error(Errc::kUsage, "--op " + a.op + " is not a row of the reduction engine");
  }
  if (!a.where.empty()) check_expression("--where", a.where);
  if (a.inputs.size() > kMaxExprInputs)
    throw Error(Errc::kUsage, "--input is given " + std::to_string(a.inputs.size()) +
                                  " times: a user reduction takes at most 4 arrays (" + kNames +
                                  ")");
  if (std::count(a.inputs.begin(), a.inputs.end(), "-") > 1)
    throw Error(Errc::kUsage, "--input - is given more than once: standard input is one array");
  const std::size_t named = inputs_named(a.map);
  if (a.op.empty() && !a.inputs.empty() && a.inputs.size() < named)
    throw Error(Errc::kUsage, "--map '" + printable(a.map) + "' names " +
                                  std::string(1, "xyzw"[named - 1]) + ", but " +
                                  std::to_string(a.inputs.size()) + " array" +
                                  (a.inputs.size() == 1 ? " is" : "s are") +
                                  " given (--input once per array: " + kNames + ")");
  if (!a.op.empty() && !a.inputs.empty() && a.inputs.size() < expr_op_arrays(a.op))
    throw Error(Errc::kUsage, "--op " + a.op + " takes " + std::to_string(expr_op_arrays(a.op)) +
                                  " arrays, but " + std::to_string(a.inputs.size()) +
                                  " is given (--input once per array)");
  const std::size_t in_where = a.where.empty() ? 1 : inputs_named(a.where);
  if (!a.inputs.empty() && a.inputs.size() < in_where)
    throw Error(Errc::kUsage, "--where '" + printable(a.where) + "' names " +
                                  std::string(1, "xyzw"[in_where - 1]) + ", but " +
                                  std::to_string(a.inputs.size()) + " array" +
                                  (a.inputs.size() == 1 ? " is" : "s are") +
                                  " given (--input once per array: " + kNames + ")");
}

int run_expr(const ExprArgs& a, const std::vector<Context*>& ctxs,
             const std::vector<double>& share_weights,
             const std::function<HostArray(const std::string&)>& read, const ExprRanks& mpi) {
  Context& ctx = *ctxs.front();
  const DeviceInfo& dev = ctx.info();
  // MPI ranks: this rank holds its slice of the arrays; rank 0 holds the whole arrays besides
  // (the checks and the reference are its), its slice a view of them.
  const bool ranked = mpi.ranks && mpi.ranks->many();
  const bool root = !ranked || mpi.ranks->root();
  std::uint64_t total = a.n;  // elements of the whole arrays
  if (ranked && !a.inputs.empty()) {
    total = npy_info(a.inputs.front()).n;
    for (std::size_t k = 1; k < a.inputs.size(); ++k)
      if (npy_info(a.inputs[k]).n != total)
        throw Error(Errc::kUsage, input_words(a, k) + " has " +
                                      std::to_string(npy_info(a.inputs[k]).n) + " elements and " +
                                      input_words(a, 0) + " " + std::to_string(total) +
                                      ": the arrays of a user reduction must have one length");
  }
  const Slice slice = ranked ? rank_slice(total, mpi.ranks->rank, mpi.ranks->size) : Slice{};
  // ---- The arrays: read (one length), or generated, as many as the map names (array k from
  // seed + k).
  // The memory they take is checked before any is made (exit 5 with the figures, never a wrapped
  // size or an abort inside the runtime): the generated arrays, and the device's copies of every
  // array (CL_MEM_COPY_HOST_PTR: host memory on a CPU device).
  const bool cpu = dev.type == "CPU";
  std::vector<HostArray> arrays;
  if (!a.inputs.empty()) {
    for (std::size_t k = 0; k < a.inputs.size(); ++k) {
      arrays.push_back(root ? read(a.inputs[k])
                            : read_npy_slice(a.inputs[k], slice.first, slice.count));
      if (a.type_given && arrays.back().type != parse_dtype(a.type))
        throw Error(Errc::kUsage, input_words(a, k) + " holds " + dtype_name(arrays.back().type) +
                                      ", not --type " + a.type);
      if (arrays.back().n != arrays.front().n)
        throw Error(Errc::kUsage, input_words(a, k) + " has " + std::to_string(arrays.back().n) +
                                      " elements and " + input_words(a, 0) + " " +
                                      std::to_string(arrays.front().n) +
                                      ": the arrays of a user reduction must have one length");
    }
    MemoryNeed need;
    for (const HostArray& h : arrays)
      if (cpu) need.add("the device's copies", h.bytes.size());
    check_host_memory(need);
  } else {
    const DType t = parse_dtype(a.type);
    const std::size_t count = std::max({a.op.empty() ? inputs_named(a.map) : expr_op_arrays(a.op),
                                        a.where.empty() ? std::size_t{1} : inputs_named(a.where)});
    const std::uint64_t each = sat_mul(root ? a.n : slice.count, dtype_size(t));
    MemoryNeed need;
    need.add("the arrays", sat_mul(count, each));
    if (cpu) need.add("the device's copies", sat_mul(count, each));
    check_host_memory(need);
    for (std::size_t k = 0; k < count; ++k)
      arrays.push_back(root ? generate(t, a.n, a.seed + k)
                            : generate(t, slice.count, a.seed + k, slice.first));
    if (!a.save_input.empty()) write_npy(a.save_input, arrays.front());
  }
  const std::size_t n = root ? arrays.front().n : total;
  const bool row = !a.op.empty();
  ExprSpec spec;
  std::vector<DType> types;
  for (const HostArray& h : arrays) types.push_back(h.type);
  if (row) {
    ExprOpOptions o;
    o.where = a.where;
    o.ddof = a.ddof;
    o.fp64 = dev.fp64;
    o.acc = a.acc;
    if (n > 0 && root) o.shift = element_value(arrays.front(), 0);
    if (n > 0 && !root)  // the whole array's first element, as rank 0 has it
      o.shift = element_value(a.inputs.empty() ? generate(types.front(), 1, a.seed, 0)
                                               : read_npy_slice(a.inputs.front(), 0, 1),
                              0);
    o.second_pass = true;  // var's, below
    set_row_tuning(o, ctx.tuning());
    spec = expr_op_spec(a.op, types, o);
    if (n == 0 && expr_op_needs_elements(a.op))
      throw Error(Errc::kUsage, "--op " + a.op + " of an empty array has no identity (n = 0)");
  } else {
    spec.map = a.map;
    spec.reduce = a.reduce;
    spec.identity = a.identity;
    spec.post = a.post;
    spec.where = a.where;
    spec.inputs = types;
    spec.acc = a.acc.empty() ? default_expr_acc(spec.inputs) : parse_dtype(a.acc);
  }
  bool fp64 = spec.acc == DType::kDouble;
  for (DType t : spec.inputs) fp64 = fp64 || t == DType::kDouble;
  for (const Context* c : ctxs)
    if (fp64 && !c->info().fp64)
      throw Error(Errc::kUnsupported,
                  c->info().name + " has no double precision (cl_khr_fp64); try float");
  double bytes = 0;
  for (const HostArray& h : arrays) bytes += static_cast<double>(h.bytes.size());
  const TimeLimit timeout = ctx.time_limit(bytes);

  // ---- The arrays on the device, as every run's: whole, in chunks past one allocation (or
  // --max-chunk), streamed past device memory, or in place (run/expr_chunks.hpp); the kernels
  // built for one chunk (a compile error names the expression).
  // Several devices: each reduces its share of the arrays (contiguous, in order; --shares
  // weighs them) to one accumulator, and the shares' accumulators are folded in share order on
  // the first device, as a chunk's are. The checks (laws, --where's values, the reference) run
  // on the first device over the whole arrays.
  struct Share {
    Context* ctx = nullptr;
    std::uint64_t first = 0;
    std::vector<HostArray> views;  // several devices, rank 0 of several: views of the arrays
    bool viewed = false;
    std::unique_ptr<ExprArrays> xa;
    std::unique_ptr<ExprReduction> er;
    cl::Buffer out;
    std::vector<unsigned char> acc;
    std::vector<Sample> samples;
    double upload_ms = 0.0;
  };
  const std::size_t devices = ctxs.size();
  // Shares start where every device may take every array in place (device_share_grain()).
  std::vector<std::size_t> sizes;
  for (const HostArray& h : arrays) sizes.push_back(dtype_size(h.type));
  const std::vector<std::size_t> counts =
      devices > 1
          ? split_shares(n,
                         share_weights.empty() ? std::vector<double>(devices, 1.0) : share_weights,
                         device_share_grain(ctxs, sizes))
          : std::vector<std::size_t>{n};
  std::vector<Share> shares;
  std::uint64_t next = 0;
  if (ranked) {  // one device a rank: its slice
    Share sh;
    sh.ctx = ctxs.front();
    sh.first = slice.first;
    sh.viewed = root;
    if (root)
      for (const HostArray& h : arrays) sh.views.push_back(view_of(h, slice.first, slice.count));
    shares.push_back(std::move(sh));
  }
  for (std::size_t d = 0; d < devices && !ranked; ++d) {
    // Empty shares run nothing (the first stays when every share is: the identity).
    if (counts[d] == 0 && !(d == 0 && n == 0)) continue;
    Share sh;
    sh.ctx = ctxs[d];
    sh.first = next;
    sh.viewed = devices > 1;
    if (devices > 1)
      for (const HostArray& h : arrays) sh.views.push_back(view_of(h, next, counts[d]));
    next += counts[d];
    shares.push_back(std::move(sh));
  }
  double upload_ms = 0.0;
  std::uint64_t depth = 0;  // the launches' depth, the chunks' fold and the shares' after them
  for (Share& sh : shares) {
    sh.xa = std::make_unique<ExprArrays>(*sh.ctx, sh.viewed ? sh.views : arrays);
    sh.er = std::make_unique<ExprReduction>(*sh.ctx, spec, sh.xa->plan_n(), a.local_size);
    if (a.verbose)
      std::cerr << "expr: " << sh.ctx->info().name << ": " << sh.er->policy().str() << ", "
                << sh.xa->layout().str() << "\n";
    sh.upload_ms = sh.xa->upload("the user reduction's arrays");
    upload_ms += sh.upload_ms;
    depth = std::max(depth, sh.er->depth() + sh.xa->fold_depth());
    sh.out = sh.ctx->zeroed_buffer(sh.er->acc_bytes());
  }
  // The pieces folded after the launches: the shares, or the ranks' slices.
  const std::size_t pieces = ranked ? static_cast<std::size_t>(mpi.ranks->size) : shares.size();
  depth += pieces - 1;
  // The first device's (rank 0's): the whole arrays for the checks, and the fold of the shares.
  std::unique_ptr<ExprArrays> whole_arrays;
  std::unique_ptr<ExprReduction> checks;
  if (devices > 1 || (ranked && root)) {
    whole_arrays = std::make_unique<ExprArrays>(ctx, arrays);
    whole_arrays->upload("the user reduction's arrays (for the checks)");
    checks = std::make_unique<ExprReduction>(ctx, spec, 1, a.local_size, false);
  }
  ExprArrays& xa = whole_arrays ? *whole_arrays : *shares.front().xa;
  ExprReduction& er = checks ? *checks : *shares.front().er;

  // ---- The laws, before any tree is trusted with the reduce (the rows are proven): on sample
  // values of the first chunk (rank 0's, under MPI).
  if (!row && root) {
    ExprLaws laws;
    xa.each([&](std::size_t, std::size_t len,
                const std::vector<cl::Buffer>& in) { laws = er.check_laws(in, len, timeout); },
            1);
    if (!laws.failure.empty()) throw Error(Errc::kUsage, laws.failure);
    if (a.verbose)
      std::cerr << "expr: the reduce's laws held on " << laws.triples << " triples of "
                << laws.samples << " values\n";
  }

  // ---- The reference: a row's on the host (the predicate evaluated on the device, 2^20
  // elements at a time), user expressions' by one work-item.
  double magnitude = 0.0;
  bool wider = false;
  std::vector<cl::Event> seq_events;
  Value reference;
  ExprOpReference op_ref;
  std::vector<unsigned char> mask;
  if (row && root) {
    if (!a.where.empty()) {
      // From the reduction's own program (its predicate is the user's --where).
      const double t0 = now_ms();
      mask = where_mask(
          er,
          [&](const ExprReduction::ExprPieceFn& f) {
            xa.each([&](std::size_t, std::size_t len, const std::vector<cl::Buffer>& in) {
              f(in, len);
            });
          },
          n, timeout);
      if (a.verbose) std::cerr << "expr: --where evaluated in " << now_ms() - t0 << " ms\n";
    }
    op_ref =
        expr_op_reference(a.op, arrays, mask, a.ddof,
                          expr_op_result_type(a.op, spec.inputs.front(), spec.acc), depth, &spec);
    reference = op_ref.value;
    if (op_ref.count == 0 && expr_op_needs_elements(a.op))
      throw Error(Errc::kUsage, "--where '" + printable(a.where) + "' holds for no element: --op " +
                                    a.op +
                                    " has no identity (NumPy: zero-size array to reduction "
                                    "operation, or where= without initial=)");
  } else if (root) {
    reference = er.reference(
        [&](const ExprReduction::ExprPieceFn& f) {
          xa.each(
              [&](std::size_t, std::size_t len, const std::vector<cl::Buffer>& in) { f(in, len); });
        },
        timeout, &magnitude, &wider, seq_events);
  }
  // MPI: every rank has met what it could meet alone (files, kernels, the checks): the ranks
  // start the runs together, or stop together.
  if (ranked)
    if (const int c = mpi.start(); c >= 0) return c;
  RunRecord rec;
  rec.variant = "expr";
  rec.op_text = row ? a.op : "expr";
  if (is_builtin_row(a.op)) rec.op = parse_op(a.op);  // arg ops print their index
  rec.minmax = a.op == "minmax";
  rec.type = spec.inputs.front();
  rec.acc = spec.acc;
  rec.n = n;
  rec.device = dev.name;
  rec.seq_ms = events_ms(seq_events);
  rec.seq_runs = row ? 0 : 1;
  rec.policy = shares.front().er->policy();
  rec.chunks = 0;
  for (const Share& sh : shares) {
    rec.chunks += sh.xa->layout().chunks;
    if (devices > 1)
      rec.layout += (rec.layout.empty() ? "" : "; ") + std::string("device ") +
                    std::to_string(sh.ctx->info().index) + ": " +
                    std::to_string(sh.xa->layout().n) + " (" + sh.xa->layout().str() + ")";
  }
  rec.layout = devices > 1 ? std::to_string(shares.size()) + " devices: " + rec.layout
                           : shares.front().xa->layout().str();
  if (ranked) {
    rec.ranks = mpi.ranks->size;
    rec.layout = std::to_string(mpi.ranks->size) + " ranks: rank 0's slice " + rec.layout;
  }
  rec.upload_ms = upload_ms;
  rec.seed = a.seed;
  rec.warmup = a.warmup;
  rec.repeat = a.repeat;
  for (const std::string& f : a.inputs) rec.input += (rec.input.empty() ? "" : ",") + f;
  Value result = reference;
  double last_shift = spec.shift;  // var's shifted sums: the shift of the pass that gave got
  const std::size_t as = er.acc_bytes();
  std::vector<unsigned char> got(as);
  if (n > 0 || row) {
    const std::vector<unsigned char> sentinel(as, 0x5A);
    // Several devices: the shares' accumulators, in share order at an aligned stride, folded
    // on the first device.
    const std::size_t stride = (as + ctx.base_align() - 1) / ctx.base_align() * ctx.base_align();
    std::vector<unsigned char> accs(pieces * stride, 0);
    const cl::Buffer accs_buf = ctx.zeroed_buffer(accs.size());
    const bool fold = devices > 1 || ranked;
    const cl::Buffer out = fold ? ctx.zeroed_buffer(as) : shares.front().out;
    std::vector<cl::Event> fold_events;
    std::uint64_t run_index = 0;
    const auto sentinels = [&] {
      for (Share& sh : shares) {
        enqueue_write(sh.ctx->queue(), sh.out, 0, as, sentinel.data(),
                      sh.ctx->tuning().transfer_piece);
        finish(sh.ctx->queue(), timeout, "the user reduction's sentinel");
      }
    };
    // One pass over the arrays: every share's launch, and their fold, into got; s[d] the
    // shares' own samples.
    const auto pass = [&](std::vector<Sample>& s) {
      run_parallel(
          shares.size(),
          [&](std::size_t d) {
            Share& sh = shares[d];
            std::vector<cl::Event> events;
            const double t = now_ms();
            sh.xa->enqueue(*sh.er, sh.out, events, sh.first);
            wait(events.back(), timeout, "the user reduction");
            sh.acc.resize(as);
            enqueue_read(sh.ctx->queue(), sh.out, 0, as, sh.acc.data(),
                         sh.ctx->tuning().transfer_piece);
            finish(sh.ctx->queue(), timeout, "the user reduction's result");
            s[d] = Sample{events_ms(events), now_ms() - t, events.size()};
          },
          ctx.tuning().share_threads == "on");
      Sample all{0.0, 0.0, 0};
      for (const Sample& x : s) {
        all.kernel_ms = std::max(all.kernel_ms, x.kernel_ms);
        all.launches += x.launches;
      }
      if (fold) {
        // MPI: every rank's accumulator at every rank (rank order), each folding them alike.
        const std::vector<unsigned char> each =
            ranked ? gather_bytes_ranks(shares.front().acc) : std::vector<unsigned char>();
        for (std::size_t d = 0; d < pieces; ++d)
          std::memcpy(accs.data() + d * stride,
                      ranked ? each.data() + d * as : shares[d].acc.data(), as);
        enqueue_write(ctx.queue(), accs_buf, 0, accs.size(), accs.data(),
                      ctx.tuning().transfer_piece);
        fold_events.clear();
        er.enqueue_fold(accs_buf, stride, pieces, out, fold_events);
        ctx.queue().flush();
        wait(fold_events.back(), timeout, "the fold of the devices' shares");
        enqueue_read(ctx.queue(), out, 0, as, got.data(), ctx.tuning().transfer_piece);
        finish(ctx.queue(), timeout, "the user reduction's result");
        all.kernel_ms += events_ms(fold_events);
        all.launches += fold_events.size();
      } else {
        got = shares.front().acc;
      }
      return all;
    };
    // var and std as shifted sums: the decision on the second pass takes the largest depth of
    // the ranks', so that every rank makes the same one.
    std::uint64_t decide_depth = depth;
    if (ranked && spec.var_sums)
      for (double d : gather_ranks(static_cast<double>(depth)))
        decide_depth = std::max(decide_depth, static_cast<std::uint64_t>(d));
    const auto run = [&] {
      sentinels();
      std::vector<Sample> s(shares.size());
      const double t0 = now_ms();
      Sample all = pass(s);
      last_shift = spec.shift;
      if (spec.var_sums) {
        const double c = var_second_shift(spec, got, n, decide_depth);
        if (!std::isnan(c)) {
          // The first pass's condition needs a second one, shifted by its mean.
          for (Share& sh : shares) sh.er->set_shift(c);
          sentinels();
          std::vector<Sample> s2(shares.size());
          const Sample second = pass(s2);
          for (Share& sh : shares) sh.er->set_shift(spec.shift);
          all.kernel_ms += second.kernel_ms;
          all.launches += second.launches;
          for (std::size_t d = 0; d < shares.size(); ++d) {
            s[d].kernel_ms += s2[d].kernel_ms;
            s[d].wall_ms += s2[d].wall_ms;
            s[d].launches += s2[d].launches;
          }
          last_shift = c;
        }
      }
      all.wall_ms = now_ms() - t0;
      if (run_index++ >= static_cast<std::uint64_t>(a.warmup))
        for (std::size_t d = 0; d < shares.size(); ++d) shares[d].samples.push_back(s[d]);
      return all;
    };
    set_timings(rec, repeat_runs(static_cast<std::uint64_t>(a.warmup),
                                 static_cast<std::uint64_t>(a.repeat), run));
    if (!row) result = Value::from_bytes(spec.acc, got.data());
  }
  if (row && root && last_shift != spec.shift) {
    // var's second pass gave the result: its bound, about its shift.
    ExprSpec used = spec;
    used.shift = last_shift;
    if (a.verbose)
      std::cerr << "expr: --op " << a.op << ": a second pass shifted by the first's mean, "
                << Value{DType::kDouble, 0, 0, last_shift, -1}.str() << "\n";
    op_ref = expr_op_reference(a.op, arrays, mask, a.ddof, spec.acc, depth, &used);
    reference = op_ref.value;
  }
  bool ok = true;
  std::string why;
  double bound = 0.0;
  const auto distance = [](double d) { return Value{DType::kDouble, 0, 0, d, -1}.str(); };
  if (row) {
    // ---- A row: post on the device, then the host's reference: integers, min, max and arg
    // ops equal (values and indices), a non-finite reference the same, else within the op's
    // bound. An indexed accumulator is read here: its value (values) of acc, then the index.
    const DType rt = expr_op_result_type(a.op, spec.inputs.front(), spec.acc);
    const auto at = [&](std::size_t value_at, std::size_t index_at) {
      Value v = Value::from_bytes(spec.acc, got.data() + value_at);
      v.type = rt;
      if (spec.acc == DType::kInt64) v.u = static_cast<std::uint64_t>(v.i);
      if (spec.acc == DType::kUInt64) v.i = static_cast<std::int64_t>(v.u);
      if (index_at != SIZE_MAX) std::memcpy(&v.index, got.data() + index_at, 8);
      return v;
    };
    const std::size_t vs = dtype_size(spec.acc);
    Value result_max;
    if (spec.arg == 1) {
      result = at(0, 8);
    } else if (spec.arg == 2) {
      result = at(0, 2 * vs);
      result_max = at(vs, 2 * vs + 8);
    } else if (expr_op_needs_elements(a.op)) {
      result = at(0, SIZE_MAX);
    } else {
      result = er.post_bytes(got, n, timeout).front();
    }
    rec.result = result;
    rec.expected = reference;
    rec.result_max = result_max;
    rec.expected_max = op_ref.value2;
    if (op_ref.exact) {
      const auto same = [&](const Value& p, const Value& q) {
        const bool v = is_float(p.type)    ? p.f == q.f || (std::isnan(p.f) && std::isnan(q.f))
                       : is_signed(p.type) ? p.i == q.i
                                           : p.u == q.u;
        return v && p.index == q.index;
      };
      ok = same(result, reference) && (spec.arg != 2 || same(result_max, op_ref.value2));
      if (!ok)
        why = is_float(rt) || spec.arg ? "results and indices must be equal"
                                       : "integer results must be equal";
    } else {
      bound = op_ref.bound;
      const bool same =
          result.f == reference.f || (std::isnan(result.f) && std::isnan(reference.f));
      ok = same || (std::isfinite(result.f) && std::isfinite(reference.f) &&
                    std::fabs(result.f - reference.f) <= bound);
      if (!ok && op_ref.may_overflow && !std::isfinite(result.f)) {
        ok = true;
        rec.overflow = true;
        why = "the " + a.op + " overflows " + dtype_name(spec.acc) +
              " in the order this device took (the exact value is " + reference.str() + ")";
      } else if (!ok) {
        why = "|result - reference| = " + distance(std::fabs(result.f - reference.f)) +
              " exceeds the bound " + distance(bound);
      }
    }
    if (root && op_ref.count == 0 && (a.op == "mean" || a.op == "var" || a.op == "std"))
      std::cerr << "clreduce: warning: --op " << a.op
                << " of an empty selection is nan (NumPy's answer, with its warning)\n";
    else if (root && (a.op == "var" || a.op == "std") &&
             a.ddof >= static_cast<double>(op_ref.count))
      std::cerr << "clreduce: warning: --ddof " << Value{DType::kDouble, 0, 0, a.ddof, -1}.str()
                << " is not below the count " << op_ref.count
                << ": the divisor is 0 (NumPy's inf or nan, with its warning)\n";
  } else {
    // ---- Verified before post: integers exactly; floats within (gamma_depth + gamma_n') times
    // the larger of the reference's magnitude and the same fold of |map| (n' and the second
    // roundoff are the reference's: double for a float accumulator where it builds so).
    Value expected = reference;
    if (is_float(spec.acc)) {
      expected.type = spec.acc;
      if (spec.acc == DType::kFloat) expected.f = static_cast<float>(reference.f);
      const double scale = std::max(magnitude, std::fabs(reference.f));
      bound = (gamma_k(static_cast<double>(depth), unit_roundoff(spec.acc)) +
               gamma_k(static_cast<double>(n), unit_roundoff(wider ? DType::kDouble : spec.acc))) *
              scale;
      const bool same =
          result.f == reference.f || (std::isnan(result.f) && std::isnan(reference.f));
      ok = same || (std::isfinite(result.f) && std::isfinite(reference.f) &&
                    std::fabs(result.f - reference.f) <= bound);
      if (!ok)
        why = "|result - reference| = " + distance(std::fabs(result.f - reference.f)) +
              " exceeds the bound " + distance(bound);
    } else {
      ok = is_signed(spec.acc) ? result.i == reference.i : result.u == reference.u;
      if (!ok) why = "integer results must be equal";
    }
    // ---- Post, on the device, applied alike to the result and to the reference.
    const std::vector<Value> posted = er.post({result, expected}, n, timeout);
    rec.result = posted[0];
    rec.expected = posted[1];
  }
  // MPI: every rank folded the same accumulators; rank 0's verdict against the whole arrays'
  // reference is every rank's.
  if (ranked) ok = all_ranks(root ? ok : true);
  rec.verified = ok;
  rec.verify_note = why;
  rec.bound = bound;
  if (rec.kernel_ms > 0) {
    rec.gbps = bytes / (rec.kernel_ms * 1e6);
    if (rec.seq_ms > 0) rec.speedup = rec.seq_ms / rec.kernel_ms;
  }

  // ---- The OpenMP peer (--peers): the row's own loop over the host's arrays, timed as the
  // engine is, checked against the same reference within the peer's bound; the row's vs_omp.
  RunRecord omp;
  if (a.peers) {
    omp = peer_row(rec);
    omp.expected = rec.expected;
    omp.expected_max = rec.expected_max;
    omp.skip_reason = !row     ? "the OpenMP peer has no user expressions (OpenCL C); it has --op "
                                 "dot, mean, var, std, norm2, minmax and logsumexp"
                      : n == 0 ? "nothing to reduce (n = 0)"
                               : omp_row_unsupported(a.op, spec.inputs, !a.where.empty());
    omp.skipped = !omp.skip_reason.empty();
    if (!omp.skipped) {
      const OmpRowResult p = omp_row(a.op, arrays, a.ddof, static_cast<std::uint64_t>(a.warmup),
                                     static_cast<std::uint64_t>(a.repeat));
      omp.acc = p.value.type;
      omp.result = p.value;
      omp.result_max = p.value2;
      set_peer_timing(omp, p.timing);
      if (p.exact) {
        const auto same = [](const Value& g, const Value& e) {
          const bool v = is_float(g.type)    ? g.f == e.f || (std::isnan(g.f) && std::isnan(e.f))
                         : is_signed(g.type) ? g.i == e.i
                                             : g.u == e.u;
          return v && g.index == e.index;
        };
        omp.verified = same(p.value, reference) && same(p.value2, op_ref.value2);
        if (!omp.verified) omp.verify_note = "results and indices must be equal";
      } else {
        // The peer's bound, and the reference's own rounding where it is float.
        omp.bound =
            p.bound +
            (reference.type == DType::kFloat ? std::ldexp(1.0, -24) * std::fabs(reference.f) : 0.0);
        omp.verified = p.value.f == reference.f ||
                       (std::isnan(p.value.f) && std::isnan(reference.f)) ||
                       (std::isfinite(p.value.f) && std::isfinite(reference.f) &&
                        std::fabs(p.value.f - reference.f) <= omp.bound);
        if (!omp.verified)
          omp.verify_note =
              std::isfinite(p.value.f) && std::isfinite(reference.f)
                  ? "|result - reference| = " + distance(std::fabs(p.value.f - reference.f)) +
                        " exceeds the bound " + distance(omp.bound)
                  : "the peer's result is " + p.value.str() + " where the reference is " +
                        reference.str() + " (its " + dtype_name(p.value.type) +
                        " arithmetic overflows or meets NaN in another place)";
      }
      if (omp.kernel_ms > 0) omp.gbps = bytes / (omp.kernel_ms * 1e6);
      omp.noisy = noisy_spread(omp.kernel_ms_min, omp.kernel_ms_max);
    }
    rec.noisy = noisy_spread(rec.kernel_ms_min, rec.kernel_ms_max);
    add_vs_omp(rec, omp);
  }

  // ---- Printed as every run is.
  if (a.format == "table") {
    if (devices > 1) {
      std::string ids, names;
      for (const Context* c : ctxs) {
        ids += (ids.empty() ? "" : ", ") + std::to_string(c->info().index);
        names += (names.empty() ? "" : " + ") + c->info().name;
      }
      std::cout << "devices " << ids << ": " << names << "  ";
    } else {
      std::cout << "device " << dev.index << ": " << dev.name << " (" << dev.platform_name << ")  ";
    }
    if (row)
      std::cout << "op: " << a.op
                << (a.op == "var" || a.op == "std"
                        ? " --ddof " + Value{DType::kDouble, 0, 0, a.ddof, -1}.str()
                        : std::string());
    else
      std::cout << "expr: --map '" << printable(a.map) << "' --reduce '" << printable(a.reduce)
                << "' --identity '" << printable(a.identity) << "'"
                << (a.post.empty() ? "" : " --post '" + printable(a.post) + "'");
    std::cout << (a.where.empty() ? "" : " --where '" + printable(a.where) + "'") << "  acc "
              << dtype_name(spec.acc) << (spec.width > 1 ? " x" + std::to_string(spec.width) : "")
              << "  n = " << n << "  arrays = " << arrays.size()
              << (row ? "  checked against the host's reference\n" : "  seq ms: one work-item\n")
              << table_header(a.peers, false) << (a.peers ? table_row(omp, true, false) : "")
              << table_row(rec, a.peers, false)
              << (rec.noisy || omp.noisy ? noisy_footnote(false) : "");
  } else if (a.format == "json") {
    if (a.peers) std::cout << to_json(omp) << "\n";
    std::cout << to_json(rec) << "\n";
  } else {
    std::cout << csv_header(run_csv_columns());
    if (a.peers) std::cout << csv_row(to_json(omp), run_csv_columns());
    std::cout << csv_row(to_json(rec), run_csv_columns());
  }
  // A peer that did not verify fails the run, as a variant would.
  return ok && (omp.skipped || omp.verified || !a.peers) ? kExitOk : kExitVerify;
}

int run_select(const ExprArgs& a, const std::string& output, Context& ctx,
               const std::function<HostArray(const std::string&)>& read) {
  const DeviceInfo& dev = ctx.info();
  check_expression("--where", a.where);
  HostArray x;
  if (!a.inputs.empty()) {
    x = read(a.inputs.front());
    if (a.type_given && x.type != parse_dtype(a.type))
      throw Error(Errc::kUsage,
                  input_words(a, 0) + " holds " + dtype_name(x.type) + ", not --type " + a.type);
    MemoryNeed need;
    if (dev.type == "CPU") need.add("the device's copies", 2 * x.bytes.size());
    need.add("the selection read back", x.bytes.size());
    check_host_memory(need);
  } else {
    const DType t = parse_dtype(a.type);
    const std::uint64_t each = sat_mul(a.n, dtype_size(t));
    MemoryNeed need;
    need.add("the array and the selection read back", sat_mul(2, each));
    if (dev.type == "CPU") need.add("the device's copies", sat_mul(2, each));
    check_host_memory(need);
    x = generate(t, a.n, a.seed);
  }
  const std::size_t n = x.n, elem = dtype_size(x.type);
  if (x.type == DType::kDouble && !dev.fp64)
    throw Error(Errc::kUnsupported, dev.name + " has no double precision (cl_khr_fp64); try float");
  if (x.bytes.size() > dev.max_alloc)
    throw Error(Errc::kUnsupported, "the array (" + std::to_string(x.bytes.size()) +
                                        " bytes) is larger than " + dev.name +
                                        "'s largest allocation (" + std::to_string(dev.max_alloc) +
                                        " bytes): --op select does not run in chunks yet");
  const TimeLimit timeout = ctx.time_limit(2.0 * static_cast<double>(x.bytes.size()));

  // ---- The compaction's kernels (a compile error names --where), the arrays on the device.
  CompactWhere where;
  where.expr = a.where;
  Compactor c(ctx, x.type, n, where, false, a.local_size);
  if (a.verbose) std::cerr << "select: scan " << c.scan().policy().str() << "\n";
  const cl::Buffer in = n ? cl::Buffer(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                       x.bytes.size(), x.bytes.data())
                          : ctx.zeroed_buffer(1);
  const cl::Buffer out = ctx.zeroed_buffer(std::max<std::size_t>(x.bytes.size(), 1));
  const cl::Buffer count = ctx.zeroed_buffer(8);

  // ---- The reference: the predicate's value at each element by the reduction engine's kernel
  // (2^20 elements at a time), the kept elements in order on the host.
  HostArray want;
  want.type = x.type;
  {
    ExprSpec ms;
    ms.map = "1";
    ms.reduce = "a + b";
    ms.identity = "0";
    ms.where = a.where;
    ms.inputs = {x.type};
    ms.acc = DType::kInt32;
    ExprReduction me(ctx, ms, n, a.local_size);
    std::vector<unsigned char> kept;
    for (std::size_t first = 0; first < n; first += std::size_t{1} << 20) {
      const std::size_t len = std::min<std::size_t>(n - first, std::size_t{1} << 20);
      const std::vector<unsigned char> v = me.map_values({in}, first, len, timeout);
      for (std::size_t k = 0; k < len; ++k)
        if (v[4 * k] | v[4 * k + 1]) {
          const unsigned char* e = x.bytes.data() + (first + k) * elem;
          kept.insert(kept.end(), e, e + elem);
        }
    }
    want.n = kept.size() / elem;
    want.bytes.resize(kept.size());
    if (!kept.empty()) std::memcpy(want.bytes.data(), kept.data(), kept.size());
  }

  // ---- The timed runs, then the selection read back.
  RunRecord rec;
  rec.variant = "select";
  rec.op_text = "select";
  rec.type = x.type;
  rec.acc = DType::kUInt64;
  rec.n = n;
  rec.device = dev.name;
  rec.seed = a.seed;
  rec.warmup = a.warmup;
  rec.repeat = a.repeat;
  rec.policy = c.scan().policy();
  for (const std::string& f : a.inputs) rec.input += (rec.input.empty() ? "" : ",") + f;
  set_timings(rec, repeat_runs(static_cast<std::uint64_t>(a.warmup),
                               static_cast<std::uint64_t>(a.repeat), [&] {
                                 std::vector<cl::Event> events;
                                 const double t0 = now_ms();
                                 c.enqueue(in, n, out, count, 0, events);
                                 ctx.queue().flush();
                                 wait(events.back(), timeout, "the selection");
                                 const double t1 = now_ms();
                                 return Sample{events_ms(events), t1 - t0, events.size()};
                               }));
  std::uint64_t kept = 0;
  ctx.read(count, 8, &kept, "the selection's count");
  HostArray got;
  got.type = x.type;
  got.n = static_cast<std::size_t>(std::min<std::uint64_t>(kept, n));
  got.bytes.resize(got.n * elem);
  if (got.n) ctx.read(out, got.bytes.size(), got.bytes.data(), "the selection");
  bool ok = kept == want.n;
  std::string why;
  if (!ok) {
    why = "count " + std::to_string(kept) + ", expected " + std::to_string(want.n);
  } else {
    for (std::size_t i = 0; i < got.n; ++i)
      if (std::memcmp(got.bytes.data() + i * elem, want.bytes.data() + i * elem, elem) != 0) {
        ok = false;
        why = "element " + std::to_string(i) + " of the selection differs from the host's";
        break;
      }
  }
  rec.result = Value{DType::kUInt64, 0, kept, 0.0, -1};
  rec.expected = Value{DType::kUInt64, 0, want.n, 0.0, -1};
  rec.verified = ok;
  rec.verify_note = why;
  // Bytes moved: the array read twice (flags, scatter), the flags written and scanned, the kept
  // elements written.
  if (rec.kernel_ms > 0)
    rec.gbps = static_cast<double>(2 * x.bytes.size() + got.bytes.size()) / (rec.kernel_ms * 1e6);

  if (a.format == "table") {
    std::cout << "device " << dev.index << ": " << dev.name << " (" << dev.platform_name
              << ")  op: select --where '" << printable(a.where) << "'  n = " << n
              << "  kept = " << kept << "  checked against the host's compaction\n"
              << table_header(false, false) << table_row(rec, false, false);
  } else if (a.format == "json") {
    std::cout << to_json(rec) << "\n";
  } else {
    std::cout << csv_header(run_csv_columns()) << csv_row(to_json(rec), run_csv_columns());
  }
  if (!output.empty()) {
    if (!ok) std::cerr << "clreduce: writing " << printable(output) << ", which did not verify\n";
    write_npy(output, got);
  }
  return ok ? kExitOk : kExitVerify;
}

}  // namespace clreduce
