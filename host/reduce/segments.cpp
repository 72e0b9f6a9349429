// segments.cpp: segmented reductions (segments.hpp): offsets checked, axes brought to the
// [O, R1, I, R2, J] form, the task table of cl/reduce_segments.cl built from the segments'
// lengths, the launches, and a user reduction's one-work-item reference and post.
#include "reduce/segments.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>

#include "clreduce/error.hpp"
#include "core/checked.hpp"
#include "runtime/transfer.hpp"

namespace clreduce {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return b ? (a + b - 1) / b : 0; }

// A read-only buffer holding v (one byte when v is empty: no buffer may be empty).
template <class T> cl::Buffer buffer_of(Context& ctx, const std::vector<T>& v) {
  if (v.empty()) return ctx.zeroed_buffer(sizeof(T));
  return cl::Buffer(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, v.size() * sizeof(T),
                    const_cast<T*>(v.data()));
}

}  // namespace

std::uint64_t SegmentLayout::results() const {
  return columns ? O * I * J : (offsets.empty() ? 0 : offsets.size() - 1);
}

std::uint64_t SegmentLayout::length(std::uint64_t q) const {
  return columns ? R1 * R2 : static_cast<std::uint64_t>(offsets[q + 1] - offsets[q]);
}

std::uint64_t SegmentLayout::at(std::uint64_t q, std::uint64_t k) const {
  if (!columns) return static_cast<std::uint64_t>(offsets[q]) + k;
  const std::uint64_t j = q % J, i = (q / J) % I, o = q / (J * I), r1 = k / R2, r2 = k % R2;
  return (((o * R1 + r1) * I + i) * R2 + r2) * J + j;
}

std::vector<std::int64_t> check_offsets(const HostArray& offsets, std::uint64_t n,
                                        const std::string& name) {
  if (offsets.type != DType::kInt64)
    throw Error(Errc::kUsage, name + " holds " + dtype_name(offsets.type) +
                                  ": offsets are int64 (np.int64, '<i8')");
  if (offsets.n == 0)
    throw Error(Errc::kUsage,
                name + " is empty: S segments take S + 1 offsets (one offset for none)");
  std::vector<std::int64_t> off(offsets.as<std::int64_t>(), offsets.as<std::int64_t>() + offsets.n);
  for (std::size_t k = 0; k < off.size(); ++k) {
    if (off[k] < 0 || static_cast<std::uint64_t>(off[k]) > n)
      throw Error(Errc::kUsage, name + ": offset " + std::to_string(k) + " is " +
                                    std::to_string(off[k]) + ", out of range for an array of " +
                                    std::to_string(n) + " elements (0 to " + std::to_string(n) +
                                    ")");
    if (k > 0 && off[k] < off[k - 1])
      throw Error(Errc::kUsage, name + ": offsets are not ascending: offset " + std::to_string(k) +
                                    " is " + std::to_string(off[k]) + ", below offset " +
                                    std::to_string(k - 1) + " (" + std::to_string(off[k - 1]) +
                                    ")");
  }
  return off;
}

AxisReduction axis_reduction(const std::vector<std::uint64_t>& shape,
                             const std::vector<std::int64_t>& axes, bool keepdims) {
  const auto nd = static_cast<std::int64_t>(shape.size());
  std::vector<bool> reduced(shape.size(), false);
  for (std::int64_t a : axes) {
    if (a < -nd || a >= nd)
      throw Error(Errc::kUsage, "--axis " + std::to_string(a) +
                                    " is out of bounds for an array of dimension " +
                                    std::to_string(nd));
    const std::size_t k = static_cast<std::size_t>(a < 0 ? a + nd : a);
    if (reduced[k]) throw Error(Errc::kUsage, "--axis names axis " + std::to_string(k) + " twice");
    reduced[k] = true;
  }
  AxisReduction r;
  std::uint64_t n = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    n *= shape[k];
    if (!reduced[k])
      r.shape.push_back(shape[k]);
    else if (keepdims)
      r.shape.push_back(1);
  }
  // Runs of reduced and kept axes, axes of length 1 left out (they change no address).
  std::vector<std::pair<bool, std::uint64_t>> runs;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    if (!runs.empty() && runs.back().first == reduced[k])
      runs.back().second *= shape[k];
    else
      runs.emplace_back(reduced[k], shape[k]);
  }
  std::size_t reduced_runs = 0;
  for (const auto& run : runs) reduced_runs += run.first;
  SegmentLayout& L = r.layout;
  if (reduced_runs == 0) {
    // Nothing reduced (or only axes of length 1): each result is one element.
    L.offsets.resize(n + 1);
    for (std::uint64_t k = 0; k <= n; ++k) L.offsets[k] = static_cast<std::int64_t>(k);
    return r;
  }
  if (reduced_runs > 2)
    throw Error(Errc::kUsage,
                "--axis: the reduced axes form " + std::to_string(reduced_runs) +
                    " runs between kept axes; at most 2 are supported (reduce in two steps)");
  // [O, R1, I, R2, J]: each run in its place, 1 where it is missing.
  std::size_t k = 0;
  if (!runs[k].first) L.O = runs[k++].second;
  L.R1 = runs[k++].second;
  if (k < runs.size()) L.I = runs[k++].second;
  if (k < runs.size()) L.R2 = runs[k++].second;
  if (k < runs.size()) L.J = runs[k++].second;
  if (L.I == 1 && L.J == 1) {
    // The last axes reduced: contiguous segments of R1 * R2 elements.
    const std::uint64_t len = L.R1 * L.R2;
    L.offsets.resize(L.O + 1);
    for (std::uint64_t q = 0; q <= L.O; ++q) L.offsets[q] = static_cast<std::int64_t>(q * len);
    L.O = L.R1 = L.R2 = 1;
    return r;
  }
  L.columns = true;
  return r;
}

cl::Kernel SegmentReduction::build(const std::string& name, const std::string& extra) {
  const std::string options = options_ + extra;
  if (expr_) return build_expr_kernel(ctx_, spec_, "reduce_segments.cl", name, options, tail_);
  return ctx_.kernel("reduce_segments.cl", name, options);
}

std::string SegmentReduction::build_sized(const std::string& name, const std::string& extra,
                                          std::size_t local_size, std::size_t preferred) {
  const std::size_t first = local_size ? local_size : preferred;
  main_ = build(name, " -DWG_SIZE=" + std::to_string(first) + extra);
  policy_.wg_size = choose_wg(ctx_, main_, local_size, preferred);
  const std::string options = " -DWG_SIZE=" + std::to_string(policy_.wg_size) + extra;
  if (policy_.wg_size != first) main_ = build(name, options);
  main_extra_ = options;
  return options;
}

SegmentReduction::SegmentReduction(Context& ctx, Op op, DType t, DType acc, SegmentLayout layout,
                                   std::size_t local_size)
    : ctx_(ctx), op_(op), acc_(acc), layout_(std::move(layout)) {
  options_ = "-DCLR_TYPE=" + std::to_string(static_cast<int>(t)) +
             " -DCLR_ACC=" + std::to_string(static_cast<int>(acc)) +
             " -DCLR_OP=" + std::to_string(static_cast<int>(op));
  acc_bytes_ = is_arg_op(op) ? 16 : dtype_size(acc);
  plan(local_size, acc_bytes_);
}

SegmentReduction::SegmentReduction(Context& ctx, const ExprSpec& spec, SegmentLayout layout,
                                   std::size_t local_size)
    : ctx_(ctx), expr_(true), spec_(spec), acc_(spec.acc), layout_(std::move(layout)) {
  if (!(spec_.width == 1 || ((spec_.width == 2 || spec_.width == 4) && is_float(spec_.acc))))
    throw Error(Errc::kUsage, "an accumulator of " + std::to_string(spec_.width) + " values of " +
                                  dtype_name(spec_.acc) +
                                  " is not one the engine has (1; 2 or 4 of a float type)");
  for (const auto& [flag, text] : {std::pair<const char*, const std::string&>{"--map", spec_.map},
                                   {"--reduce", spec_.reduce},
                                   {"--identity", spec_.identity}})
    check_expression(flag, text);
  if (!spec_.post.empty()) check_expression("--post", spec_.post);
  if (!spec_.where.empty()) check_expression("--where", spec_.where);
  options_ = expr_options(spec_);
  tail_ = expr_tail(spec_);
  acc_bytes_ = dtype_size(spec_.acc) * spec_.width;
  plan(local_size, acc_bytes_);
}

void SegmentReduction::plan(std::size_t local_size, std::size_t local_bytes) {
  const DeviceInfo& dev = ctx_.info();
  const Tuning& tune = ctx_.tuning();
  cpu_ = tune.segments_shape == "cpu" || (tune.segments_shape != "gpu" && !dev.is_gpu);
  check_local_size(ctx_, local_size, local_size * local_bytes);
  const std::uint64_t units = std::max<std::uint64_t>(1, dev.compute_units);
  // The built-in ops whose values alone count (not the arg ops, nor expressions) may read
  // several elements a load.
  const bool vectors = !expr_ && !is_arg_op(op_);
  // The CPU shape's walks and tiles in explicit OpenCL vectors (the same operations in the same
  // order: the same results), unless segments-simd=off: their scalar loops are SIMD only where
  // the OpenCL compiler's auto-vectoriser makes them so (PoCL 5.0 for AVX-512 left them scalar).
  simd_ = cpu_ && vectors && tune.segments_simd != "off";
  const std::string simd_option = simd_ ? " -DSEG_SIMD=1" : "";
  if (layout_.columns) {
    plan_columns(local_size, units, vectors, simd_option);
    return;
  }
  // Contiguous segments. GPU shape: 256 work-items per group, 32 elements per lane before a
  // segment takes more lanes (segments-lane), pieces of 64 elements per work-item (segments-
  // piece); CPU shape: a work-item per task, its segments walked with SEG_V accumulators (128
  // bytes of them: two AVX-512 registers), pieces of 2^16 elements, runs of segments of a
  // quarter piece.
  std::string options;
  std::uint64_t per_lane = 0;
  if (cpu_) {
    seg_v_ = 1;
    while (seg_v_ < 64 && 2 * seg_v_ * acc_bytes_ <= 128) seg_v_ *= 2;
    options = " -DSEG_V=" + std::to_string(seg_v_) + simd_option;
    main_ = build("reduce_segments_cpu", options);
    main_extra_ = options;
    policy_.wg_size = choose_wg(ctx_, main_, local_size, 16);
    piece_ = tune.segments_piece ? tune.segments_piece : std::uint64_t{1} << 16;
  } else {
    const std::size_t preferred = 256;
    // 4 elements a load unless segments-vec says otherwise (H100, 2^28 float: CUB's time or
    // better at segments of 10^3 and 10^5, 0.75-0.82x with one element a load); 32 elements a
    // lane before a segment takes more lanes, 4 loads in flight (segments of 100: 0.45 of the
    // copy with 4 a lane, 0.89 with 32 and 4 loads; of 1000: 0.53, 0.96; docs/PERF.md).
    unroll_ = tune.segments_unroll ? tune.segments_unroll : 4;
    vec_ = vectors ? (tune.segments_vec ? tune.segments_vec : 4) : 1;
    per_lane = tune.segments_lane ? tune.segments_lane : 32;
    options = build_sized(
        "reduce_segments",
        " -DSEG_UNROLL=" + std::to_string(unroll_) + " -DSEG_VEC=" + std::to_string(vec_),
        local_size, preferred);
    piece_ = tune.segments_piece ? tune.segments_piece : policy_.wg_size * 64;
  }
  const std::uint64_t wg = policy_.wg_size;
  policy_.vec_width = static_cast<unsigned>(cpu_ ? seg_v_ : vec_);
  // Lanes per segment by its length (GPU shape; the CPU shape's tasks are kind 1, a work-item
  // each), runs of segments that take the same lanes sharing a task, long segments in pieces.
  const std::uint64_t run_cost = std::max<std::uint64_t>(1, piece_ / 4);
  const std::uint64_t S = layout_.results();
  lanes_.assign(S, 0);
  std::uint64_t run_lanes = 0, run_first = 0, run_count = 0, run_elems = 0, short_segs = 0;
  std::size_t long_segs = 0;
  const auto close_run = [&] {
    if (run_count) tasks_.insert(tasks_.end(), {run_lanes, run_first, run_count, 0, 0});
    run_count = run_elems = 0;
  };
  for (std::uint64_t s = 0; s < S; ++s) {
    const std::uint64_t len = layout_.length(s);
    if (len > piece_) {
      close_run();
      const std::uint64_t begin = static_cast<std::uint64_t>(layout_.offsets[s]);
      const std::uint64_t pieces = ceil_div(len, piece_);
      longs_.insert(longs_.end(), {s, slots_, pieces});
      for (std::uint64_t p = 0; p < pieces; ++p)
        tasks_.insert(tasks_.end(), {0, slots_ + p, begin + p * piece_,
                                     begin + std::min(len, (p + 1) * piece_), begin});
      slots_ += pieces;
      ++long_segs;
      continue;
    }
    std::uint64_t L = 1;
    if (!cpu_) {
      while (L < wg && L * per_lane < len) L *= 2;
      L = std::min<std::uint64_t>(L, wg);
      if (run_count && (L != run_lanes || run_count == wg / L)) close_run();
    } else if (run_count && run_elems + 16 * run_count >= run_cost) {
      // A work-item's run: about a quarter piece of elements (each segment counted 16 more:
      // its own start and fold).
      close_run();
    }
    lanes_[s] = static_cast<std::uint32_t>(L);
    if (!run_count) {
      run_lanes = L;
      run_first = s;
    }
    ++run_count;
    run_elems += len;
    ++short_segs;
  }
  close_run();
  const std::uint64_t tasks = tasks_.size() / 5;
  policy_.groups = cpu_ ? ceil_div(tasks, wg) : tasks;
  policy_.items_per_thread = static_cast<unsigned>(cpu_ ? run_cost : per_lane);
  const std::string simd_text =
      simd_ ? " in vectors of " + std::to_string(std::min<std::uint64_t>(seg_v_, 16)) : "";
  policy_.path = std::string("segments, ") + (cpu_ ? "CPU" : "GPU") +
                 " shape: " + std::to_string(short_segs) + (cpu_ ? " whole in " : " by lanes in ") +
                 std::to_string(tasks - slots_) + (cpu_ ? " runs, " : " groups, ") +
                 std::to_string(long_segs) + " long in " + std::to_string(slots_) + " pieces of " +
                 std::to_string(piece_) +
                 (cpu_ ? ", " + std::to_string(seg_v_) + " accumulators a work-item" + simd_text
                       : (unroll_ > 1 ? ", " + std::to_string(unroll_) + " loads in flight" : ""));
  offsets_ = buffer_of(ctx_, layout_.offsets);
  tasks_buf_ = buffer_of(ctx_, tasks_);
  longs_buf_ = buffer_of(ctx_, longs_);
  partials_ = ctx_.zeroed_buffer(std::max<std::uint64_t>(slots_, 1) * acc_bytes_);
  if (!longs_.empty()) fold_ = build("reduce_segments_fold", main_extra_);
}

void SegmentReduction::plan_columns(std::size_t local_size, std::uint64_t units, bool vectors,
                                    const std::string& simd_option) {
  const Tuning& tune = ctx_.tuning();
  const SegmentLayout& L = layout_;
  const std::uint64_t results = L.results();
  // The CPU shape's tiles, where the results of each (o, i) are neighbours: J > 1, or a
  // matrix's columns ([O, R1, I, 1, 1], taken as [O, R1, 1, 1, I]: the same addresses).
  tile_ = cpu_ && (L.J > 1 || L.R2 == 1);
  dims_I_ = L.J > 1 || !tile_ ? L.I : 1;
  dims_J_ = L.J > 1 || !tile_ ? L.J : L.I;
  std::string options;
  std::uint64_t blocks = 0;  // work-items per piece
  if (tile_) {
    // Tiles of 16384 results (64 KiB of float accumulators: in L2), or the whole row where it
    // is shorter: a piece's rows then read as one stream.
    // The width is an argument, not a -D: one program for every shape.
    cols_ = std::min<std::uint64_t>(tune.axis_cols ? tune.axis_cols : 16384, dims_J_);
    options = " -DSEG_TILE=0" + simd_option;
    main_ = build("reduce_columns_cpu", options);
    main_extra_ = options;
    policy_.wg_size = choose_wg(ctx_, main_, local_size, 1);
    blocks = results / dims_J_ * ceil_div(dims_J_, cols_);
  } else {
    // A work-item per result on GPUs (coalesced), or axis-cols; 16 neighbouring results on CPUs
    // (a cache line of each row read at once; axis-cols is the tiles' width).
    cols_ = cpu_ ? 16 : tune.axis_cols ? tune.axis_cols : 1;
    if (cols_ != 1 && cols_ != 2 && cols_ != 4 && cols_ != 8 && cols_ != 16)
      throw Error(Errc::kUsage, "--tune axis-cols=" + std::to_string(cols_) +
                                    ": the GPU shape takes 1, 2, 4, 8 or 16 results a work-item");
    // 4 rows loaded before they are folded on GPUs unless axis-unroll says otherwise (H100,
    // 2^14 x 2^14 float along axis 0: 0.98 of the copy rate against 0.92 with 1).
    unroll_ = tune.axis_unroll ? tune.axis_unroll : cpu_ ? 1u : 4u;
    const std::size_t preferred = cpu_ ? 64 : 256;
    options = build_sized(
        "reduce_columns",
        " -DSEG_COLS=" + std::to_string(cols_) + " -DSEG_ROWS=" + std::to_string(unroll_),
        local_size, preferred);
    blocks = ceil_div(results, cols_);
  }
  (void)vectors;
  const std::uint64_t wg = policy_.wg_size;
  // Pieces of R1: enough work-items to fill the device (GPU shape: 4 groups per compute unit;
  // CPU shape: 4 tiles per compute unit), each a piece of at least 16 rows of its results; or
  // axis-pieces.
  const std::uint64_t target = units * (tile_ ? 4 : wg * 4);
  if (tune.axis_pieces)
    pieces_ = std::min<std::uint64_t>(tune.axis_pieces, std::max<std::uint64_t>(1, L.R1));
  else
    pieces_ = std::clamp<std::uint64_t>(ceil_div(target, std::max<std::uint64_t>(blocks, 1)), 1,
                                        std::max<std::uint64_t>(1, ceil_div(L.R1, 16)));
  rows_ = ceil_div(L.R1, pieces_);
  pieces_ = std::max<std::uint64_t>(1, ceil_div(L.R1, std::max<std::uint64_t>(rows_, 1)));
  policy_.groups = ceil_div(blocks * pieces_, wg);
  policy_.vec_width = static_cast<unsigned>(!tile_ && vectors && L.R2 == 1 ? cols_ : 1);
  policy_.items_per_thread = static_cast<unsigned>(
      std::min<std::uint64_t>(rows_ * L.R2, std::numeric_limits<unsigned>::max()));
  policy_.path = std::string("columns, ") + (cpu_ ? "CPU" : "GPU") + " shape: " +
                 (tile_ ? "tiles of " + std::to_string(cols_) + " results" +
                              (simd_ ? " (rows 16 at a time), " : ", ")
                  : cols_ == 1 ? "a work-item per result, "
                               : std::to_string(cols_) + " results a work-item, ") +
                 std::to_string(pieces_) + (pieces_ == 1 ? " piece" : " pieces") + " of " +
                 std::to_string(rows_) + " rows" +
                 (!tile_ && unroll_ > 1 ? ", " + std::to_string(unroll_) + " rows in flight" : "");
  if (pieces_ > 1) {
    // From the main kernel's program: the CPU shape folds a tile of results a work-item
    // (SEG_TILE 0), the GPU shape one (SEG_TILE 1, by default).
    fold_ = build("reduce_columns_fold", main_extra_);
    partials_ = ctx_.zeroed_buffer(results * pieces_ * acc_bytes_);
  }
}

ExprLaws SegmentReduction::check_laws(const std::vector<cl::Buffer>& in, std::size_t n,
                                      std::size_t local_size, TimeLimit limit) {
  ExprReduction checks(ctx_, spec_, n, local_size, false);
  checks.use_program("reduce_segments.cl", options_ + main_extra_, tail_);
  return checks.check_laws(in, n, limit);
}

std::vector<unsigned char> SegmentReduction::where_mask(const std::vector<cl::Buffer>& in,
                                                        std::size_t n, std::size_t local_size,
                                                        TimeLimit limit) {
  if (spec_.where.empty()) return {};
  ExprReduction checks(ctx_, spec_, n, local_size, false);
  checks.use_program("reduce_segments.cl", options_ + main_extra_, tail_);
  return clreduce::where_mask(checks, in, n, limit);
}

std::uint64_t SegmentReduction::depth(std::uint64_t q) const {
  const std::uint64_t len = layout_.length(q);
  if (layout_.columns) return rows_ * layout_.R2 + (pieces_ > 1 ? pieces_ : 0);
  const std::uint64_t L = lanes_[q];
  if (cpu_) {
    // seg_walk(): a short segment's elements one after another; else len / SEG_V rounds, the
    // tree and the last len mod SEG_V; pieces, then their fold.
    const auto walk = [&](std::uint64_t k) {
      return k < seg_v_ ? k : k / seg_v_ + ceil_log2(seg_v_) + seg_v_;
    };
    return L ? walk(len) : walk(piece_) + ceil_div(len, piece_);
  }
  // A lane's elements (with vectors: at most 3 SEG_VEC more: those before the first aligned
  // vector, after the last, and a last partial round), the group's tree; a long segment's
  // pieces, then their fold.
  const std::uint64_t extra = vec_ > 1 ? 3 * vec_ : 0;
  if (L) return ceil_div(len, L) + extra + ceil_log2(L);
  return ceil_div(piece_, policy_.wg_size) + extra + ceil_log2(policy_.wg_size) +
         ceil_div(len, piece_);
}

void SegmentReduction::enqueue(const std::vector<cl::Buffer>& in, const cl::Buffer& out,
                               std::vector<cl::Event>& events) {
  const std::uint64_t results = layout_.results();
  if (results == 0) return;
  const std::size_t wg = policy_.wg_size;
  set_expr_inputs(main_, in, acc_, spec_.shift);
  if (layout_.columns) {
    main_.setArg(kExprArgs, static_cast<cl_ulong>(layout_.R1));
    main_.setArg(kExprArgs + 1, static_cast<cl_ulong>(dims_I_));
    main_.setArg(kExprArgs + 2, static_cast<cl_ulong>(layout_.R2));
    main_.setArg(kExprArgs + 3, static_cast<cl_ulong>(dims_J_));
    main_.setArg(kExprArgs + 4, static_cast<cl_ulong>(results));
    main_.setArg(kExprArgs + 5, static_cast<cl_ulong>(pieces_));
    main_.setArg(kExprArgs + 6, static_cast<cl_ulong>(rows_));
    main_.setArg(kExprArgs + 7, out);
    main_.setArg(kExprArgs + 8, partials_.get() ? partials_ : out);
    if (tile_) main_.setArg(kExprArgs + 9, static_cast<cl_ulong>(cols_));
    events.emplace_back();
    ctx_.queue().enqueueNDRangeKernel(main_, cl::NullRange, cl::NDRange(policy_.groups * wg),
                                      cl::NDRange(wg), nullptr, &events.back());
    if (pieces_ > 1) {
      fold_.setArg(0, partials_);
      fold_.setArg(1, static_cast<cl_ulong>(results));
      fold_.setArg(2, static_cast<cl_ulong>(pieces_));
      fold_.setArg(3, out);
      fold_.setArg(4, static_cast<cl_ulong>(tile_ ? cols_ : 1));
      // A work-item per result (GPU shape) or per tile of them (CPU shape).
      const std::uint64_t items = ceil_div(results, tile_ ? cols_ : 1);
      const std::size_t fwg = tile_ ? 1 : wg;
      events.emplace_back();
      ctx_.queue().enqueueNDRangeKernel(fold_, cl::NullRange,
                                        cl::NDRange(ceil_div(items, fwg) * fwg), cl::NDRange(fwg),
                                        nullptr, &events.back());
    }
    return;
  }
  main_.setArg(kExprArgs, offsets_);
  main_.setArg(kExprArgs + 1, tasks_buf_);
  cl_uint arg = kExprArgs + 2;
  if (cpu_) main_.setArg(arg++, static_cast<cl_ulong>(tasks_.size() / 5));
  main_.setArg(arg, out);
  main_.setArg(arg + 1, partials_);
  events.emplace_back();
  ctx_.queue().enqueueNDRangeKernel(main_, cl::NullRange, cl::NDRange(policy_.groups * wg),
                                    cl::NDRange(wg), nullptr, &events.back());
  if (!longs_.empty()) {
    const std::uint64_t m = longs_.size() / 3;
    fold_.setArg(0, partials_);
    fold_.setArg(1, longs_buf_);
    fold_.setArg(2, static_cast<cl_ulong>(m));
    fold_.setArg(3, out);
    events.emplace_back();
    ctx_.queue().enqueueNDRangeKernel(fold_, cl::NullRange, cl::NDRange(ceil_div(m, wg) * wg),
                                      cl::NDRange(wg), nullptr, &events.back());
  }
}

std::vector<Value> SegmentReduction::reference(const std::vector<cl::Buffer>& in, bool abs,
                                               TimeLimit limit, bool* wider,
                                               std::vector<cl::Event>& events) {
  if (!expr_ || spec_.width != 1)
    throw Error(Errc::kInternal,
                "the one-work-item reference is a user reduction's, of one-value accumulators");
  const std::uint64_t m = layout_.results();
  DType t = spec_.acc;
  *wider = false;
  cl::Kernel k;
  if (t == DType::kFloat && ctx_.info().fp64) {
    // The same expressions with a double accumulator, where they build so.
    ExprSpec wide = spec_;
    wide.acc = DType::kDouble;
    try {
      k = ctx_.kernel("reduce_segments.cl", "reduce_segments_seq",
                      expr_options(wide) + " -DCLR_TYPE=5", tail_);
      t = DType::kDouble;
      *wider = true;
    } catch (const Error& e) {
      if (e.category() != Errc::kBuild) throw;
    }
  }
  if (!*wider) k = build("reduce_segments_seq", main_extra_);
  std::vector<Value> r;
  if (m == 0) return r;
  const std::size_t as = dtype_size(t);
  cl::Buffer out = ctx_.zeroed_buffer(m * as);
  cl::Buffer off = buffer_of(ctx_, layout_.offsets);
  set_expr_inputs(k, in, t, spec_.shift);
  k.setArg(kExprArgs, off);
  k.setArg(kExprArgs + 1, static_cast<cl_ulong>(m));
  k.setArg(kExprArgs + 2, static_cast<cl_int>(layout_.columns ? 1 : 0));
  k.setArg(kExprArgs + 3, static_cast<cl_ulong>(layout_.R1));
  k.setArg(kExprArgs + 4, static_cast<cl_ulong>(layout_.I));
  k.setArg(kExprArgs + 5, static_cast<cl_ulong>(layout_.R2));
  k.setArg(kExprArgs + 6, static_cast<cl_ulong>(layout_.J));
  k.setArg(kExprArgs + 7, static_cast<cl_uint>(abs ? 1 : 0));
  k.setArg(kExprArgs + 8, out);
  run_one(ctx_, k, 1, limit, "the one-work-item reference of the segments", &events);
  std::vector<unsigned char> bytes(m * as);
  enqueue_read(ctx_.queue(), out, 0, bytes.size(), bytes.data(), ctx_.tuning().transfer_piece);
  finish(ctx_.queue(), limit, "the one-work-item reference of the segments");
  for (std::uint64_t q = 0; q < m; ++q) r.push_back(Value::from_bytes(t, bytes.data() + q * as));
  return r;
}

std::vector<Value> SegmentReduction::post(const std::vector<Value>& accs, TimeLimit limit) {
  if (!expr_ || spec_.post.empty() || accs.empty()) return accs;
  const DType t = spec_.acc;
  const std::size_t as = dtype_size(t), m = accs.size();
  std::vector<unsigned char> bytes(m * as);
  for (std::size_t q = 0; q < m; ++q)
    dispatch_dtype(t, [&](auto zero) {
      const auto x = value_as<decltype(zero)>(accs[q]);
      std::memcpy(bytes.data() + q * as, &x, as);
    });
  return post_bytes(bytes, limit);
}

std::vector<Value> SegmentReduction::post_bytes(const std::vector<unsigned char>& accs,
                                                TimeLimit limit) {
  const DType t = spec_.acc;
  const std::size_t vs = dtype_size(t), m = accs.size() / acc_bytes_;
  std::vector<Value> r;
  if (!expr_ || spec_.post.empty()) {
    if (expr_ && spec_.width != 1)
      throw Error(Errc::kInternal, "an accumulator of several values needs a post");
    for (std::size_t q = 0; q < m; ++q)
      r.push_back(Value::from_bytes(t, accs.data() + q * acc_bytes_));
    return r;
  }
  if (m == 0) return r;
  cl::Kernel k = build("reduce_segments_post", main_extra_);
  cl::Buffer in = buffer_of(ctx_, accs);
  cl::Buffer off = buffer_of(ctx_, layout_.offsets);
  cl::Buffer out = ctx_.zeroed_buffer(m * vs);
  k.setArg(0, in);
  k.setArg(1, static_cast<cl_ulong>(m));
  k.setArg(2, off);
  k.setArg(3, static_cast<cl_int>(layout_.columns ? 1 : 0));
  k.setArg(4, static_cast<cl_long>(layout_.R1 * layout_.R2));
  k.setArg(5, out);
  run_one(ctx_, k, m, limit, "--post of the segments");
  std::vector<unsigned char> bytes(m * vs);
  enqueue_read(ctx_.queue(), out, 0, bytes.size(), bytes.data(), ctx_.tuning().transfer_piece);
  finish(ctx_.queue(), limit, "--post of the segments");
  for (std::size_t q = 0; q < m; ++q) r.push_back(Value::from_bytes(t, bytes.data() + q * vs));
  return r;
}

}  // namespace clreduce
