// scan_fast.cpp: the default scan: picks per device, once, from a trial build and a small exact
// check: NVIDIA GPUs scan-lookback (one pass, 16-byte loads); CPUs the CPU-shaped single pass of
// cl/scan_cpu_lookback.cl (cache-sized tiles, one work-item each, folded, looked back and scanned
// again from cache: 2n moves), else the two-pass scan of cl/scan_cpu_two_pass.cl (OpenMP's
// scheme, 3n moves); anything else, or a path that fails its check, scan-hierarchical. The choice
// is kept in the Context, typed in the plan and recorded in LaunchPolicy::path. A path's kernel
// file that does not build is an error (exit 4), never a reason to take another path.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <utility>

#include "clreduce/error.hpp"
#include "io/data.hpp"
#include "scan/scan_variant.hpp"

namespace clreduce {
namespace {

constexpr std::size_t kCpuWg = 4;  // work-items per group on the CPU path

enum class Path { kLookback, kCpu, kCpuLookback, kHierarchical };

// The CPU path's geometry: work-items per group, groups (one per compute unit) and elements per
// work-item per superblock. Tuning and test knobs: scan-chunk, scan-groups (options.hpp).
struct CpuShape {
  std::size_t wg = kCpuWg, groups = 1, chunk = 1;
  std::size_t chunks() const { return wg * groups; }
  std::size_t superblock() const { return chunks() * chunk; }
};

CpuShape cpu_shape(const Context& ctx, std::size_t local_size) {
  CpuShape s;
  s.wg = local_size ? local_size : std::min(kCpuWg, ctx.info().max_wg_size);
  // Four groups per compute unit, as fast's CPU shape (reduce_fast.cpp): PoCL's threads take
  // groups as they free up, so one core held up elsewhere delays a quarter of its share.
  s.groups = 4 * std::max<std::size_t>(ctx.info().compute_units, 1);
  s.chunk = ctx.tuning().scan_chunk;
  if (ctx.tuning().scan_groups) s.groups = ctx.tuning().scan_groups;
  return s;
}

// Whether the compiler has clang's __builtin_nontemporal_store and x86's store fence, which
// orders those weakly-ordered stores before the kernel ends (a trial build, kept in the
// context): then the CPU path streams its output past the caches.
bool has_nt_stores(Context& ctx) {
  return ctx.probe("trial build: nontemporal stores", [&] {
    const std::string src =
        "__kernel void probe(__global long* y) {\n"
        "  __builtin_nontemporal_store((long)get_global_id(0), y);\n"
        "  __builtin_ia32_sfence();\n"
        "}\n";
    return std::string(ctx.try_build(src, "", nullptr) ? "yes" : "no");
  }) == "yes";
}

// Whether a CPU path streams this scan's output past the caches: the scan-nt-stores knob (on:
// where the trial build has them; off: never; auto: as on, unless the scan's input and output
// fit in a quarter of the device's global memory cache, where the output written through the
// caches stays there rather than going out to memory).
bool nt_stores_for(Context& ctx, const ScanProblem& p) {
  const std::string& knob = ctx.tuning().scan_nt_stores;
  if (knob == "off") return false;
  const double cache = static_cast<double>(ctx.info().global_cache);
  const double bytes =
      static_cast<double>(p.n) * static_cast<double>(dtype_size(p.type) + p.acc_bytes());
  if (knob == "auto" && cache > 0 && bytes <= cache / 4) return false;
  return has_nt_stores(ctx);
}

std::string cpu_options(Context& ctx, const ScanProblem& p, std::size_t wg) {
  return p.cl_options() + " -DWG_SIZE=" + std::to_string(wg) +
         (nt_stores_for(ctx, p) ? " -DCLR_NT_STORES=1" : "");
}

// The CPU-shaped two-pass scan: per superblock, scan_cpu_two_pass_reduce folds each work-item's
// chunk, scan_cpu_two_pass_scan scans it from the carry; superblocks are counted from the length at
// each launch.
class CpuScanPlan : public ScanPlan {
 public:
  CpuScanPlan(Context& ctx, const ScanProblem& p, const LaunchPolicy& pol, std::uint64_t depth,
              const cl::Kernel& reduce, const cl::Kernel& scan)
      : ScanPlan(ctx, "scan-fast", p, pol, depth), reduce_(reduce), scan_(scan) {
    const std::size_t chunks = pol.wg_size * pol.groups;
    const std::size_t superblock = chunks * pol.items_per_thread;
    const std::size_t superblocks = (p.n + superblock - 1) / superblock;
    totals_ = ctx.zeroed_buffer(chunks * p.acc_bytes());
    tile_flags_ = ctx.zeroed_buffer(chunks);
    carry_ = ctx.zeroed_buffer((superblocks + 1) * p.acc_bytes());
  }

 private:
  void launch(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out, std::size_t n,
              std::vector<cl::Event>& events) override {
    const std::size_t wg = policy().wg_size, chunks = wg * policy().groups;
    const std::size_t superblock = chunks * policy().items_per_thread;
    const std::size_t superblocks = (n + superblock - 1) / superblock;
    reduce_.setArg(0, in);
    reduce_.setArg(1, flags);
    reduce_.setArg(4, totals_);
    reduce_.setArg(5, tile_flags_);
    scan_.setArg(0, in);
    scan_.setArg(1, flags);
    scan_.setArg(4, out);
    scan_.setArg(5, totals_);
    scan_.setArg(6, tile_flags_);
    scan_.setArg(7, carry_);
    for (std::size_t sb = 0; sb < superblocks; ++sb) {
      const cl_ulong lo = sb * superblock, len = std::min(superblock, n - sb * superblock);
      reduce_.setArg(2, lo);
      reduce_.setArg(3, len);
      scan_.setArg(2, lo);
      scan_.setArg(3, len);
      scan_.setArg(8, static_cast<cl_ulong>(sb));
      events.emplace_back();
      ctx_.queue().enqueueNDRangeKernel(reduce_, cl::NullRange, cl::NDRange(chunks),
                                        cl::NDRange(wg), nullptr, &events.back());
      events.emplace_back();
      ctx_.queue().enqueueNDRangeKernel(scan_, cl::NullRange, cl::NDRange(chunks), cl::NDRange(wg),
                                        nullptr, &events.back());
    }
  }

  cl::Kernel reduce_, scan_;
  cl::Buffer totals_, tile_flags_, carry_;
};

// The CPU-shaped single pass (cl/scan_cpu_lookback.cl): one work-item per group, one group per
// cache-sized tile, each folding its tile, looking back one descriptor at a time (folding a
// predecessor's tile itself where its descriptor stays unpublished) and scanning its tile again
// from cache.
class CpuLookbackPlan : public LookbackRunPlan {
 public:
  CpuLookbackPlan(Context& ctx, const ScanProblem& p, const LaunchPolicy& pol, std::uint64_t depth,
                  const cl::Kernel& kernel)
      : LookbackRunPlan(ctx, "scan-fast", p, pol, depth, kernel, pol.groups) {}

 private:
  void launch(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out, std::size_t n,
              std::vector<cl::Event>& events) override {
    const std::size_t tile = policy().items_per_thread;
    kernel_.setArg(0, in);
    kernel_.setArg(1, flags);
    kernel_.setArg(2, static_cast<cl_ulong>(n));
    kernel_.setArg(3, static_cast<cl_ulong>(tile));
    kernel_.setArg(4, out);
    run(5, (n + tile - 1) / tile, 1, events);
  }
};

// The CPU look-back path's tile for n elements: the scan-tile knob, or auto: 32768 elements
// (128 KiB of int32, within a core's L2 on both measured CPUs, so the second read of a tile hits
// cache), and where that leaves fewer than 4 tiles a compute unit, about 8 a unit, at least 8192
// (the 16-core Xeon at 2^20: 8192 ran 0.215-0.225 ms where 32768 ran 0.288-0.292 and 16384
// 0.278; at 2^21, 4 tiles a unit, 32768 stays ahead: docs/PERF.md).
std::size_t cpu_scan_tile(const Context& ctx, std::size_t n) {
  if (ctx.tuning().scan_tile) return ctx.tuning().scan_tile;
  constexpr std::size_t kTile = 32768, kSmallest = 8192;
  const std::size_t units = std::max<std::size_t>(ctx.info().compute_units, 1);
  if (n >= 4 * units * kTile) return kTile;
  std::size_t tile = kSmallest;
  while (tile < kTile && tile * 8 * units < n) tile *= 2;
  return tile;
}

// The CPU look-back path's plan: tiles of cpu_scan_tile().
std::unique_ptr<ScanPlan> make_scan_cpu_lookback_plan(Context& ctx, const ScanProblem& p) {
  const std::size_t tile = cpu_scan_tile(ctx, p.n);
  const std::size_t tiles = (p.n + tile - 1) / tile;
  if (tiles > 0xFFFFFFFFu) throw Error(Errc::kUnsupported, "scan-fast: more than 2^32 tiles");
  // Reads of an unpublished predecessor's descriptor before folding its tile: the
  // lookback-limit knob, else about a second of polling.
  const unsigned limit = ctx.tuning().lookback_limit >= 0
                             ? static_cast<unsigned>(ctx.tuning().lookback_limit)
                             : (1u << 24);
  const cl::Kernel kernel =
      ctx.kernel("scan_cpu_lookback.cl", "scan_cpu_lookback",
                 p.cl_options() + (nt_stores_for(ctx, p) ? " -DCLR_NT_STORES=1" : "") +
                     " -DLB_LIMIT=" + std::to_string(limit) + "u");
  LaunchPolicy pol;
  pol.wg_size = 1;
  pol.items_per_thread = static_cast<unsigned>(tile);
  pol.vec_width = 1;
  pol.groups = tiles;
  pol.path = "cpu look-back: " + std::to_string(tiles) + (tiles == 1 ? " tile" : " tiles") +
             " of " + std::to_string(tile) + ", " +
             (nt_stores_for(ctx, p) ? "streaming stores, " : "") + "1 launch";
  // A tile's elements pass through the chain of tile prefixes before it (each a tile's fold,
  // by its own group or a successor's) and its own run.
  return std::make_unique<CpuLookbackPlan>(ctx, p, pol, tiles + tile + 8, kernel);
}

// scan-fast's plan: the path taken, as a type, and the plan of that path (the CPU plan, or the
// delegate variant's under scan-fast's name, its path prefixed with the delegate's name).
class FastPlan : public ScanPlan {
 public:
  FastPlan(Context& ctx, const ScanProblem& p, Path path, std::unique_ptr<ScanPlan> inner,
           const LaunchPolicy& pol)
      : ScanPlan(ctx, "scan-fast", p, pol, inner->depth()), path_(path), inner_(std::move(inner)) {}

  Path path() const { return path_; }

 private:
  void launch(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out, std::size_t n,
              std::vector<cl::Event>& events) override {
    inner_->enqueue(in, flags, out, 0, n, nullptr, events);
  }
  // A delegate made with a carry-in applies it itself (scan-lookback in its kernel).
  bool launch_carry(const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
                    std::size_t n, const std::vector<unsigned char>& carry,
                    std::vector<cl::Event>& events) override {
    if (!inner_->problem().carry_in)
      return ScanPlan::launch_carry(in, flags, out, n, carry, events);
    const Value c = Value::from_bytes(problem().acc_type, carry.data());
    inner_->enqueue(in, flags, out, 0, n, &c, events);
    return true;
  }

  Path path_;
  std::unique_ptr<ScanPlan> inner_;
};

// Runs small inclusive int32 sums, into int64 and into int32 (the two accumulator sizes, which
// may run different shapes), of n elements on the plan `make` gives, and compares every element
// exactly with the host's; a wrong element is a failed check, and so is an error that is the
// check's answer (check_answer(): the device cannot run the path). A kernel file that does not
// build, and a wait past the time limit, are errors. `check` names the check in a time-out's
// message.
bool checks_out(Context& ctx, std::size_t n, const std::string& check,
                const std::function<std::unique_ptr<ScanPlan>(const ScanProblem&)>& make) {
  try {
    for (const DType acc : {DType::kInt64, DType::kInt32}) {
      ScanProblem p;
      p.type = DType::kInt32;
      p.acc_type = acc;
      p.n = n;
      const HostArray a = generate(DType::kInt32, p.n, 12345);
      std::vector<cl_long> want(p.n);
      cl_long sum = 0;
      const auto* x = reinterpret_cast<const cl_int*>(a.bytes.data());
      for (std::size_t i = 0; i < p.n; ++i) want[i] = sum += x[i];  // |sum| <= 1000 n: no wrap
      const std::unique_ptr<ScanPlan> plan = make(p);
      // Inputs copied as the buffers are made: nothing to wait for before the launch.
      cl::Buffer in(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, a.bytes.size(),
                    const_cast<unsigned char*>(a.bytes.data()));
      cl_uchar zero = 0;
      cl::Buffer flags(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, std::size_t{1},
                       static_cast<void*>(&zero));
      cl::Buffer out(ctx.context(), CL_MEM_READ_WRITE, p.n * p.acc_bytes());
      std::vector<cl::Event> events;
      plan->enqueue(in, flags, out, events);
      std::vector<cl_long> got(p.n, 0);
      if (acc == DType::kInt64) {
        ctx.read(out, p.n * sizeof(cl_long), got.data(), check);
      } else {
        std::vector<cl_int> narrow(p.n, 0);
        ctx.read(out, p.n * sizeof(cl_int), narrow.data(), check);
        std::copy(narrow.begin(), narrow.end(), got.begin());
      }
      if (got != want) return false;
    }
    return true;
  } catch (const Error& e) {
    if (!check_answer(e)) throw;
    return false;
  } catch (const cl::Error&) {
    return false;
  }
}

// Whether scan-lookback passes the check here (kept in the context, keyed by its kernel's text
// and the knobs that shape it).
bool lookback_checks_out(Context& ctx) {
  const Tuning& t = ctx.tuning();
  const std::string key =
      "scan-fast check: lookback " + std::to_string(ctx.source_hash("scan_lookback.cl")) +
      " limit=" + std::to_string(t.lookback_limit) + " rows=" + std::to_string(t.lookback_rows) +
      " vec=" + std::to_string(t.lookback_vec) + " read=" + t.lookback_read +
      " ids=" + t.lookback_ids + " span=" + std::to_string(t.lookback_span) + " " + t.build_options;
  return ctx.probe(key, [&] {
    const ScanVariant* lb = find_scan_variant("scan-lookback");
    // Enough tiles of the largest shape (8192 elements) that the plan takes it, as at large
    // sizes: one per compute unit (rows_of in scan_lookback.cpp) and more, a partial last one.
    const std::size_t n =
        (2 * std::max<std::size_t>(ctx.info().compute_units, 1) + 7) * 8192 + 1234;
    const bool ok = checks_out(ctx, n, "the start-up check of scan-fast's look-back path",
                               [&](const ScanProblem& p) -> std::unique_ptr<ScanPlan> {
                                 if (!lb->unsupported(ctx, p).empty())
                                   throw Error(Errc::kUnsupported, "unsupported");
                                 return lb->plan(ctx, p, 0);
                               });
    return std::string(ok ? "yes" : "no");
  }) == "yes";
}

// Whether the CPU look-back path passes the check here (kept in the context, keyed by its
// kernel's text and the knobs that shape it): a few tiles, a partial last one.
bool cpu_lookback_checks_out(Context& ctx) {
  const Tuning& t = ctx.tuning();
  const std::string key =
      "scan-fast check: cpu-lookback " + std::to_string(ctx.source_hash("scan_cpu_lookback.cl")) +
      " tile=" + std::to_string(t.scan_tile) + " limit=" + std::to_string(t.lookback_limit) +
      " nt=" + t.scan_nt_stores + " " + t.build_options;
  return ctx.probe(key, [&] {
    const std::size_t n = std::min<std::size_t>(5 * cpu_scan_tile(ctx, std::size_t{1} << 30) + 1234,
                                                std::size_t{1} << 22);
    const bool ok = checks_out(
        ctx, n, "the start-up check of scan-fast's cpu look-back path",
        [&](const ScanProblem& p) -> std::unique_ptr<ScanPlan> {
          if (!find_scan_variant("scan-lookback")->unsupported(ctx, p).empty())  // 64-bit atomics
            throw Error(Errc::kUnsupported, "unsupported");
          return make_scan_cpu_lookback_plan(ctx, p);
        });
    return std::string(ok ? "yes" : "no");
  }) == "yes";
}

// The path for this device: the fastest whose trial build and small exact check pass (answers
// kept in the context), never from extension strings alone. The scan-fast-path knob =
// lookback, cpu or hierarchical forces one, unchecked (for tests and comparisons).
Path choose(Context& ctx) {
  const std::string& f = ctx.tuning().scan_fast_path;
  if (f == "lookback") return Path::kLookback;
  if (f == "cpu") return Path::kCpu;
  if (f == "cpu-lookback") return Path::kCpuLookback;
  if (f == "hierarchical") return Path::kHierarchical;
  const DeviceInfo& d = ctx.info();
  if (d.is_gpu && d.is_nvidia && lookback_checks_out(ctx)) return Path::kLookback;
  if (!d.is_gpu && cpu_lookback_checks_out(ctx)) return Path::kCpuLookback;
  if (!d.is_gpu && scan_cpu_path_checks_out(ctx)) return Path::kCpu;
  return Path::kHierarchical;
}

const ScanVariant& delegate(Path path) {
  return *find_scan_variant(path == Path::kLookback ? "scan-lookback" : "scan-hierarchical");
}

class Fast : public ScanVariant {
 public:
  std::string name() const override { return "scan-fast"; }
  std::string description() const override {
    return "the default scan: look-back on NVIDIA GPUs, a CPU-shaped look-back over cache-sized "
           "tiles on CPUs (chosen by a start-up check)";
  }
  std::string unsupported(Context& ctx, const ScanProblem& p) const override {
    std::string why = ScanVariant::unsupported(ctx, p);
    if (why.empty()) {
      // Delegated paths say for themselves (scan-lookback needs 64-bit atomics).
      const Path path = choose(ctx);
      if (path == Path::kCpuLookback && !ctx.info().is_gpu)
        why = find_scan_variant("scan-lookback")->unsupported(ctx, p);  // 64-bit atomics
      else if (path != Path::kCpu && path != Path::kCpuLookback)
        why = delegate(path).unsupported(ctx, p);
    }
    return why;
  }

 protected:
  std::unique_ptr<ScanPlan> make_plan(Context& ctx, const ScanProblem& p,
                                      std::size_t local_size) const override {
    const Path path = choose(ctx);
    ScanProblem q = p;
    q.carry_in = false;  // the CPU paths: applied once, by this plan
    if (path == Path::kCpu || path == Path::kCpuLookback) {
      // The single pass runs one work-item per group: a group size asked for (--local-size)
      // takes the two-pass path, which has groups of that size.
      std::unique_ptr<ScanPlan> inner = path == Path::kCpu || local_size > 1
                                            ? make_scan_cpu_plan(ctx, q, local_size)
                                            : make_scan_cpu_lookback_plan(ctx, q);
      const LaunchPolicy pol = inner->policy();
      return std::make_unique<FastPlan>(ctx, p, path, std::move(inner), pol);
    }
    q.carry_in = p.carry_in;  // a delegate takes the carry (launch_carry)
    std::unique_ptr<ScanPlan> inner = delegate(path).plan(ctx, q, local_size);
    LaunchPolicy pol = inner->policy();
    pol.path = delegate(path).name() + ": " + pol.path;
    return std::make_unique<FastPlan>(ctx, p, path, std::move(inner), pol);
  }
};

}  // namespace

std::unique_ptr<ScanPlan> make_scan_cpu_plan(Context& ctx, const ScanProblem& p,
                                             std::size_t local_size) {
  const CpuShape s = cpu_shape(ctx, local_size);
  if (local_size > ctx.info().max_wg_size)
    throw Error(Errc::kUsage, "work-group size " + std::to_string(local_size) + " is larger than " +
                                  ctx.info().name + " allows (" +
                                  std::to_string(ctx.info().max_wg_size) + ")");
  cl::Kernel scan =
      ctx.kernel("scan_cpu_two_pass.cl", "scan_cpu_two_pass_scan", cpu_options(ctx, p, s.wg));
  cl::Kernel reduce =
      ctx.kernel("scan_cpu_two_pass.cl", "scan_cpu_two_pass_reduce", cpu_options(ctx, p, s.wg));
  if (s.wg > kernel_max_wg(ctx, scan))
    throw Error(Errc::kUsage, "work-group size " + std::to_string(s.wg) + " is larger than " +
                                  ctx.info().name + " allows for this kernel (" +
                                  std::to_string(kernel_max_wg(ctx, scan)) + ")");
  LaunchPolicy pol;
  pol.wg_size = s.wg;
  pol.groups = s.groups;
  pol.items_per_thread = static_cast<unsigned>(s.chunk);
  const std::size_t superblocks = (p.n + s.superblock() - 1) / s.superblock();
  pol.path = "cpu two-pass: " + std::to_string(s.chunks()) + " chunks of " +
             std::to_string(s.chunk) + ", " + (nt_stores_for(ctx, p) ? "streaming stores, " : "") +
             std::to_string(superblocks) + (superblocks == 1 ? " superblock, " : " superblocks, ") +
             std::to_string(2 * superblocks) + " launches";
  // A chunk is scanned sequentially from a carry that has passed, per superblock before it,
  // through the chunk pairs and one whole chunk: about n / chunks + chunks per superblock.
  const std::size_t chunks = s.chunks();
  const std::size_t longest = s.chunk + 16 * chunks;  // the last chunk takes the remainder
  const std::uint64_t depth =
      static_cast<std::uint64_t>(superblocks) * (chunks + longest + 1) + longest + chunks + 8;
  return std::make_unique<CpuScanPlan>(ctx, p, pol, depth, reduce, scan);
}

bool scan_cpu_path_checks_out(Context& ctx) {
  const Tuning& t = ctx.tuning();
  const std::string key =
      "scan-fast check: cpu " + std::to_string(ctx.source_hash("scan_cpu_two_pass.cl")) +
      " chunk=" + std::to_string(t.scan_chunk) + " groups=" + std::to_string(t.scan_groups) +
      " nt=" + t.scan_nt_stores + " " + t.build_options;
  return ctx.probe(key, [&] {
    const bool ok =
        checks_out(ctx, 3 * 4096 + 1234, "the start-up check of scan-fast's cpu two-pass path",
                   [&](const ScanProblem& p) { return make_scan_cpu_plan(ctx, p, 0); });
    return std::string(ok ? "yes" : "no");
  }) == "yes";
}

std::unique_ptr<ScanVariant> make_scan_fast() { return std::make_unique<Fast>(); }

std::unique_ptr<ScanPlan> make_named_scan_plan(Context& ctx, const ScanProblem& p,
                                               const std::string& variant, std::size_t local_size) {
  const std::string name = variant.empty() ? "scan-fast" : variant;
  const ScanVariant* v = find_scan_variant(name);
  if (!v) throw Error(Errc::kUsage, "unknown scan variant '" + name + "'");
  if (const std::string why = v->unsupported(ctx, p); !why.empty())
    throw Error(Errc::kUnsupported, name + " cannot run this on " + ctx.info().name + ": " + why);
  return v->plan(ctx, p, local_size);
}

}  // namespace clreduce
