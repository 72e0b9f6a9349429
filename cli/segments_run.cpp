// segments_run.cpp: --offsets and --axis from the command line: the arrays and the layout, the
// law check (user reductions), the timed runs, every result checked against its own segment's
// sequential reference, one printed row ("segments") and the results written to --output.
#include "segments_run.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
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
#include "reduce/expr_check.hpp"
#include "reduce/expr_ops.hpp"
#include "reduce/segments.hpp"
#include "run/omp_rows.hpp"
#include "run/runner.hpp"
#include "run/shares.hpp"
#include "run/timing.hpp"
#include "runtime/device.hpp"
#include "runtime/transfer.hpp"
#include "verify/reference.hpp"

namespace clreduce {
namespace {

std::string input_words(const SegmentArgs& a, std::size_t k) {
  return a.inputs[k] == "-" ? std::string("standard input") : "--input " + printable(a.inputs[k]);
}

std::string shape_words(const std::vector<std::uint64_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// NumPy's name of a reduction, for its message about an empty one.
std::string numpy_name(Op op) {
  switch (op) {
    case Op::kMin: return "minimum";
    case Op::kMax: return "maximum";
    case Op::kArgMin: return "argmin";
    case Op::kArgMax: return "argmax";
    default: return op_name(op);
  }
}

// The dtype NumPy gives a row's results along an axis (types: the inputs'; acc: the engine's
// accumulator, acc_given: --acc): count int64 and any, all bool (count_nonzero, any, all); sum
// and prod NumPy's accumulator (float16's own type unless --acc) and min, max the element type;
// mean, var, std, norm2 and logsumexp the float input's type, float64 for integers and bool; dot
// as sum(x * y): the widest float of float inputs, float64 of mixed ones, else the accumulator.
DType numpy_row_type(const std::string& op, const std::vector<DType>& types, DType acc,
                     bool acc_given) {
  const DType t = types.front();
  if (op == "count") return DType::kInt64;
  if (op == "any" || op == "all") return DType::kBool;
  if (op == "min" || op == "max") return t;
  if (op == "sum" || op == "prod") return t == DType::kFloat16 && !acc_given ? t : acc;
  if (op == "dot") {
    bool any_f = false, all_f = true;
    DType widest = DType::kFloat16;
    for (DType u : types) {
      any_f = any_f || is_float(u);
      all_f = all_f && is_float(u);
      if (u == DType::kDouble || (u == DType::kFloat && widest == DType::kFloat16)) widest = u;
    }
    return all_f ? widest : any_f ? DType::kDouble : acc;
  }
  return is_float(t) ? t : DType::kDouble;
}

// v (a result of the engine, in its accumulator's type) as one element of type t.
void store_as(DType t, const Value& v, unsigned char* at) {
  const double d = is_float(v.type)    ? v.f
                   : is_signed(v.type) ? static_cast<double>(v.i)
                                       : static_cast<double>(v.u);
  if (t == DType::kFloat16) {
    const std::uint16_t h = double_to_half(d);
    std::memcpy(at, &h, 2);
  } else if (t == DType::kBool) {
    at[0] = d != 0 || std::isnan(d);
  } else if (is_float(t)) {
    dispatch_dtype(t, [&](auto zero) {
      const auto x = static_cast<decltype(zero)>(d);
      std::memcpy(at, &x, sizeof x);
    });
  } else {
    dispatch_dtype(t, [&](auto zero) {
      using V = decltype(zero);
      const V x = is_float(v.type)    ? static_cast<V>(v.f)
                  : is_signed(v.type) ? static_cast<V>(v.i)
                                      : static_cast<V>(v.u);
      std::memcpy(at, &x, sizeof x);
    });
  }
}

}  // namespace

std::vector<std::int64_t> parse_axes(const std::string& text) {
  std::vector<std::int64_t> axes;
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = text.find(',', pos);
    const std::string one = text.substr(pos, comma == std::string::npos ? comma : comma - pos);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(one.c_str(), &end, 10);
    if (one.empty() || end != one.c_str() + one.size() || errno == ERANGE ||
        std::isspace(static_cast<unsigned char>(one[0])) || v < -64 || v > 63)
      throw Error(Errc::kUsage, "--axis " + printable(text) + ": '" + printable(one) +
                                    "' is not an axis (an integer, negative from the end; "
                                    "several: --axis 0,2)");
    axes.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return axes;
}

int run_segments(
    const SegmentArgs& a, Context& ctx,
    const std::function<HostArray(const std::string&, std::vector<std::uint64_t>*)>& read) {
  const DeviceInfo& dev = ctx.info();
  const bool user = a.op.empty();
  const Op op = user || is_expr_op(a.op) ? Op::kSum : parse_op(a.op);
  // ---- The arrays: read with their shapes (one shape), or generated (1-D).
  std::vector<HostArray> arrays;
  std::vector<std::uint64_t> shape;
  if (!a.inputs.empty()) {
    for (std::size_t k = 0; k < a.inputs.size(); ++k) {
      std::vector<std::uint64_t> s;
      arrays.push_back(read(a.inputs[k], &s));
      if (a.type_given && arrays.back().type != parse_dtype(a.type))
        throw Error(Errc::kUsage, input_words(a, k) + " holds " + dtype_name(arrays.back().type) +
                                      ", not --type " + a.type);
      if (k == 0) shape = s;
      if (s != shape)
        throw Error(Errc::kUsage, input_words(a, k) + " has shape " + shape_words(s) + " and " +
                                      input_words(a, 0) + " " + shape_words(shape) +
                                      ": the arrays of a user reduction must have one shape");
    }
  } else {
    const DType t = parse_dtype(a.type);
    const std::size_t count = std::max(user ? inputs_named(a.map) : expr_op_arrays(a.op),
                                       a.where.empty() ? std::size_t{1} : inputs_named(a.where));
    MemoryNeed need;
    need.add("the arrays", sat_mul(count, sat_mul(a.n, dtype_size(t))));
    check_host_memory(need);
    for (std::size_t k = 0; k < count; ++k) arrays.push_back(generate(t, a.n, a.seed + k));
    shape = {a.n};
  }
  const HostArray& x = arrays.front();
  const std::size_t n = x.n;
  // A row of the engine (expr_ops.hpp): the derived ops, and the built-in ops with --where or on
  // the engine's input types (float16, bool, int8, uint8, int16, uint16).
  const bool row = !user && (is_expr_op(a.op) || !a.where.empty() || !is_variant_dtype(x.type));
  const bool expr = user || row;  // the engine's kernels
  if (row && is_builtin_row(a.op) && is_arg_op(op))
    throw Error(Errc::kUsage, "--op " + a.op + " with " +
                                  (a.axis_given ? std::string("--axis") : "--offsets") +
                                  " takes int32, uint32, int64, uint64, float or double, not " +
                                  dtype_name(x.type) + " (yet)");
  if (!row && !user && arrays.size() > 1)
    throw Error(Errc::kUsage, "--input is given " + std::to_string(arrays.size()) +
                                  " times: --op " + a.op + " reduces one array");
  if (a.axis_given && shape.size() == 1 && a.inputs.empty())
    throw Error(Errc::kUsage,
                "--axis needs an N-dimensional .npy (--input): generated arrays are "
                "1-D (for a 1-D array, --axis 0 is the whole reduction)");
  if (!a.axis_given && shape.size() != 1)
    throw Error(Errc::kUsage, input_words(a, 0) + " has shape " + shape_words(shape) +
                                  ": --offsets takes a 1-D array (an N-dimensional one: --axis)");
  // ---- The layout, and the shape NumPy gives the result.
  SegmentLayout layout;
  std::vector<std::uint64_t> out_shape;
  if (a.axis_given) {
    if (!expr && is_arg_op(op) && a.axes.size() != 1)
      throw Error(Errc::kUsage, "--op " + a.op + " takes one --axis, not " +
                                    std::to_string(a.axes.size()) + " (NumPy's " + a.op +
                                    " takes one axis)");
    AxisReduction r = axis_reduction(shape, a.axes, a.keepdims);
    layout = std::move(r.layout);
    out_shape = std::move(r.shape);
  } else {
    std::vector<std::uint64_t> oshape;
    const HostArray offs = read(a.offsets, &oshape);
    const std::string name = "--offsets " + printable(a.offsets);
    if (oshape.size() != 1)
      throw Error(Errc::kUsage,
                  name + " has shape " + shape_words(oshape) + ": offsets are a 1-D array");
    layout.offsets = check_offsets(offs, n, name);
    out_shape = {layout.results()};
  }
  const std::uint64_t m = layout.results();
  // ---- Empty segments: the identity where the op has one, else refused, naming the first.
  if (!user && !is_expr_op(a.op) && !has_identity(op))
    for (std::uint64_t q = 0; q < m; ++q)
      if (layout.length(q) == 0) {
        const std::string which = a.axis_given
                                      ? "--axis: the reduced axes hold no elements"
                                      : "segment " + std::to_string(q) + " ([" +
                                            std::to_string(layout.offsets[q]) + ", " +
                                            std::to_string(layout.offsets[q + 1]) + ")) is empty";
        throw Error(Errc::kUsage, which + ": --op " + a.op +
                                      " has no identity (NumPy: zero-size array to reduction "
                                      "operation " +
                                      numpy_name(op) + " which has no identity)");
      }
  // ---- The op.
  ExprSpec spec;
  DType acc = DType::kInt64;
  if (row) {
    ExprOpOptions o;
    o.where = a.where;
    o.ddof = a.ddof;
    o.fp64 = dev.fp64;
    o.acc = a.acc;
    if (n > 0) o.shift = element_value(x, 0);
    set_row_tuning(o, ctx.tuning());
    std::vector<DType> types;
    for (const HostArray& h : arrays) types.push_back(h.type);
    spec = expr_op_spec(a.op, types, o);
    acc = spec.acc;
  } else if (user) {
    spec.map = a.map;
    spec.reduce = a.reduce;
    spec.identity = a.identity;
    spec.post = a.post;
    spec.where = a.where;
    for (const HostArray& h : arrays) spec.inputs.push_back(h.type);
    spec.acc = a.acc.empty() ? default_expr_acc(spec.inputs) : parse_dtype(a.acc);
    acc = spec.acc;
  } else {
    acc = resolve_acc(op, x.type, a.acc);
  }
  bool fp64 = acc == DType::kDouble;
  for (const HostArray& h : arrays) fp64 = fp64 || h.type == DType::kDouble;
  if (fp64 && !dev.fp64)
    throw Error(Errc::kUnsupported, dev.name + " has no double precision (cl_khr_fp64); try float");
  double bytes = 0;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const std::uint64_t b = arrays[k].bytes.size();
    bytes += static_cast<double>(b);
    const std::uint64_t limit = ctx.tuning().max_chunk
                                    ? std::min<std::uint64_t>(ctx.tuning().max_chunk, dev.max_alloc)
                                    : dev.max_alloc;
    if (b > limit)
      throw Error(
          Errc::kUnsupported,
          "the array (" + std::to_string(b) + " bytes) is larger than " +
              (ctx.tuning().max_chunk ? "--max-chunk" : dev.name + "'s largest allocation") + " (" +
              std::to_string(limit) +
              " bytes): segments and axes do not run in "
              "chunks yet");
  }
  MemoryNeed need;
  if (dev.type == "CPU") need.add("the device's copies", static_cast<std::uint64_t>(bytes));
  need.add("the results", sat_mul(m, 4 * 16));
  check_host_memory(need);
  const TimeLimit timeout = ctx.time_limit(bytes);

  // ---- Kernels built, the arrays on the device, the laws of a user reduction checked.
  // The layout moves into the reduction (one offset per segment: not copied), read back there.
  std::unique_ptr<SegmentReduction> sr =
      expr ? std::make_unique<SegmentReduction>(ctx, spec, std::move(layout), a.local_size)
           : std::make_unique<SegmentReduction>(ctx, op, x.type, acc, std::move(layout),
                                                a.local_size);
  const SegmentLayout& lay = sr->layout();
  if (a.verbose) std::cerr << "segments: " << sr->policy().str() << "\n";
  std::vector<cl::Buffer> in;
  for (HostArray& h : arrays)
    in.push_back(n ? cl::Buffer(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                h.bytes.size(), h.bytes.data())
                   : ctx.zeroed_buffer(1));
  if (user) {
    const ExprLaws laws = sr->check_laws(in, n, a.local_size, timeout);
    if (!laws.failure.empty()) throw Error(Errc::kUsage, laws.failure);
    if (a.verbose)
      std::cerr << "segments: the reduce's laws held on " << laws.triples << " triples of "
                << laws.samples << " values\n";
  }

  // ---- The timed runs.
  RunRecord rec;
  rec.variant = "segments";
  rec.op = op;
  rec.op_text = user ? "expr" : a.op;
  rec.type = x.type;
  rec.acc = acc;
  rec.n = n;
  rec.device = dev.name;
  rec.policy = sr->policy();
  rec.seed = a.seed;
  rec.warmup = a.warmup;
  rec.repeat = a.repeat;
  for (const std::string& f : a.inputs) rec.input += (rec.input.empty() ? "" : ",") + f;
  const std::size_t ab = sr->acc_bytes();
  std::vector<unsigned char> got(std::max<std::uint64_t>(m, 1) * ab);
  if (m > 0) {
    cl::Buffer out = ctx.zeroed_buffer(m * ab);
    const std::vector<unsigned char> sentinel(m * ab, 0x5A);
    set_timings(rec, repeat_runs(static_cast<std::uint64_t>(a.warmup),
                                 static_cast<std::uint64_t>(a.repeat), [&] {
                                   enqueue_write(ctx.queue(), out, 0, m * ab, sentinel.data(),
                                                 ctx.tuning().transfer_piece);
                                   finish(ctx.queue(), timeout, "the segments' sentinel");
                                   std::vector<cl::Event> events;
                                   const double t0 = now_ms();
                                   sr->enqueue(in, out, events);
                                   ctx.queue().flush();
                                   wait(events.back(), timeout, "the segmented reduction");
                                   enqueue_read(ctx.queue(), out, 0, m * ab, got.data(),
                                                ctx.tuning().transfer_piece);
                                   finish(ctx.queue(), timeout, "the segments' results");
                                   const double t1 = now_ms();
                                   return Sample{events_ms(events), t1 - t0, events.size()};
                                 }));
  }
  // ---- Every result against its own segment's reference.
  const DType value_type = !expr && is_arg_op(op) ? x.type : acc;
  std::vector<Value> results(m);
  if (row) {
    got.resize(m * ab);
    results = sr->post_bytes(got, timeout);  // a row's results: post applied (its type: acc)
  } else {
    for (std::uint64_t q = 0; q < m; ++q) {
      results[q] = Value::from_bytes(value_type, got.data() + q * ab);
      if (!expr && is_arg_op(op)) std::memcpy(&results[q].index, got.data() + q * ab + 8, 8);
    }
  }
  SegmentVerdict v;
  if (row) {
    const double t0 = now_ms();
    const std::vector<unsigned char> mask = sr->where_mask(in, n, a.local_size, timeout);
    v = verify_segments_row(*sr, a.op, arrays, mask, a.ddof, expr_op_result_type(a.op, x.type, acc),
                            results);
    rec.seq_ms = now_ms() - t0;
    if (a.op == "mean" || a.op == "var" || a.op == "std")
      for (std::uint64_t q = 0; q < m; ++q) {
        std::uint64_t selected = 0;
        for (std::uint64_t k = 0; k < lay.length(q) && selected == 0; ++k)
          selected += mask.empty() || mask[lay.at(q, k)] != 0;
        if (selected == 0) {
          std::cerr << "clreduce: warning: --op " << a.op << " of an empty "
                    << (a.where.empty() ? "" : "selection in a ")
                    << (a.axis_given ? "line" : "segment (" + std::to_string(q) + ")")
                    << " is nan (NumPy's answer, with its warning)\n";
          break;
        }
      }
  } else if (user) {
    std::vector<cl::Event> seq_events;
    v = verify_segments_user(*sr, in, acc, results, timeout, seq_events);
    rec.seq_ms = events_ms(seq_events);
  } else {
    const double t0 = now_ms();
    v = verify_segments(*sr, op, acc, x, results);
    rec.seq_ms = now_ms() - t0;
    rec.overflow = v.overflow;
  }
  rec.seq_runs = 1;
  const bool ok = v.ok;
  const std::uint64_t shown = v.shown;
  const std::vector<Value>& expected = v.expected;
  if (m > 0) {
    rec.result = results[shown];
    rec.expected = expected[shown];
  }
  rec.verified = ok;
  rec.verify_note = v.why;
  rec.bound = v.bound;
  if (rec.kernel_ms > 0) {
    rec.gbps = bytes / (rec.kernel_ms * 1e6);
    if (rec.seq_ms > 0) rec.speedup = rec.seq_ms / rec.kernel_ms;
  }

  // ---- The OpenMP peer (--peers): every segment's or line's sum by its own loop over the
  // host's array, timed as the engine is, each result checked against the same reference.
  RunRecord omp;
  if (a.peers) {
    omp = peer_row(rec);
    omp.skip_reason =
        user  ? "the OpenMP peer has no user expressions (OpenCL C); it has segmented and axis "
                "sums (--op sum)"
        : row ? "the OpenMP peer has segmented and axis sums (--op sum) of int32, uint32, int64, "
                "uint64, float and double, without --where"
        : m == 0 ? "nothing to reduce (no segments)"
                 : omp_segments_unsupported(op, x.type, acc);
    omp.skipped = !omp.skip_reason.empty();
    if (!omp.skipped) {
      const OmpSegmentsResult p = omp_segment_sums(
          x, lay, acc, static_cast<std::uint64_t>(a.warmup), static_cast<std::uint64_t>(a.repeat));
      const SegmentVerdict pv = verify_segments(lay, op, acc, x, p.values, v.expected,
                                                [&](std::uint64_t) { return p.depth; });
      omp.result = p.values[pv.shown];
      omp.expected = v.expected[pv.shown];
      omp.verified = pv.ok;
      omp.verify_note = pv.why;
      omp.bound = pv.bound;
      omp.overflow = pv.overflow;
      set_peer_timing(omp, p.timing);
      if (omp.kernel_ms > 0) omp.gbps = bytes / (omp.kernel_ms * 1e6);
      omp.noisy = noisy_spread(omp.kernel_ms_min, omp.kernel_ms_max);
    }
    rec.noisy = noisy_spread(rec.kernel_ms_min, rec.kernel_ms_max);
    add_vs_omp(rec, omp);
  }

  // ---- The results, NumPy's shape and dtype: the accumulator's (sum, prod: NumPy's or --acc;
  // min, max: the element type; a user reduction: --acc), int64 indices for arg ops; a row's
  // as numpy_row_type().
  std::vector<DType> types;
  for (const HostArray& h : arrays) types.push_back(h.type);
  const DType out_type = row                      ? numpy_row_type(a.op, types, acc, !a.acc.empty())
                         : !expr && is_arg_op(op) ? DType::kInt64
                                                  : acc;
  if (!a.output.empty()) {
    HostArray o;
    o.type = out_type;
    o.n = m;
    const std::size_t os = dtype_size(o.type);
    o.bytes.resize(m * os);
    for (std::uint64_t q = 0; q < m && row; ++q) store_as(o.type, results[q], &o.bytes[q * os]);
    for (std::uint64_t q = 0; q < m && !row; ++q)
      dispatch_dtype(o.type, [&](auto zero) {
        using V = decltype(zero);
        const V val =
            !expr && is_arg_op(op) ? static_cast<V>(results[q].index) : value_as<V>(results[q]);
        std::memcpy(o.bytes.data() + q * os, &val, os);
      });
    write_npy(a.output, o, out_shape);
    if (!ok)
      std::cerr << "clreduce: wrote " << printable(a.output)
                << " from results that did not verify\n";
  }

  // ---- Printed as every run is.
  if (a.format == "table") {
    std::cout << "device " << dev.index << ": " << dev.name << " (" << dev.platform_name << ")  ";
    if (user)
      std::cout << "expr: --map '" << printable(a.map) << "' --reduce '" << printable(a.reduce)
                << "' --identity '" << printable(a.identity) << "'"
                << (a.post.empty() ? "" : " --post '" + printable(a.post) + "'")
                << (a.where.empty() ? "" : " --where '" + printable(a.where) + "'");
    else
      std::cout << "op: " << a.op
                << (a.where.empty() ? "" : " --where '" + printable(a.where) + "'");
    std::cout << "  " << dtype_name(x.type) << " " << shape_words(shape) << " -> "
              << shape_words(out_shape) << " " << dtype_name(out_type) << "  results = " << m
              << "  (result: " << (ok ? "the first" : "the first that failed") << ")\n"
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

}  // namespace clreduce
