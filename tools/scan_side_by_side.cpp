// scan_side_by_side.cpp: int32 inclusive sum scans timed alike: clreduce scan variants on an
// OpenCL device, in interleaved rounds, or (--variants omp) the OpenMP two-pass scan peer
// (host/run/omp_peer.hpp). One kind per process: PoCL's and OpenMP's thread pools in one process
// fight over the cores. Timings are host wall-clock of the scan alone (device: enqueue to queue
// finish, data already on the device, all launches and the gaps between them; peer: the call).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "clreduce/error.hpp"
#include "io/data.hpp"
#include "io/size_arg.hpp"
#include "run/omp_peer.hpp"
#include "run/omp_wait.hpp"
#include "run/timing.hpp"
#include "runtime/context.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_dir.hpp"
#include "runtime/pocl_affinity.hpp"
#include "scan/scan_variant.hpp"

using namespace clreduce;

namespace {

struct Series {
  std::string name;
  std::vector<double> ms;
};

void print(const Series& s, std::size_t bytes) {
  const Spread t = spread(s.ms);
  std::printf("%-34s median %9.3f ms  min %9.3f ms  %7.2f GB/s (median)  %7.2f GB/s (min)\n",
              s.name.c_str(), t.median, t.min, static_cast<double>(bytes) / (t.median * 1e6),
              static_cast<double>(bytes) / (t.min * 1e6));
}

}  // namespace

const char* kUsage =
    "usage: scan_side_by_side [--size N] [--acc int64|int32] [--device D] [--variants a,b | omp]\n"
    "                         [--rounds R]\n"
    "Times int32 inclusive sum scans alike, in interleaved rounds after one warm-up round:\n"
    "clreduce's scan variants on an OpenCL device (default scan-fast,scan-hierarchical), or with\n"
    "--variants omp the OpenMP two-pass scan peer (one kind per process: PoCL's and OpenMP's\n"
    "threads would fight over the cores). Prints the median and fastest time and GB/s of each.\n"
    "  --size N      elements: N, 2^K or NeK (default 2^24)\n"
    "  --acc T       output type: int64 (NumPy's cumsum of int32, default) or int32 (wrapping)\n"
    "  --device D    device index, type (cpu, gpu) or name substring (default 0)\n"
    "  --variants V  comma-separated scan-* variants, or omp\n"
    "  --rounds R    timed rounds, 1 to 100000 (default 11)\n";

int main(int argc, char** argv) {
  std::string size = "2^24", acc = "int64", device = "0", variants = "scan-fast,scan-hierarchical";
  int rounds = 11;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    const bool known =
        a == "--size" || a == "--acc" || a == "--device" || a == "--variants" || a == "--rounds";
    if (!known || i + 1 >= argc) {
      std::fprintf(
          stderr, "scan_side_by_side: %s (see --help)\n",
          known ? (a + " needs a value").c_str() : ("unknown argument '" + a + "'").c_str());
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--size")
      size = v;
    else if (a == "--acc")
      acc = v;
    else if (a == "--device")
      device = v;
    else if (a == "--variants")
      variants = v;
    else {
      const bool digits =
          !v.empty() && v.size() <= 6 && v.find_first_not_of("0123456789") == std::string::npos;
      rounds = digits ? std::atoi(v.c_str()) : 0;
      if (rounds < 1 || rounds > 100000) {
        std::fprintf(
            stderr,
            "scan_side_by_side: --rounds must be a whole number from 1 to 100000, not '%s'\n",
            v.c_str());
        return 2;
      }
    }
  }
  if (variants == "omp") reexec_with_passive_omp_wait(argv);  // omp_wait.hpp
  pin_pocl_workers();  // as the clreduce program does (pocl_affinity.hpp)
  try {
    if (acc != "int64" && acc != "int32") throw Error(Errc::kUsage, "--acc int64 or int32");
    const std::size_t n = parse_size(size);
    const HostArray a = generate(DType::kInt32, n, 1);
    const auto* x = reinterpret_cast<const std::int32_t*>(a.bytes.data());
    const std::size_t out_size = acc == "int64" ? 8 : 4;
    const std::size_t bytes = n * (4 + out_size);

    if (variants == "omp") {
      Series peer{"omp two-pass int32->" + acc, {}};
      std::vector<std::int64_t> y64(acc == "int64" ? n : 0);
      std::vector<std::int32_t> y32(acc == "int32" ? n : 0);
      int threads = 1;
      for (int r = -1; r < rounds; ++r) {
        const PeerTiming t = acc == "int64" ? omp_scan_i32_i64(x, n, y64.data(), 0, 1)
                                            : omp_scan_i32_i32(x, n, y32.data(), 0, 1);
        threads = t.threads;
        if (r >= 0) peer.ms.push_back(t.ms_median);
      }
      std::printf("n = %zu int32 inclusive sum -> %s, %d rounds, OpenMP threads %d\n", n,
                  acc.c_str(), rounds, threads);
      print(peer, bytes);
      return 0;
    }
    const auto devices = list_devices();
    Context ctx(select_device(devices, device), find_kernel_dir("", true), false,
                tuning_from_env());
    ScanProblem p;
    p.type = DType::kInt32;
    p.acc_type = resolve_acc(Op::kSum, DType::kInt32, acc);
    p.n = n;
    cl::Buffer in(ctx.context(), CL_MEM_READ_ONLY, a.bytes.size());
    cl::Buffer flags(ctx.context(), CL_MEM_READ_ONLY, 1);
    cl::Buffer out(ctx.context(), CL_MEM_READ_WRITE, n * out_size);
    ctx.queue().enqueueWriteBuffer(in, CL_TRUE, 0, a.bytes.size(), a.bytes.data());

    std::vector<std::unique_ptr<ScanPlan>> plans;
    std::vector<Series> series;
    for (std::size_t pos = 0; pos <= variants.size();) {
      const std::size_t comma = std::min(variants.find(',', pos), variants.size());
      const std::string name = variants.substr(pos, comma - pos);
      ScanVariant* v = find_scan_variant(name);
      if (!v) throw Error(Errc::kUsage, "unknown scan variant '" + name + "'");
      plans.push_back(v->plan(ctx, p, 0));
      series.push_back({name + " [" + plans.back()->policy().path + "]", {}});
      pos = comma + 1;
    }
    // The reference for the check after the last round: the sequential loop, wrapping.
    std::vector<unsigned char> want(n * out_size), check(n * out_size);
    std::uint64_t run = 0;
    for (std::size_t i = 0; i < n; ++i) {
      run += static_cast<std::uint64_t>(static_cast<std::int64_t>(x[i]));
      std::memcpy(want.data() + i * out_size, &run, out_size);  // little-endian: the low bytes
    }
    for (int r = -1; r < rounds; ++r) {  // round -1 warms up
      for (std::size_t k = 0; k < plans.size(); ++k) {
        std::vector<cl::Event> events;
        ctx.queue().finish();
        const double t0 = now_ms();
        plans[k]->enqueue(in, flags, out, events);
        ctx.queue().finish();
        if (r >= 0) series[k].ms.push_back(now_ms() - t0);
        if (r == rounds - 1) {  // the result must match the sequential scan
          ctx.queue().enqueueReadBuffer(out, CL_TRUE, 0, check.size(), check.data());
          if (check != want)
            throw Error(Errc::kInternal,
                        plans[k]->variant() + " disagrees with the sequential scan");
        }
      }
    }
    std::printf(
        "n = %zu int32 inclusive sum -> %s, %d rounds, device %s; GB/s counts input read + output "
        "written\n",
        n, acc.c_str(), rounds, ctx.info().name.c_str());
    for (const Series& s : series) print(s, bytes);
  } catch (const Error& e) {
    std::fprintf(stderr, "scan_side_by_side: %s\n", e.what());
    return e.category() == Errc::kUsage ? 2 : 1;
  } catch (const cl::Error& e) {
    std::fprintf(stderr, "scan_side_by_side: %s: %s\n", e.what(), cl_error_name(e.err()));
    return 1;
  }
  return 0;
}
