// scan_fast.cpp: the default scan: picks per device, once, from a trial build and a small exact
// check: NVIDIA GPUs scan-lookback (one pass, 16-byte loads); CPUs the CPU-shaped two-pass scan of
// cl/scan_cpu_two_pass.cl (OpenMP's scheme, run per cache-sized superblock); anything else, or a
// path that fails its check, scan-hierarchical. The choice is recorded in LaunchPolicy::path.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include "io/data.hpp"
#include "clreduce/error.hpp"
#include "scan/scan_variant.hpp"

namespace clreduce {
namespace {

constexpr std::size_t kCpuWg = 4;          // work-items per group on the CPU path
constexpr std::size_t kChunkElems = 1u << 20;  // elements per work-item per superblock (CPU path)

enum class Path { kLookback, kCpu, kHierarchical };

// The CPU path's geometry: work-items per group, groups (one per compute unit) and elements per
// work-item per superblock. Tuning and test knobs: scan-chunk, scan-groups (options.hpp).
struct CpuShape {
  std::size_t wg = kCpuWg, groups = 1, chunk = kChunkElems;
  std::size_t chunks() const { return wg * groups; }
  std::size_t superblock() const { return chunks() * chunk; }
};

CpuShape cpu_shape(Context& ctx, std::size_t local_size) {
  CpuShape s;
  s.wg = local_size ? local_size : std::min(kCpuWg, ctx.info().max_wg_size);
  s.groups = std::max<std::size_t>(ctx.info().compute_units, 1);
  s.chunk = ctx.tuning().scan_chunk;
  if (ctx.tuning().scan_groups) s.groups = ctx.tuning().scan_groups;
  return s;
}

// Whether the compiler has clang's __builtin_nontemporal_store and x86's store fence, which
// orders those weakly-ordered stores before the kernel ends (a trial build, cached per device):
// then the CPU path streams its output past the caches.
bool has_nt_stores(Context& ctx) {
  static std::map<cl_device_id, bool> cache;
  const cl_device_id id = ctx.info().device();
  if (auto it = cache.find(id); it != cache.end()) return it->second;
  const std::string src =
      "__kernel void probe(__global long* y) {\n"
      "  __builtin_nontemporal_store((long)get_global_id(0), y);\n"
      "  __builtin_ia32_sfence();\n"
      "}\n";
  return cache[id] = ctx.try_build(src, "", nullptr);
}

std::string cpu_options(Context& ctx, const ScanProblem& p, std::size_t wg) {
  return p.cl_options() + " -DWG_SIZE=" + std::to_string(wg) + (has_nt_stores(ctx) ? " -DCLR_NT_STORES=1" : "");
}

class Fast : public ScanVariant {
 public:
  std::string name() const override { return "scan-fast"; }
  std::string description() const override {
    return "the default scan: look-back on NVIDIA GPUs, a CPU-shaped two-pass scan on CPUs (chosen by a start-up check)";
  }
  std::string unsupported(Context& ctx, const ScanProblem& p) const override {
    std::string why = ScanVariant::unsupported(ctx, p);
    if (why.empty()) {
      // Delegated paths say for themselves (scan-lookback needs 64-bit atomics).
      const Path path = choose(ctx);
      if (path != Path::kCpu) why = delegate(path)->unsupported(ctx, p);
    }
    return why;
  }
  LaunchPolicy policy(Context& ctx, const ScanProblem& p, std::size_t local_size) override {
    const Path path = choose(ctx);
    if (path != Path::kCpu) {
      last_delegate_ = delegate(path);
      LaunchPolicy pol = last_delegate_->policy(ctx, p, local_size);
      pol.path = delegate(path)->name() + ": " + pol.path;
      return pol;
    }
    return cpu_policy(ctx, p, local_size);
  }
  void enqueue(Context& ctx, const ScanProblem& p, const LaunchPolicy& pol, const cl::Buffer& in,
               const cl::Buffer& flags, const cl::Buffer& out, std::vector<cl::Event>& events) override {
    const Path path = choose(ctx);
    if (path != Path::kCpu) return delegate(path)->enqueue(ctx, p, pol, in, flags, out, events);
    cpu_enqueue(ctx, p, pol, in, flags, out, events);
  }
  std::uint64_t depth(const ScanProblem& p, const LaunchPolicy& pol) const override {
    if (pol.path.rfind("cpu", 0) != 0) {
      for (const Path path : {Path::kLookback, Path::kHierarchical})
        if (pol.path.rfind(delegate(path)->name(), 0) == 0) return delegate(path)->depth(p, pol);
    }
    // A chunk is scanned sequentially from a carry that has passed, per superblock before it,
    // through the chunk pairs and one whole chunk: about n / chunks + chunks per superblock.
    const std::size_t chunks = pol.wg_size * pol.groups, chunk = pol.items_per_thread;
    const std::size_t superblocks = (p.n + chunks * chunk - 1) / (chunks * chunk);
    const std::size_t longest = chunk + 16 * chunks;  // the last chunk takes the remainder
    return static_cast<std::uint64_t>(superblocks) * (chunks + longest + 1) + longest + chunks + 8;
  }
  std::string run_note() const override { return last_delegate_ ? last_delegate_->run_note() : ""; }

 private:
  static ScanVariant* delegate(Path path) {
    return find_scan_variant(path == Path::kLookback ? "scan-lookback" : "scan-hierarchical");
  }

  // The path for this device, decided once per device and kernel directory: the fastest whose
  // trial build and small exact check pass. Never from extension strings alone. The scan-fast-path knob = lookback,
  // cpu or hierarchical forces one, unchecked (for tests and comparisons).
  Path choose(Context& ctx) const {
    const std::string& f = ctx.tuning().scan_fast_path;
    if (f == "lookback") return Path::kLookback;
    if (f == "cpu") return Path::kCpu;
    if (f == "hierarchical") return Path::kHierarchical;
    static std::map<std::pair<cl_device_id, std::string>, Path> cache;
    const auto id = std::make_pair(ctx.info().device(), ctx.kernel_dir());
    if (auto it = cache.find(id); it != cache.end()) return it->second;
    Path path = Path::kHierarchical;
    const DeviceInfo& d = ctx.info();
    cache[id] = path;  // while checking (the look-back's fallback may ask)
    if (d.is_gpu && d.is_nvidia) {
      ScanVariant* lb = delegate(Path::kLookback);
      if (checks_out(ctx, [&](const ScanProblem& p) { return lb->unsupported(ctx, p).empty(); },
                     [&](const ScanProblem& p) { return lb->policy(ctx, p, 0); },
                     [&](const ScanProblem& p, const LaunchPolicy& pol, const cl::Buffer& in,
                         const cl::Buffer& flags, const cl::Buffer& out, std::vector<cl::Event>& ev) {
                       lb->enqueue(ctx, p, pol, in, flags, out, ev);
                       return lb->run_note().empty();  // the bound must not be hit
                     }))
        path = Path::kLookback;
    } else if (!d.is_gpu) {
      Fast* self = const_cast<Fast*>(this);
      if (checks_out(ctx, [](const ScanProblem&) { return true; },
                     [&](const ScanProblem& p) { return self->cpu_policy(ctx, p, 0); },
                     [&](const ScanProblem& p, const LaunchPolicy& pol, const cl::Buffer& in,
                         const cl::Buffer& flags, const cl::Buffer& out, std::vector<cl::Event>& ev) {
                       self->cpu_enqueue(ctx, p, pol, in, flags, out, ev);
                       return true;
                     }))
        path = Path::kCpu;
    }
    cache[id] = path;
    return path;
  }

  // Runs one small inclusive int32 -> int64 sum (several tiles or superblocks, a partial last
  // one) and compares every element exactly with the host's; any exception is a failed check.
  template <class Supported, class Policy, class Run>
  static bool checks_out(Context& ctx, Supported supported, Policy policy, Run run) {
    try {
      ScanProblem p;
      p.type = DType::kInt32;
      p.acc_type = DType::kInt64;
      p.n = 3 * 4096 + 1234;  // four look-back tiles of 4096 (the NVIDIA policy), a partial last
      if (!supported(p)) return false;
      const HostArray a = generate(DType::kInt32, p.n, 12345);
      std::vector<cl_long> want(p.n), got(p.n, 0);
      cl_long acc = 0;
      const auto* x = reinterpret_cast<const cl_int*>(a.bytes.data());
      for (std::size_t i = 0; i < p.n; ++i) want[i] = acc += x[i];
      const LaunchPolicy pol = policy(p);
      cl::Buffer in(ctx.context(), CL_MEM_READ_ONLY, a.bytes.size());
      cl::Buffer flags(ctx.context(), CL_MEM_READ_ONLY, 1);
      cl::Buffer out(ctx.context(), CL_MEM_READ_WRITE, p.n * sizeof(cl_long));
      ctx.queue().enqueueWriteBuffer(in, CL_TRUE, 0, a.bytes.size(), a.bytes.data());
      const cl_uchar zero = 0;
      ctx.queue().enqueueWriteBuffer(flags, CL_TRUE, 0, 1, &zero);
      std::vector<cl::Event> events;
      if (!run(p, pol, in, flags, out, events)) return false;
      ctx.queue().enqueueReadBuffer(out, CL_TRUE, 0, p.n * sizeof(cl_long), got.data());
      return got == want;
    } catch (const std::exception&) {
      return false;
    }
  }

  LaunchPolicy cpu_policy(Context& ctx, const ScanProblem& p, std::size_t local_size) {
    const CpuShape s = cpu_shape(ctx, local_size);
    if (local_size > ctx.info().max_wg_size)
      throw Error(Errc::kUsage, "work-group size " + std::to_string(local_size) + " is larger than " +
                                  ctx.info().name + " allows (" + std::to_string(ctx.info().max_wg_size) + ")");
    cl::Kernel k = ctx.kernel("scan_cpu_two_pass.cl", "scan_cpu_two_pass_scan", cpu_options(ctx, p, s.wg));
    ctx.kernel("scan_cpu_two_pass.cl", "scan_cpu_two_pass_reduce", cpu_options(ctx, p, s.wg));
    if (s.wg > kernel_max_wg(ctx, k))
      throw Error(Errc::kUsage, "work-group size " + std::to_string(s.wg) + " is larger than " + ctx.info().name +
                                  " allows for this kernel (" + std::to_string(kernel_max_wg(ctx, k)) + ")");
    LaunchPolicy pol;
    pol.wg_size = s.wg;
    pol.groups = s.groups;
    pol.items_per_thread = static_cast<unsigned>(s.chunk);
    const std::size_t superblocks = (p.n + s.superblock() - 1) / s.superblock();
    pol.path = "cpu two-pass: " + std::to_string(s.chunks()) + " chunks of " + std::to_string(s.chunk) + ", " +
               (has_nt_stores(ctx) ? "streaming stores, " : "") +
               std::to_string(superblocks) + (superblocks == 1 ? " superblock, " : " superblocks, ") +
               std::to_string(2 * superblocks) + " launches";
    last_delegate_ = nullptr;
    return pol;
  }

  void cpu_enqueue(Context& ctx, const ScanProblem& p, const LaunchPolicy& pol, const cl::Buffer& in,
                   const cl::Buffer& flags, const cl::Buffer& out, std::vector<cl::Event>& events) {
    const std::size_t chunks = pol.wg_size * pol.groups;
    const std::size_t superblock = chunks * pol.items_per_thread;
    const std::size_t superblocks = (p.n + superblock - 1) / superblock;
    cl::Buffer& totals = ctx.scratch("scan.fast.totals", chunks * p.acc_bytes());
    cl::Buffer& tile_flags = ctx.scratch("scan.fast.tile_flags", chunks);
    cl::Buffer& carry = ctx.scratch("scan.fast.carry", (superblocks + 1) * p.acc_bytes());
    cl::Kernel reduce = ctx.kernel("scan_cpu_two_pass.cl", "scan_cpu_two_pass_reduce", cpu_options(ctx, p, pol.wg_size));
    cl::Kernel scan = ctx.kernel("scan_cpu_two_pass.cl", "scan_cpu_two_pass_scan", cpu_options(ctx, p, pol.wg_size));
    reduce.setArg(0, in);
    reduce.setArg(1, flags);
    reduce.setArg(4, totals);
    reduce.setArg(5, tile_flags);
    scan.setArg(0, in);
    scan.setArg(1, flags);
    scan.setArg(4, out);
    scan.setArg(5, totals);
    scan.setArg(6, tile_flags);
    scan.setArg(7, carry);
    for (std::size_t sb = 0; sb < superblocks; ++sb) {
      const cl_ulong lo = sb * superblock, len = std::min(superblock, p.n - sb * superblock);
      reduce.setArg(2, lo);
      reduce.setArg(3, len);
      scan.setArg(2, lo);
      scan.setArg(3, len);
      scan.setArg(8, static_cast<cl_ulong>(sb));
      events.emplace_back();
      ctx.queue().enqueueNDRangeKernel(reduce, cl::NullRange, cl::NDRange(chunks), cl::NDRange(pol.wg_size),
                                       nullptr, &events.back());
      events.emplace_back();
      ctx.queue().enqueueNDRangeKernel(scan, cl::NullRange, cl::NDRange(chunks), cl::NDRange(pol.wg_size),
                                       nullptr, &events.back());
    }
  }

  ScanVariant* last_delegate_ = nullptr;
};

}  // namespace

std::unique_ptr<ScanVariant> make_scan_fast() { return std::make_unique<Fast>(); }

}  // namespace clreduce
