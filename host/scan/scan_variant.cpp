// scan_variant.cpp: scan -D options, the recursion over tile totals shared by every tiled scan
// (scratch buffers keyed by level, so repetitions and variants reuse them), group-size choice.
#include "scan/scan_variant.hpp"

#include <algorithm>

#include "clreduce/error.hpp"

namespace clreduce {

std::string ScanProblem::cl_options() const {
  return "-DCLR_TYPE=" + std::to_string(static_cast<int>(type)) +
         " -DCLR_ACC=" + std::to_string(static_cast<int>(acc_type)) +
         " -DCLR_OP=" + std::to_string(static_cast<int>(op)) +
         " -DCLR_EXCLUSIVE=" + (exclusive ? "1" : "0") + " -DCLR_SEGMENTED=" + (segmented ? "1" : "0");
}

std::string ScanVariant::unsupported(Context&, const ScanProblem& p) const {
  if (is_arg_op(p.op)) return op_name(p.op) + " has no prefix scan (scans take sum, prod, min, max)";
  return "";
}

std::size_t scan_levels(std::size_t n, std::size_t tile) {
  if (tile < 2) return 0;
  std::size_t levels = 1;
  while (n > tile) {
    n = (n + tile - 1) / tile;
    ++levels;
  }
  return levels;
}

std::string scan_levels_text(std::size_t n, std::size_t tile) {
  const std::size_t l = scan_levels(n, tile);
  return std::to_string(l) + (l == 1 ? " level, " : " levels, ") + std::to_string(2 * l - 1) +
         (l == 1 ? " launch" : " launches");
}

std::uint64_t tiled_scan_depth(std::size_t n, std::size_t tile, std::uint64_t tile_depth) {
  return static_cast<std::uint64_t>(scan_levels(n, tile)) * (tile_depth + 1);
}

namespace {

// The problem of the level above p: its tile totals, scanned inclusively in the accumulator type.
ScanProblem totals_problem(const ScanProblem& p, std::size_t groups) {
  ScanProblem q = p;
  q.type = p.acc_type;
  q.n = groups;
  q.exclusive = false;
  return q;
}

// scan_add for the level whose totals problem is q, and its work-group size.
cl::Kernel add_kernel(Context& ctx, const ScanProblem& q, std::size_t* wg) {
  const auto build = [&](std::size_t w) {
    return ctx.kernel("scan_add.cl", "scan_add", q.cl_options() + " -DWG_SIZE=" + std::to_string(w));
  };
  *wg = choose_scan_wg(ctx, 0, 256, [](std::size_t) { return std::size_t{0}; }, build);
  return build(*wg);
}

// One level's scratch buffers: tile totals, tile flags, first segment starts, scanned totals.
struct LevelBuffers {
  cl::Buffer totals, tile_flags, heads, scanned;
};

LevelBuffers level_buffers(Context& ctx, const ScanProblem& p, std::size_t level, std::size_t groups) {
  const std::string key = "scan.L" + std::to_string(level) + ".";
  LevelBuffers b;
  b.totals = ctx.scratch(key + "totals", groups * p.acc_bytes());
  b.tile_flags = ctx.scratch(key + "tile_flags", groups);
  b.heads = ctx.scratch(key + "heads", groups * sizeof(cl_uint));
  b.scanned = ctx.scratch(key + "scanned", groups * p.acc_bytes());
  return b;
}

void enqueue_level(Context& ctx, const ScanProblem& p, const TiledScan& ts, std::size_t level,
                   const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
                   std::vector<cl::Event>& events) {
  const std::size_t groups = (p.n + ts.tile - 1) / ts.tile;
  const LevelBuffers b = level_buffers(ctx, p, level, groups);
  const cl::Buffer &totals = b.totals, &tile_flags = b.tile_flags, &heads = b.heads, &scanned = b.scanned;
  cl::Kernel k = ts.kernel(p);
  k.setArg(0, in);
  k.setArg(1, flags);
  k.setArg(2, static_cast<cl_ulong>(p.n));
  k.setArg(3, out);
  k.setArg(4, totals);
  k.setArg(5, tile_flags);
  k.setArg(6, heads);
  events.emplace_back();
  ctx.queue().enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(groups * ts.wg_size),
                                   cl::NDRange(ts.wg_size), nullptr, &events.back());
  if (groups == 1) return;

  // The totals are scanned inclusively in the accumulator type by the same recursion.
  const ScanProblem q = totals_problem(p, groups);
  enqueue_level(ctx, q, ts, level + 1, totals, tile_flags, scanned, events);

  std::size_t wg = 0;
  cl::Kernel add = add_kernel(ctx, q, &wg);
  add.setArg(0, out);
  add.setArg(1, static_cast<cl_ulong>(p.n));
  add.setArg(2, static_cast<cl_ulong>(ts.tile));
  add.setArg(3, scanned);
  add.setArg(4, heads);
  events.emplace_back();
  ctx.queue().enqueueNDRangeKernel(add, cl::NullRange, cl::NDRange((groups - 1) * wg),
                                   cl::NDRange(wg), nullptr, &events.back());
}

}  // namespace

void prepare_tiled_scan(Context& ctx, const ScanProblem& p, const TiledScan& ts) {
  if (ts.tile < 2) return;  // enqueue_tiled_scan refuses it
  ScanProblem level = p;
  for (std::size_t l = 0;; ++l) {
    ts.kernel(level);
    const std::size_t groups = (level.n + ts.tile - 1) / ts.tile;
    level_buffers(ctx, level, l, groups);
    if (groups == 1) break;
    level = totals_problem(level, groups);
    std::size_t wg = 0;
    add_kernel(ctx, level, &wg);
  }
}

void enqueue_tiled_scan(Context& ctx, const ScanProblem& p, const TiledScan& ts,
                        const cl::Buffer& in, const cl::Buffer& flags, const cl::Buffer& out,
                        std::vector<cl::Event>& events) {
  if (ts.tile < 2) throw Error(Errc::kUsage, "internal: a scan tile of fewer than 2 elements never ends the recursion");
  enqueue_level(ctx, p, ts, 0, in, flags, out, events);
}

std::size_t choose_scan_wg(Context& ctx, std::size_t local_size, std::size_t preferred,
                           const std::function<std::size_t(std::size_t)>& local_bytes,
                           const std::function<cl::Kernel(std::size_t)>& build, std::size_t min_wg) {
  const DeviceInfo& d = ctx.info();
  if (local_size > 0) {
    const std::string what = "work-group size " + std::to_string(local_size);
    if (local_size < min_wg)
      throw Error(Errc::kUsage, what + " is too small for this variant (at least " + std::to_string(min_wg) + ")");
    if (local_size > d.max_wg_size)
      throw Error(Errc::kUsage, what + " is larger than " + d.name + " allows (" +
                                  std::to_string(d.max_wg_size) + ")");
    if (local_bytes(local_size) > d.local_mem)
      throw Error(Errc::kUsage, what + " needs " + std::to_string(local_bytes(local_size)) +
                                  " bytes of local memory; " + d.name + " has " +
                                  std::to_string(d.local_mem));
    const std::size_t limit = kernel_max_wg(ctx, build(local_size));
    if (local_size > limit)
      throw Error(Errc::kUsage, what + " is larger than " + d.name + " allows for this kernel (" +
                                  std::to_string(limit) + ")");
    return local_size;
  }
  std::size_t wg = 1;
  while (wg * 2 <= std::min(preferred, d.max_wg_size)) wg *= 2;
  while (wg > 1 && (local_bytes(wg) > d.local_mem || kernel_max_wg(ctx, build(wg)) < wg)) wg /= 2;
  if (wg < min_wg) throw Error(Errc::kUsage, d.name + " cannot run this variant: no work-group size fits its local memory");
  return wg;
}

}  // namespace clreduce
