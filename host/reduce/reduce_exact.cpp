// reduce_exact.cpp: the correctly rounded float and double sum: one launch of cl/reduce_exact.cl,
// GPU-shaped (16-byte grid-stride loads, 256 work-items, each work-item's own store in local
// memory for what the expansions cannot hold) or CPU-shaped (a contiguous run per work-item in 2
// streams, one group per core). The shape is the device type's (or the exact-shape knob's),
// checked once per context and type on hard inputs against the host's exact sum, bit for bit; if
// it fails the other is tried, and with neither the variant is skipped: a wrong "exact" sum is
// worse than none.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "clreduce/error.hpp"
#include "io/data.hpp"
#include "reduce/variant.hpp"
#include "runtime/capabilities.hpp"
#include "verify/exact_sum.hpp"

namespace clreduce {

namespace {

// Empty when `exact` takes op on elements of type t; else why not, naming the request.
std::string exact_refusal(Op op, DType t) {
  if (op != Op::kSum || !is_float(t))
    return op_name(op) + " of " + dtype_name(t) +
           " has no exact form (exact sums float and double only)";
  return "";
}

enum class Shape { kGpu, kCpu };

const char* shape_name(Shape s) { return s == Shape::kGpu ? "gpu-shape" : "cpu-shape"; }

// Elements per work-group at most: a limb of the group's superaccumulator takes pieces below
// 2^32 from at most 3 deposits per element, so 2^29 elements keep it below 2^63.
constexpr std::size_t kMaxPerGroup = std::size_t{1} << 29;

// CPU shape: loop steps (streams vectors each) per optimistic block (the kernel's EX_BLOCK).
constexpr unsigned kBlockLog2 = 6;
constexpr std::size_t kBlock = std::size_t{1} << kBlockLog2;

// Where the GPU shape puts what the expansions cannot hold (the exact-store knob): kItem, every
// element into the work-item's own store in local memory, no expansions (floats: 16 bins of
// doubles keyed by exponent; doubles: a whole superaccumulator); kExpansions, the expansions first,
// then (doubles) their leftovers into the work-item's store; kGroup, the expansions, then the
// group's superaccumulator through local atomics (the first version: slow when most elements
// miss the expansions, as over a wide range of exponents). Floats take kGroup for kExpansions.
enum class Store { kItem, kExpansions, kGroup };

// auto: floats kItem (a conversion, an index and one plain local addition per element, cheaper
// than the expansions' 12 double additions on any data); doubles kExpansions (the expansions'
// additions on data they hold, the work-item's limbs for the rest, where a vector that misses
// sends the next EX_SKIP_GPU straight there, so wide data pays for few cascades).
Store store_of(const std::string& knob, DType t) {
  if (knob == "group" || (knob == "expansions" && t == DType::kFloat)) return Store::kGroup;
  if (knob == "expansions" || (knob == "auto" && t == DType::kDouble)) return Store::kExpansions;
  return Store::kItem;
}

// The kernel's SA_LIMBS and the bytes of local memory a GPU-shape work-item's store takes.
constexpr std::size_t sa_limbs(DType t) { return t == DType::kFloat ? 12 : 68; }
std::size_t store_bytes(Store st, DType t) {
  if (st == Store::kGroup) return 0;
  if (t == DType::kFloat) return st == Store::kItem ? 16 * 8 : 0;
  return sa_limbs(t) * 8;
}

// The tunables of one shape for one element type.
struct ShapeParams {
  bool cpu = false;
  Store store = Store::kGroup;    // GPU: see Store
  std::size_t item_local = 0;     // bytes of local memory per work-item (stores, expansion tree)
  unsigned vec = 4;               // elements per vector load
  unsigned unroll = 4;            // GPU: vector loads in flight per loop step
  unsigned streams = 1;           // CPU: far-apart parts of a run, each with its own expansions
  std::size_t wg = 256;           // preferred work-items per group
  std::size_t groups_per_cu = 4;  // most groups per compute unit
  std::size_t min_vectors = 1;    // fewest vectors per work-item before another group is added
};

// GPU: fast's GPU shape (16-byte loads, 4 in flight, 256 work-items, 4 groups per compute unit);
// each lane of a load has its own expansion, so a work-item holds vec * terms doubles. Doubles
// kept in the work-item's store take 544 bytes of local memory each: groups of 64, 6 to a
// compute unit (a 228 KiB one), 8 loads in flight to keep as many bytes in flight as before.
// CPU: 8 elements per load (one AVX-512 register of doubles once converted), each work-item's run
// read as 2 streams side by side (2 independent TwoSum chains; 1 and 2 measured alike on PoCL at
// 2^26 floats, 4 about 25% slower: the loop is bound by additions, not latency), optimistic
// blocks of 64 steps, half the additions as fused multiply-adds, one group per core.
ShapeParams shape_params(Shape s, DType t, Store st, unsigned terms) {
  ShapeParams sp;
  if (s == Shape::kGpu) {
    sp.vec = static_cast<unsigned>(16 / dtype_size(t));
    sp.store = st;
    sp.item_local = store_bytes(st, t) + (st == Store::kItem ? 0 : 8 * terms);
    if (t == DType::kDouble && st != Store::kGroup) {
      sp.wg = 64;
      sp.groups_per_cu = 6;
      sp.unroll = 8;
    }
    return sp;
  }
  sp.cpu = true;
  sp.item_local = t == DType::kFloat ? 16 * 8 * 8 : 0;  // bins for each of 8 lanes
  sp.vec = 8;
  sp.unroll = 1;
  sp.streams = 2;
  sp.wg = 1;
  sp.groups_per_cu = 1;
  sp.min_vectors = 4096;
  return sp;
}

cl::Kernel build(Context& ctx, const ReduceProblem& p, const ShapeParams& sp, std::size_t wg,
                 unsigned terms) {
  return ctx.kernel(
      "reduce_exact.cl", "reduce_exact",
      p.cl_options() + " -DWG_SIZE=" + std::to_string(wg) + " -DEXACT_CPU=" + (sp.cpu ? "1" : "0") +
          " -DVEC=" + std::to_string(sp.vec) + " -DUNROLL=" + std::to_string(sp.unroll) +
          " -DSTREAMS=" + std::to_string(sp.streams) +
          " -DEX_BLOCK_LOG2=" + std::to_string(kBlockLog2) +
          " -DEX_FMA_ADDS=" + (sp.cpu ? "1" : "0") + " -DFPE_TERMS=" + std::to_string(terms) +
          " -DEX_DIRECT=" + (!sp.cpu && sp.store == Store::kItem ? "1" : "0") +
          " -DEX_LANE_LIMBS=" + (!sp.cpu && sp.store == Store::kExpansions ? "1" : "0"));
}

// The most work-items a group may have for the local memory the kernel takes (its fixed part:
// the group's superaccumulator, flags, a margin), none when the device reports no size.
std::size_t local_cap(Context& ctx, const ShapeParams& sp, DType t) {
  const std::uint64_t mem = ctx.info().local_mem;
  const std::size_t fixed = sa_limbs(t) * 8 + 64;
  if (sp.item_local == 0 || mem == 0) return ~std::size_t{0};
  return mem > fixed ? static_cast<std::size_t>((mem - fixed) / sp.item_local) : 1;
}

// The launch for shape s on p: group size, group count (forced_groups > 0 fixes it, raised to
// the n / 2^29 the limbs need), elements per work-item, vector width. *kernel receives the
// kernel built for the group size chosen.
LaunchPolicy shape_policy(Context& ctx, const ReduceProblem& p, Shape s, std::size_t local_size,
                          std::size_t forced_groups, unsigned terms, cl::Kernel* kernel) {
  const ShapeParams sp = shape_params(s, p.type, store_of(ctx.tuning().exact_store, p.type), terms);
  const std::size_t cap_wg = local_cap(ctx, sp, p.type);
  if (local_size > cap_wg)
    throw Error(Errc::kUsage, "exact: work-group size " + std::to_string(local_size) +
                                  " needs more local memory than " + ctx.info().name +
                                  " has (at most " + std::to_string(cap_wg) + " work-items)");
  std::size_t pref_wg = sp.wg;
  while (pref_wg > 1 && pref_wg > cap_wg) pref_wg /= 2;
  const std::size_t least = std::max<std::size_t>(1, (p.n + kMaxPerGroup - 1) / kMaxPerGroup);
  const std::size_t cap = std::max(least, ctx.info().compute_units * sp.groups_per_cu);
  const std::size_t nv = std::max<std::size_t>(p.n / sp.vec, 1);
  LaunchPolicy pol;
  *kernel = build(ctx, p, sp, pref_wg, terms);
  pol.wg_size = choose_wg(ctx, *kernel, local_size, pref_wg);
  // The kernel is built for its group size: check the one actually used, so a size the device
  // cannot take is refused here (exit 2) rather than at launch.
  if (pol.wg_size != pref_wg) {
    *kernel = build(ctx, p, sp, pol.wg_size, terms);
    choose_wg(ctx, *kernel, pol.wg_size, pol.wg_size);
  }
  const std::size_t per_group = pol.wg_size * sp.min_vectors;
  pol.groups = forced_groups > 0
                   ? std::max(forced_groups, least)
                   : std::clamp<std::size_t>((nv + per_group - 1) / per_group, least, cap);
  const std::size_t items = pol.groups * pol.wg_size;
  pol.items_per_thread = static_cast<unsigned>((p.n + items - 1) / items);
  pol.vec_width = sp.vec;
  pol.correctly_rounded = true;
  pol.path =
      std::string(shape_name(s)) + " " + dtype_cl_name(p.type) + std::to_string(sp.vec) +
      (sp.cpu ? " x" + std::to_string(sp.streams) + " streams" : " x" + std::to_string(sp.unroll)) +
      (sp.cpu ? " fpe" + std::to_string(terms) + (p.type == DType::kFloat ? " + item bins" : "")
       : sp.store == Store::kItem       ? (p.type == DType::kFloat ? " item bins" : " item limbs")
       : sp.store == Store::kExpansions ? " fpe" + std::to_string(terms) + " + item limbs"
                                        : " fpe" + std::to_string(terms)) +
      " ticket";
  return pol;
}

// One launch of cl/reduce_exact.cl. The plan owns the global superaccumulator (68 limbs cover
// double's) and {flags, ticket}: zeroed here, cleared again by each launch's last group. A
// launch on fewer elements than the plan was made for keeps its groups (each then takes fewer
// than the 2^29 a group may). It leaves at out the rounded sum, then at byte 8 the exact state
// (the superaccumulator's limbs as int64, then the flags as an int64), which a fold of pieces
// reads (run/fold.cpp: exact_state_of, exact_add, exact_round).
class ExactPlan : public ReducePlan {
 public:
  ExactPlan(Context& ctx, const ReduceProblem& p, LaunchPolicy pol, const cl::Kernel& kernel)
      : ReducePlan(ctx, "exact", p, std::move(pol), 0),  // verified bit for bit, not by a depth
        kernel_(kernel),
        acc_(ctx.zeroed_buffer(68 * sizeof(cl_long))),
        state_(ctx.zeroed_buffer(2 * sizeof(cl_uint))) {}

  std::size_t out_bytes() const override { return 8 + 8 * (sa_limbs(problem().type) + 1); }
  bool any_start() const override { return true; }

 private:
  void launch(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
              std::vector<cl::Event>& events) override {
    launch_at(in, 0, n, out, events);
  }
  void launch_at(const cl::Buffer& in, std::size_t first, std::size_t n, const cl::Buffer& out,
                 std::vector<cl::Event>& events) override {
    kernel_.setArg(6, static_cast<cl_ulong>(first));
    kernel_.setArg(0, in);
    kernel_.setArg(1, static_cast<cl_ulong>(n));
    kernel_.setArg(2, acc_);
    kernel_.setArg(3, state_);
    kernel_.setArg(4, out);
    kernel_.setArg(5, cl_double{1.0});  // EX_ADD's one: not a constant the compiler could fold
    events.emplace_back();
    ctx_.queue().enqueueNDRangeKernel(kernel_, cl::NullRange,
                                      cl::NDRange(policy().groups * policy().wg_size),
                                      cl::NDRange(policy().wg_size), nullptr, &events.back());
  }

  cl::Kernel kernel_;
  cl::Buffer acc_, state_;
};

// The plan for shape s; `note` is appended to its path (why the device's own shape was not taken).
std::unique_ptr<ExactPlan> shape_plan(Context& ctx, const ReduceProblem& p, Shape s,
                                      std::size_t local_size, std::size_t forced_groups,
                                      unsigned terms, const std::string& note = "") {
  cl::Kernel k;
  LaunchPolicy pol = shape_policy(ctx, p, s, local_size, forced_groups, terms, &k);
  pol.path += note;
  return std::make_unique<ExactPlan>(ctx, p, std::move(pol), k);
}

// Check data: the first half within 8 binades (the CPU shape's fast blocks), the second over 60,
// subnormals, a pair near the top of the range that cancels, elements the expansions cannot
// take, spread over three groups with a tail.
template <class T> std::vector<T> check_data(std::size_t n) {
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t b = data_bits(11, i);
    const T u = static_cast<T>(static_cast<double>(b >> 11) * 0x1p-53 * 2.0 - 1.0);
    x[i] = std::ldexp(u, i < n / 2 ? static_cast<int>(b % 8) : static_cast<int>(b % 61) - 30);
    if (i % 97 == 5) x[i] = std::numeric_limits<T>::denorm_min() * static_cast<T>(i % 7 + 1);
  }
  const T big = std::numeric_limits<T>::max() / 4;
  x[n / 2] = big;
  x[n - 2] = -big;
  x[n / 3] = -std::numeric_limits<T>::denorm_min();
  return x;
}

// Bitwise check of shape s on type t over three groups, twice (the state must be cleared by
// each launch). Empty when it passes; a kernel file that does not build is an error.
std::string check_shape(Context& ctx, Shape s, DType t, unsigned terms) {
  const std::string what = std::string(shape_name(s)) + " " + dtype_name(t);
  const std::string check = "the start-up check of exact's " + what;
  try {
    const ShapeParams sp = shape_params(s, t, store_of(ctx.tuning().exact_store, t), terms);
    std::size_t wg = sp.wg;
    while (wg > 1 && wg > local_cap(ctx, sp, t)) wg /= 2;
    ReduceProblem p;
    p.op = Op::kSum;
    p.type = p.acc_type = t;
    // GPU: 2 vectors per work-item and a tail; CPU: 2 blocks per work-item, a partial third, a
    // remainder of vectors and a tail.
    p.n = sp.cpu ? 3 * sp.vec * (2 * kBlock * sp.streams + 3 * sp.streams + 1) + sp.vec - 1
                 : 3 * wg * sp.vec * 2 + sp.vec - 1;
    HostArray a;
    a.type = t;
    a.n = p.n;
    a.bytes.resize(p.n * dtype_size(t));
    if (t == DType::kFloat) {
      const auto x = check_data<float>(p.n);
      std::memcpy(a.bytes.data(), x.data(), a.bytes.size());
    } else {
      const auto x = check_data<double>(p.n);
      std::memcpy(a.bytes.data(), x.data(), a.bytes.size());
    }
    const Value want = exact_sum(a);
    const std::unique_ptr<ExactPlan> plan = shape_plan(ctx, p, s, 0, 3, terms);
    cl::Buffer in(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, a.bytes.size(),
                  a.bytes.data());
    const std::size_t out_bytes = plan->out_bytes();
    cl::Buffer out(ctx.context(), CL_MEM_READ_WRITE, out_bytes);
    const ExactState want_state = exact_state(a);
    for (int run = 0; run < 2; ++run) {
      std::vector<unsigned char> got(out_bytes, 0xA5);
      ctx.write(out, out_bytes, got.data(), check);
      std::vector<cl::Event> events;
      plan->enqueue(in, out, events);
      ctx.read(out, out_bytes, got.data(), check);
      const Value v = Value::from_bytes(t, got.data());
      if (!same_bits(v, want)) return what + " check gave " + v.str() + ", expected " + want.str();
      // The state it leaves for a fold: the host's, limb for limb, once carried.
      std::vector<std::int64_t> limbs(sa_limbs(t) + 1);
      std::memcpy(limbs.data(), got.data() + 8, limbs.size() * 8);
      const ExactState st =
          exact_state_of(limbs.data(), sa_limbs(t), static_cast<std::uint64_t>(limbs.back()));
      if (!same_state(st, want_state))
        return what + " check left an exact state other than the host's";
    }
    return "";
  } catch (const Error& e) {
    if (!check_answer(e)) throw;  // reduce_exact.cl that does not build, a time-out
    const std::string msg = e.what();
    return what + " check failed: " + msg.substr(0, msg.find('\n'));
  } catch (const cl::Error& e) {
    return what + " check failed: " + e.what() + " " + cl_error_name(e.err());
  }
}

// The shape for this context and type: the exact-shape knob's or the device type's, confirmed
// by check_shape, else the other. Each check's answer is kept in the context, keyed by the
// shape, the type, the expansion length, the kernel's source and the build options. False (and
// *why the failed checks) when neither passes.
bool chosen_shape(Context& ctx, DType t, Shape* shape, std::string* why) {
  const std::string& forced = ctx.tuning().exact_shape;
  const unsigned terms = ctx.tuning().exact_terms;
  const Shape first = forced == "gpu"     ? Shape::kGpu
                      : forced == "cpu"   ? Shape::kCpu
                      : ctx.info().is_gpu ? Shape::kGpu
                                          : Shape::kCpu;
  const Shape second = first == Shape::kGpu ? Shape::kCpu : Shape::kGpu;
  why->clear();
  for (Shape s : {first, second}) {
    const std::string key = std::string("reduce_exact.") + shape_name(s) + "." + dtype_name(t) +
                            ".fpe" + std::to_string(terms) + "." + ctx.tuning().exact_store + " " +
                            std::to_string(ctx.source_hash("reduce_exact.cl")) + " " +
                            ctx.tuning().build_options;
    const std::string& answer = ctx.probe(key, [&] {
      std::string a = check_shape(ctx, s, t, terms);
      if (ctx.verbose())
        std::cerr << "exact: " << shape_name(s) << " " << dtype_name(t) << " "
                  << (a.empty() ? "passed its check" : a) << "\n";
      return a;
    });
    if (answer.empty()) {
      *shape = s;
      return true;
    }
    *why += (why->empty() ? "" : "; ") + answer;
  }
  return false;
}

class Exact : public ReduceVariant {
 public:
  std::string name() const override { return "exact"; }
  std::string description() const override {
    return "the correctly rounded float/double sum, the same bits on any device: expansions + "
           "superaccumulator";
  }
  std::string unsupported(Context& ctx, const ReduceProblem& p) const override {
    if (std::string why = exact_refusal(p.op, p.type); !why.empty()) return why;
    if (!ctx.info().fp64) return "exact needs double precision (cl_khr_fp64) for its expansions";
    if (!has_int64_atomics(ctx))
      return "exact needs 64-bit global atomics (cl_khr_int64_base_atomics): a trial build failed";
    Shape s;
    std::string why;
    if (!chosen_shape(ctx, p.type, &s, &why)) return "no shape of exact passed its check: " + why;
    return "";
  }

 protected:
  std::unique_ptr<ReducePlan> make_plan(Context& ctx, const ReduceProblem& p,
                                        std::size_t local_size) const override {
    if (std::string why = exact_refusal(p.op, p.type); !why.empty())
      throw Error(Errc::kUsage, "exact: " + why);
    Shape s;
    std::string why;
    if (!chosen_shape(ctx, p.type, &s, &why))
      throw Error(Errc::kUnsupported, "no shape of exact passed its check: " + why);
    return shape_plan(ctx, p, s, local_size, ctx.tuning().exact_groups, ctx.tuning().exact_terms,
                      why.empty() ? "" : " (" + why + ")");
  }
};

}  // namespace

std::unique_ptr<ReduceVariant> make_reduce_exact() { return std::make_unique<Exact>(); }

}  // namespace clreduce
