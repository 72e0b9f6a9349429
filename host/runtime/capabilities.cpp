// capabilities.cpp: the probes behind Context::caps(). Each builds cl/capabilities_probe.cl,
// runs it on a couple of small groups and checks every number on the host; any failure is "no".
#include "runtime/capabilities.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <vector>

#include "clreduce/error.hpp"
#include "runtime/capabilities_detail.hpp"
#include "runtime/context.hpp"

namespace clreduce {
namespace {

constexpr std::size_t kGroups = 2;

std::string yes_no(bool b, const std::string& opts) {
  if (!b) return "no";
  return opts.empty() ? "yes" : "yes(" + opts + ")";
}

// Builds `name` from the probe file; false (with why) on any build or kernel-creation failure.
// A failed probe is no news to the user: Context::kernel keeps the compiler off stderr, and
// --verbose shows the build log.
bool build(Context& ctx, const std::string& name, const std::string& options, cl::Kernel* k,
           std::string* why) {
  try {
    *k = ctx.kernel("capabilities_probe.cl", name, options);
    return true;
  } catch (const Error& e) {
    const std::string msg = e.what();
    *why = "build failed with '" + options + "': " + msg.substr(0, msg.find('\n'));
  } catch (const cl::Error& e) {
    *why = std::string("build failed with '") + options + "': " + e.what() + " " +
           cl_error_name(e.err());
  }
  return false;
}

// Runs k on kGroups groups of wg work-items; false (with why) on any runtime error. The wait is
// bounded by the run's time limit (Context::finish()), as every wait on the device.
bool launch(Context& ctx, cl::Kernel& k, std::size_t wg, std::string* why) {
  try {
    ctx.queue().enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(kGroups * wg), cl::NDRange(wg));
    ctx.finish("a capability probe");
    return true;
  } catch (const cl::Error& e) {
    *why = std::string("run failed: ") + e.what() + " " + cl_error_name(e.err());
  } catch (const Error& e) {
    if (!check_answer(e)) throw;
    *why = std::string("run failed: ") + e.what();
  }
  return false;
}

template <class T> std::vector<T> read(Context& ctx, const cl::Buffer& b, std::size_t count) {
  std::vector<T> v(count);
  ctx.read(b, count * sizeof(T), v.data(), "a capability probe's read-back");
  return v;
}

}  // namespace

bool has_int64_atomics(Context& ctx) {
  return ctx.probe("trial build: int64 base atomics", [&] {
    const std::string src =
        "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
        "__kernel void probe(__global ulong* p) { atom_add((volatile __global ulong*)p, 1ul); }\n";
    return std::string(ctx.try_build(src, "", nullptr) ? "yes" : "no");
  }) == "yes";
}

namespace probe_detail {

bool probe_tail_fold(Context& ctx, int tail, const std::string& extra, std::string* why) {
  const std::string base = "-DCLR_TAIL=" + std::to_string(tail) + " " + extra;
  for (std::size_t wg : {64, 96}) {
    const std::size_t n = kGroups * wg;
    // int64 sum: every element has both words set, so a lost or swapped word shows.
    {
      cl::Kernel k;
      if (!build(ctx, "probe_tail", base + " -DCLR_TYPE=2 -DCLR_OP=0", &k, why)) return false;
      std::vector<std::int64_t> x(n);
      for (std::size_t i = 0; i < n; ++i)
        x[i] = static_cast<std::int64_t>((i + 1) * 0x100000001ull * 2654435761ull);
      cl::Buffer xb(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 8, x.data());
      std::vector<std::int64_t> init(4 * kGroups, 0x5a5a5a5a);
      cl::Buffer tb(ctx.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, init.size() * 8,
                    init.data());
      k.setArg(0, xb);
      k.setArg(1, tb);
      k.setArg(2, cl::Local(wg * 8));
      if (!launch(ctx, k, wg, why)) return false;
      const auto got = read<std::int64_t>(ctx, tb, init.size());
      for (std::size_t g = 0; g < kGroups; ++g) {
        const std::size_t widths[4] = {wg, wg - 1, 33, 1};
        for (std::size_t t = 0; t < 4; ++t) {
          std::uint64_t sum = 0;
          for (std::size_t i = 0; i < widths[t]; ++i)
            sum += static_cast<std::uint64_t>(x[g * wg + i]);
          if (static_cast<std::uint64_t>(got[4 * g + t]) != sum) {
            *why = "wrong int64 sum (group size " + std::to_string(wg) + ", width " +
                   std::to_string(widths[t]) + ")";
            return false;
          }
        }
      }
    }
    // float argmin on distinct values: the value and the first index must both come back.
    {
      cl::Kernel k;
      if (!build(ctx, "probe_tail", base + " -DCLR_TYPE=4 -DCLR_OP=4", &k, why)) return false;
      std::vector<float> x(n);
      for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 37) % 211) - 100.5f;
      cl::Buffer xb(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, x.data());
      std::vector<unsigned char> init(4 * kGroups * 16, 0xa5);
      cl::Buffer tb(ctx.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, init.size(),
                    init.data());
      k.setArg(0, xb);
      k.setArg(1, tb);
      k.setArg(2, cl::Local(wg * 16));
      if (!launch(ctx, k, wg, why)) return false;
      const auto got = read<unsigned char>(ctx, tb, init.size());
      for (std::size_t g = 0; g < kGroups; ++g) {
        const std::size_t widths[4] = {wg, wg - 1, 33, 1};
        for (std::size_t t = 0; t < 4; ++t) {
          std::size_t best = g * wg;
          for (std::size_t i = g * wg; i < g * wg + widths[t]; ++i)
            if (x[i] < x[best]) best = i;
          float v;
          std::int64_t idx;
          std::memcpy(&v, got.data() + (4 * g + t) * 16, 4);
          std::memcpy(&idx, got.data() + (4 * g + t) * 16 + 8, 8);
          if (v != x[best] || idx != static_cast<std::int64_t>(best)) {
            *why = "wrong float argmin (group size " + std::to_string(wg) + ", width " +
                   std::to_string(widths[t]) + ")";
            return false;
          }
        }
      }
    }
  }
  return true;
}

std::string check_nv_partners(const std::vector<cl_uint>& partners) {
  for (std::size_t i = 0; i < partners.size(); ++i)
    if (partners[i] != (i ^ 5))
      return "shfl.sync gave the wrong lane: local ids 0-31 are not one warp";
  return "";
}

std::string check_sub_group_info(const std::vector<cl_uint>& info, std::size_t wg) {
  const std::size_t groups = info.size() / (6 * wg);
  if (groups == 0 || info.size() != groups * 6 * wg) return "sub-group probe: wrong output size";
  for (std::size_t g = 0; g < groups; ++g) {
    // Members of each sub-group, by id: sizes agree, local ids are 0..size-1, ids 0..count-1,
    // the reduction is the members' sum, the scan the sum over members with a lower local id.
    std::map<cl_uint, std::vector<std::size_t>> members;
    for (std::size_t l = 0; l < wg; ++l) members[info[6 * (g * wg + l) + 1]].push_back(l);
    for (const auto& [id, ls] : members) {
      std::set<cl_uint> local_ids;
      cl_uint sum = 0;
      for (std::size_t l : ls) sum += 7u * static_cast<cl_uint>(l) + 1u;
      for (std::size_t l : ls) {
        const cl_uint* w = &info[6 * (g * wg + l)];
        cl_uint scan = 0;
        for (std::size_t m : ls)
          if (info[6 * (g * wg + m) + 2] <= w[2]) scan += 7u * static_cast<cl_uint>(m) + 1u;
        local_ids.insert(w[2]);
        if (w[0] != ls.size() || w[2] >= ls.size() || w[3] != members.size() ||
            id >= members.size())
          return "sub-group sizes or ids are inconsistent";
        if (w[4] != sum || w[5] != scan)
          return "sub_group_reduce_add or sub_group_scan_inclusive_add is wrong";
      }
      if (local_ids.size() != ls.size()) return "sub-group local ids repeat";
    }
  }
  return "";
}

std::string check_wg_collective_values(const std::vector<cl_long>& out, std::size_t wg) {
  if (out.empty() || out.size() % (5 * wg) != 0)
    return "work-group collective probe: wrong output size";
  const auto wide = [](std::int64_t m) { return (3 * m - 50) * 4294967296LL + 1; };
  std::int64_t sum = 0;
  for (std::int64_t m = 0; m < static_cast<std::int64_t>(wg); ++m) sum += 3 * m - 50;
  for (std::size_t i = 0; i < out.size() / 5; ++i) {
    const std::int64_t l = static_cast<std::int64_t>(i % wg);
    std::int64_t incl = 0;
    for (std::int64_t m = 0; m <= l; ++m) incl += wide(m);
    const cl_long* w = &out[5 * i];
    if (w[0] != sum || w[1] != incl || w[2] != incl - wide(l) ||
        w[3] != wide(static_cast<std::int64_t>(wg) - 1) || w[4] != 3 * 5 - 50)
      return "work-group collectives gave wrong numbers";
  }
  return "";
}

}  // namespace probe_detail

namespace {

bool probe_nv_shfl(Context& ctx, std::string* why) {
  if (!ctx.info().is_nvidia) {
    *why = "not an NVIDIA device";
    return false;
  }
  cl::Kernel k;
  if (!build(ctx, "probe_nv_lanes", "-DPROBE=1 -DCLR_TAIL=2", &k, why)) return false;
  const std::size_t wg = 64;
  std::vector<cl_uint> init(kGroups * wg, 0xdeadbeef);
  cl::Buffer b(ctx.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, init.size() * 4,
               init.data());
  k.setArg(0, b);
  if (!launch(ctx, k, wg, why)) return false;
  *why = probe_detail::check_nv_partners(read<cl_uint>(ctx, b, init.size()));
  return why->empty() && probe_detail::probe_tail_fold(ctx, 2, "-DPROBE=1", why);
}

bool check_sub_groups(Context& ctx, const std::string& std_opt, std::string* why) {
  cl::Kernel k;
  if (!build(ctx, "probe_sub_groups", "-DPROBE=2 -DCLR_TAIL=1 " + std_opt, &k, why)) return false;
  const std::size_t wg = 64;
  std::vector<cl_uint> init(6 * kGroups * wg, 0xdeadbeef);
  cl::Buffer b(ctx.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, init.size() * 4,
               init.data());
  k.setArg(0, b);
  if (!launch(ctx, k, wg, why)) return false;
  *why = probe_detail::check_sub_group_info(read<cl_uint>(ctx, b, init.size()), wg);
  if (!why->empty()) {
    *why += " with '" + std_opt + "'";
    return false;
  }
  return probe_detail::probe_tail_fold(ctx, 1, "-DPROBE=2 " + std_opt, why);
}

bool check_wg_collectives(Context& ctx, const std::string& std_opt, std::string* why) {
  cl::Kernel k;
  if (!build(ctx, "probe_wg_collectives", "-DPROBE=3 " + std_opt, &k, why)) return false;
  const std::size_t wg = 64;
  std::vector<cl_long> init(5 * kGroups * wg, 0x5a5a5a5a);
  cl::Buffer b(ctx.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, init.size() * 8,
               init.data());
  k.setArg(0, b);
  if (!launch(ctx, k, wg, why)) return false;
  *why = probe_detail::check_wg_collective_values(read<cl_long>(ctx, b, init.size()), wg);
  if (!why->empty()) *why += " with '" + std_opt + "'";
  return why->empty();
}

// Runs one check, turning any exception (a read-back after a failed kernel, say) into "no".
// A wait past the time limit ends the run (the probe's own build failing is an answer), and so
// does an interrupt.
bool safely(const std::function<bool()>& check, std::string* why) {
  try {
    return check();
  } catch (const cl::Error& e) {
    *why = std::string("failed: ") + e.what() + " " + cl_error_name(e.err());
  } catch (const Error& e) {
    if (e.category() == Errc::kTimeout || e.category() == Errc::kInternal ||
        e.category() == Errc::kInterrupted)
      throw;
    const std::string msg = e.what();
    *why = "failed: " + msg.substr(0, msg.find('\n'));
  }
  return false;
}

// Tries each -cl-std option in turn; the first that passes `check` is recorded in *opt.
bool first_passing(Context& ctx, const std::vector<std::string>& stds,
                   const std::function<bool(Context&, const std::string&, std::string*)>& check,
                   std::string* opt, std::string* why) {
  std::string whys;
  for (const std::string& s : stds) {
    std::string w;
    if (safely([&] { return check(ctx, s, &w); }, &w)) {
      *opt = s;
      return true;
    }
    whys += (whys.empty() ? "" : "; ") + w;
  }
  *why = whys;
  return false;
}

}  // namespace

std::string Capabilities::str() const {
  return "nv_shfl=" + yes_no(nv_shfl, "") + " subgroups=" + yes_no(subgroups, subgroups_options) +
         " wg_collectives=" + yes_no(wg_collectives, wg_collectives_options);
}

Capabilities probe_capabilities(Context& ctx) {
  Capabilities c;
  std::string why;
  auto note = [&](const std::string& name, bool ok) {
    if (!ok) c.detail += (c.detail.empty() ? "" : "; ") + name + ": " + why;
    why.clear();
  };
  const std::string off = "disabled by the disable-caps setting";
  const auto disabled = [&](const char* name) { return cap_disabled(ctx.tuning(), name); };
  if (disabled("nv_shfl"))
    why = off;
  else
    c.nv_shfl = safely([&] { return probe_nv_shfl(ctx, &why); }, &why);
  note("nv_shfl", c.nv_shfl);
  if (disabled("subgroups"))
    why = off;
  else
    c.subgroups = first_passing(ctx, {"-cl-std=CL3.0", "-cl-std=CL2.0"}, check_sub_groups,
                                &c.subgroups_options, &why);
  note("subgroups", c.subgroups);
  if (disabled("wg_collectives"))
    why = off;
  else
    c.wg_collectives = first_passing(ctx, {"-cl-std=CL2.0", "-cl-std=CL3.0"}, check_wg_collectives,
                                     &c.wg_collectives_options, &why);
  note("wg_collectives", c.wg_collectives);
  if (ctx.verbose())
    std::cerr << "capabilities of " << ctx.info().name << ": " << c.str()
              << (c.detail.empty() ? "" : " (" + c.detail + ")") << "\n";
  return c;
}

}  // namespace clreduce
