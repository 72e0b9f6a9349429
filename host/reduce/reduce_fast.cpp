// reduce_fast.cpp: the default variant: one launch of cl/reduce_fast.cl, GPU-shaped (16-byte
// grid-stride loads, grid from compute units) or CPU-shaped (a run per work-item, a group per
// core). The device type picks the shape once per context; a numeric check confirms it, else
// the other shape is tried, then topdown's scheme. A reduce_fast.cl that does not build is an
// error (exit 4), never a reason to run another kernel.
#include "reduce/variant.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <vector>

#include "clreduce/error.hpp"
#include "reduce/multipass.hpp"

namespace clreduce {
namespace {

enum class Shape { kGpu, kCpu, kTopdown };

const char* shape_name(Shape s) {
  return s == Shape::kGpu ? "gpu-shape" : s == Shape::kCpu ? "cpu-shape" : "topdown-scheme";
}

// The tunables of one shape for one element type.
struct ShapeParams {
  bool cpu = false;
  unsigned vec = 4;               // elements per vector load
  unsigned unroll = 4;            // independent loads per loop step
  unsigned accs = 1;              // vector accumulators (1, or unroll to hide add latency)
  bool streams = false;           // CPU: the unrolled loads read far-apart parts of a run
  std::size_t wg = 256;           // preferred work-items per group
  std::size_t groups_per_cu = 4;  // most groups per compute unit
  std::size_t min_vectors = 1;    // fewest vectors per work-item before another group is added
  // Mid-size arrays: where groups_per_cu groups a unit would leave each work-item fewer than
  // few_vectors vectors, at most few_groups_per_cu groups a unit (0: no such limit).
  std::size_t few_vectors = 0;
  std::size_t few_groups_per_cu = 0;
  // Small arrays: where one group of wg work-items gets at most this many vectors each, one
  // group (no partials, no ticket, no second fold; 0: no such rule).
  std::size_t one_group_vectors = 0;
};

// GPU: 16 bytes per load (int4/float4, long2/double2), 4 loads in flight per work-item into
// one accumulator (few registers), 256 work-items per group, 4 groups per compute unit (1024
// work-items: one wave at up to 64 registers each, 64 KiB of loads in flight per unit), and
// at least 1 vector per work-item, so n = 2^16 int32 runs as 64 groups in one launch (with 4,
// 16 groups took 6.7-8.0 us on the H200 against topdown's 5.1 us with 256 groups). Where those
// work-items would get fewer than 16 vectors each (on 132 units, up to 2^23 int32 or float and
// 2^22 double), 2 groups a unit: fewer partials for the last group to fold, each work-item a
// whole unrolled step. The H100 ran 8 of 9 (op, type) cells 1-14% faster so at 2^20, 5 of 6 at
// 2^22, level at 2^23, and 5 of 6 slower at 2^24 (docs/PERF.md, "`fast` by group count").
// Where one group's work-items would get at most 8 vectors each (32 KiB: 2^13 int32, 2^12
// double), one group, which writes the result itself: the ticket's partials, atomic and the last
// group's second fold cost about 1 us at these sizes (the H200 at 2^10: 12 of 12 int64 and
// double cells 0.4-1.9 us faster with one group than with two; 2^11-2^12 faster or level,
// 2^13 level: docs/PERF.md, "One group where the array is small").
// CPU: 64 bytes per load (one AVX-512 register of T); each work-item splits its run into 4
// streams read side by side into 4 accumulators (measured on PoCL at 2^26 int32: 4 streams
// about 1.15-1.3x OpenMP, 2 about 1.15x, 1 about 1.0x, consecutive vectors about 1.0x); one
// work-item per group, four groups per core (PoCL's threads take groups as they free up, so a
// core held up elsewhere costs a quarter of its share, not all of it: on the 16-core Xeon at
// 2^26 int32, 16 groups ran 0.90x OpenMP, 32 1.20x, 64 1.26x; on 2 cores 8 groups ran as 2),
// at least 2^12 vectors (256 KiB) per work-item.
ShapeParams shape_params(Shape s, DType t) {
  ShapeParams sp;
  const unsigned bytes = static_cast<unsigned>(dtype_size(t));
  if (s == Shape::kGpu) {
    sp.vec = 16 / bytes;
    sp.few_vectors = 16;
    sp.few_groups_per_cu = 2;
    sp.one_group_vectors = 8;
    return sp;
  }
  sp.cpu = true;
  sp.vec = 64 / bytes;
  sp.unroll = 4;
  sp.accs = sp.unroll;
  sp.streams = true;
  sp.wg = 1;
  sp.groups_per_cu = 4;
  sp.min_vectors = 4096;
  return sp;
}

// The GPU shape on an NVIDIA device whose probes found the warp shuffle folds each group's last
// 64 values in registers (clr_ticket.h's clr_group_total): -DCLR_TAIL=2. Elsewhere, and with
// --tune disable-caps=nv_shfl, barrier steps all the way (the same tree depth).
std::string tail_option(Context& ctx, const ShapeParams& sp, std::size_t wg) {
  if (sp.cpu || !ctx.info().is_nvidia) return "";
  return choose_tail(ctx.caps(), wg) == TailPath::kShfl ? " -DCLR_TAIL=2" : "";
}

cl::Kernel build(Context& ctx, const ReduceProblem& p, const ShapeParams& sp, std::size_t wg,
                 bool idx32) {
  return ctx.kernel("reduce_fast.cl", "reduce_fast",
                    p.cl_options() + " -DWG_SIZE=" + std::to_string(wg) +
                        " -DFAST_CPU=" + (sp.cpu ? "1" : "0") + " -DVEC=" + std::to_string(sp.vec) +
                        " -DUNROLL=" + std::to_string(sp.unroll) + " -DFAST_ACCS=" +
                        std::to_string(sp.accs) + " -DFAST_STREAMS=" + (sp.streams ? "1" : "0") +
                        " -DFAST_IDX32=" + (idx32 ? "1" : "0") + tail_option(ctx, sp, wg));
}

// Arg ops on the CPU shape: whether each work-item screens its run as UNROLL streams side by
// side rather than in order (fast-arg-streams; auto: where the array is at least the device's
// global memory cache). Out of cache one in-order stream is bound by its own memory rate
// (2^24 float argmax on 2 EPYC cores: 2.0 ms in order, 1.05 ms streamed); in cache the
// in-order loop is faster (2^22: 0.14 against 0.18 ms): docs/PERF.md.
bool arg_streams(const Context& ctx, const ReduceProblem& p) {
  const std::string& k = ctx.tuning().fast_arg_streams;
  if (k != "auto") return k == "on";
  const std::uint64_t cache = ctx.info().global_cache;
  return cache > 0 && std::uint64_t{p.n} * dtype_size(p.type) >= cache;
}

// True when every vector index the kernel computes fits in 32 bits.
bool fits_idx32(std::size_t n, std::size_t items, unsigned unroll) {
  const std::uint64_t nv = n;  // vectors <= elements
  return nv + (std::uint64_t{unroll} + 2) * items < (std::uint64_t{1} << 31);
}

// The launch for shape sp on p: group size, group count, elements per work-item, vector width.
// forced_groups > 0 fixes the number of groups (the fast-groups knob, or the start-up check).
// *kernel receives the kernel built for the group size chosen.
LaunchPolicy shape_policy(Context& ctx, const ReduceProblem& p, Shape s, std::size_t local_size,
                          std::size_t forced_groups, cl::Kernel* kernel) {
  ShapeParams sp = shape_params(s, p.type);
  if (sp.cpu && is_arg_op(p.op)) sp.streams = arg_streams(ctx, p);
  const std::size_t units = ctx.info().compute_units;
  const std::size_t nv = std::max<std::size_t>(p.n / sp.vec, 1);
  std::function<std::size_t(std::size_t)> groups_for = [&](std::size_t wg) -> std::size_t {
    if (nv <= wg * sp.one_group_vectors) return 1;
    const std::size_t per_group = wg * sp.min_vectors;
    std::size_t cap = std::max<std::size_t>(1, units * sp.groups_per_cu);
    if (sp.few_groups_per_cu > 0 && nv < cap * wg * sp.few_vectors)
      cap = std::max<std::size_t>(1, units * sp.few_groups_per_cu);
    return std::clamp<std::size_t>((nv + per_group - 1) / per_group, 1, cap);
  };
  auto idx32_for = [&](std::size_t wg) { return fits_idx32(p.n, groups_for(wg) * wg, sp.unroll); };
  if (forced_groups > 0) groups_for = [forced_groups](std::size_t) { return forced_groups; };
  LaunchPolicy pol;
  *kernel = build(ctx, p, sp, sp.wg, idx32_for(sp.wg));
  pol.wg_size = choose_wg(ctx, *kernel, local_size, sp.wg);
  pol.groups = groups_for(pol.wg_size);
  // The kernel is built for its group size: check the one actually used, so a size the
  // device cannot take is refused here (exit 2) rather than at launch.
  if (pol.wg_size != sp.wg) {
    *kernel = build(ctx, p, sp, pol.wg_size, idx32_for(pol.wg_size));
    choose_wg(ctx, *kernel, pol.wg_size, pol.wg_size);
  }
  const std::size_t items = pol.groups * pol.wg_size;
  pol.items_per_thread = static_cast<unsigned>((p.n + items - 1) / items);
  pol.vec_width = sp.vec;
  pol.path = std::string(shape_name(s)) + " " + dtype_cl_name(p.type) + std::to_string(sp.vec) +
             " x" + std::to_string(sp.unroll) + " ticket" +
             (sp.cpu && is_arg_op(p.op) && sp.streams
                  ? ", screened in " + std::to_string(sp.unroll) + " streams"
                  : "") +
             (tail_option(ctx, sp, pol.wg_size).empty() ? "" : ", shfl.sync fold");
  return pol;
}

// A float sum's longest chain: a work-item's vectors into one lane (at most ceil(vectors per
// work-item)), the unrolled accumulators (unroll), the lanes (vec), its head and tail
// elements (2 vec), the group's tree (log2 wg), the last group's loop over partials
// (groups / wg) and its tree (log2 wg).
std::uint64_t above_chains(const ShapeParams& sp, const LaunchPolicy& pol) {
  return sp.unroll + 3 * sp.vec + 2 * ceil_log2(pol.wg_size) +
         (pol.groups + pol.wg_size - 1) / pol.wg_size;
}

std::uint64_t shape_depth(const ReduceProblem& p, const LaunchPolicy& pol, Shape s) {
  const ShapeParams sp = shape_params(s, p.type);
  const std::uint64_t items = pol.groups * pol.wg_size;
  const std::uint64_t per_item = (p.n / sp.vec + items - 1) / items;
  return per_item + above_chains(sp, pol);
}

// A float sum's chains. GPU: lane j of work-item w folds the body's elements w·vec + j, then
// every items·vec further: the residues mod items·vec (the head, fewer than vec elements, only
// shifts which residue a lane takes, and leaves the first ones out: edge vec - 1). CPU: each
// work-item's run of vectors, its streams' lanes (SumModel::kRuns). Above them, the limit the
// depth counts.
SumModel shape_model(const ReduceProblem& p, const LaunchPolicy& pol, Shape s, std::size_t n) {
  const ShapeParams sp = shape_params(s, p.type);
  ReduceProblem q = p;
  q.n = n;
  const std::uint64_t items = pol.groups * pol.wg_size;
  if (!sp.cpu) {
    SumModel m = strided_model(n, items * sp.vec, above_chains(sp, pol));
    m.edge = sp.vec - 1;
    m.depth = std::max(m.depth, shape_depth(q, pol, s));
    return m;
  }
  if (!sp.streams) return SumModel::depth_only(shape_depth(q, pol, s));
  SumModel m;
  m.kind = SumModel::Kind::kRuns;
  m.vec = sp.vec;
  m.items = items;
  m.streams = sp.unroll;
  m.edge = sp.vec;
  m.above = above_chains(sp, pol);
  m.depth = shape_depth(q, pol, s);
  return m;
}

// One launch of cl/reduce_fast.cl in the GPU or the CPU shape.
class ShapePlan : public TicketPlan {
 public:
  ShapePlan(Context& ctx, const ReduceProblem& p, Shape shape, LaunchPolicy pol,
            const cl::Kernel& kernel)
      : TicketPlan(ctx, "fast", p, pol, shape_depth(p, pol, shape), kernel, true), shape_(shape) {}

  Shape shape() const { return shape_; }

 private:
  SumModel model(std::size_t n) const override {
    return shape_model(problem(), policy(), shape_, n);
  }

  Shape shape_;
};

std::unique_ptr<ShapePlan> shape_plan(Context& ctx, const ReduceProblem& p, Shape s,
                                      std::size_t local_size, std::size_t forced_groups) {
  cl::Kernel k;
  const LaunchPolicy pol = shape_policy(ctx, p, s, local_size, forced_groups, &k);
  return std::make_unique<ShapePlan>(ctx, p, s, pol, k);
}

// topdown's plan, launched as fast's with its own policy (the shape and why named in its path).
class TopdownSchemePlan : public ReducePlan {
 public:
  TopdownSchemePlan(std::unique_ptr<ReducePlan> inner, LaunchPolicy pol, Context& ctx)
      : ReducePlan(ctx, "fast", inner->problem(), std::move(pol), inner->depth()),
        inner_(std::move(inner)) {}

 private:
  void launch(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
              std::vector<cl::Event>& events) override {
    inner_->enqueue(in, 0, n, out, events);
  }
  SumModel model(std::size_t n) const override { return inner_->sum_model(n); }

  std::unique_ptr<ReducePlan> inner_;
};

// Numeric check of shape s: an int32 sum (int64 accumulator) on three groups, about
// 2 x unroll + 1 vectors per work-item (the unrolled loop and its remainder), dealt out
// unevenly, a tail, and values near INT32_MAX that a 32-bit accumulator would wrap; two
// launches (the ticket must reset). Empty when it passes. A kernel file that does not build,
// and a wait past the time limit, are errors, not answers (check_answer()).
std::string check_shape(Context& ctx, Shape s) {
  const std::string check = std::string("the start-up check of fast's ") + shape_name(s);
  try {
    const ShapeParams sp = shape_params(s, DType::kInt32);
    ReduceProblem p;
    p.op = Op::kSum;
    p.type = DType::kInt32;
    p.acc_type = DType::kInt64;
    const std::size_t vectors = 3 * sp.wg * (2 * sp.unroll + 1) - (sp.wg + 1) / 2 - 1;
    p.n = vectors * sp.vec + sp.vec - 1;
    std::vector<std::int32_t> x(p.n);
    std::int64_t want = 0;
    for (std::size_t i = 0; i < p.n; ++i) {
      x[i] = i % 97 == 0 ? std::numeric_limits<std::int32_t>::max()
                         : static_cast<std::int32_t>((i * 2654435761u) % 2001) - 1000;
      want += x[i];
    }
    const std::unique_ptr<ShapePlan> plan = shape_plan(ctx, p, s, 0, 3);
    cl::Buffer in(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                  p.n * sizeof(std::int32_t), x.data());
    std::int64_t got = 0x5A5A5A5A5A5A5A5A;
    cl::Buffer out(ctx.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof got, &got);
    std::vector<cl::Event> events;
    for (int run = 0; run < 2; ++run) {
      got = 0x5A5A5A5A5A5A5A5A;
      ctx.write(out, sizeof got, &got, check);
      plan->enqueue(in, out, events);
      ctx.read(out, sizeof got, &got, check);
      if (got != want)
        return std::string(shape_name(s)) + " check gave " + std::to_string(got) + ", expected " +
               std::to_string(want);
    }
    return "";
  } catch (const Error& e) {
    if (!check_answer(e)) throw;
    const std::string what = e.what();
    return std::string(shape_name(s)) + " check failed: " + what.substr(0, what.find('\n'));
  } catch (const cl::Error& e) {
    return std::string(shape_name(s)) + " check failed: " + e.what() + " " + cl_error_name(e.err());
  }
}

// The shape for this context: the fast-shape knob (gpu, cpu, topdown) or the device type's,
// confirmed by check_shape, else the other shape, else topdown's scheme. Each check's answer is
// kept in the context, keyed by the shape, the kernel's source and the build options; *why
// receives the failed checks, if any.
Shape chosen_shape(Context& ctx, std::string* why) {
  const std::string& forced = ctx.tuning().fast_shape;
  if (forced == "topdown") return Shape::kTopdown;
  const Shape first = forced == "gpu"     ? Shape::kGpu
                      : forced == "cpu"   ? Shape::kCpu
                      : ctx.info().is_gpu ? Shape::kGpu
                                          : Shape::kCpu;
  const Shape second = first == Shape::kGpu ? Shape::kCpu : Shape::kGpu;
  why->clear();
  for (Shape s : {first, second}) {
    const std::string key = std::string("reduce_fast.") + shape_name(s) + " " +
                            std::to_string(ctx.source_hash("reduce_fast.cl")) + " " +
                            ctx.tuning().build_options;
    const std::string& answer = ctx.probe(key, [&] {
      std::string a = check_shape(ctx, s);
      if (ctx.verbose())
        std::cerr << "fast: " << shape_name(s) << " " << (a.empty() ? "passed its check" : a)
                  << "\n";
      return a;
    });
    if (answer.empty()) return s;
    *why += (why->empty() ? "" : "; ") + answer;
  }
  return Shape::kTopdown;
}

class Fast : public ReduceVariant {
 public:
  std::string name() const override { return "fast"; }
  std::string description() const override {
    return "the default: one launch, wide loads, GPU- or CPU-shaped as the device's check decides";
  }

 protected:
  std::unique_ptr<ReducePlan> make_plan(Context& ctx, const ReduceProblem& p,
                                        std::size_t local_size) const override {
    std::string why;
    const Shape s = chosen_shape(ctx, &why);
    const std::string note = why.empty() ? "" : " (" + why + ")";
    if (s == Shape::kTopdown) {
      std::unique_ptr<ReducePlan> inner = find_reduce_variant("topdown")->plan(ctx, p, local_size);
      LaunchPolicy pol = inner->policy();
      pol.path = std::string(shape_name(s)) + " " + pol.path + note;
      return std::make_unique<TopdownSchemePlan>(std::move(inner), pol, ctx);
    }
    cl::Kernel k;
    LaunchPolicy pol = shape_policy(ctx, p, s, local_size, ctx.tuning().fast_groups, &k);
    pol.path += note;
    return std::make_unique<ShapePlan>(ctx, p, s, pol, k);
  }
};

}  // namespace

std::unique_ptr<ReduceVariant> make_reduce_fast() { return std::make_unique<Fast>(); }

}  // namespace clreduce
