// main.cpp: the clreduce command line. Parses flags (CLI11), picks the device and variants,
// runs them through the library, prints a table or JSON lines. One try block maps every error
// to a one-line message and a documented exit code.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <new>

#include "clreduce/options.hpp"
#include "clreduce/version.hpp"
#include "runtime/context.hpp"
#include "io/data.hpp"
#include "runtime/device.hpp"
#include "clreduce/error.hpp"
#include "runtime/kernel_dir.hpp"
#include "reduce/ladder.hpp"
#include "io/npy.hpp"
#include "io/report.hpp"
#include "run/runner.hpp"
#include "run/scan_runner.hpp"
#include "io/size_arg.hpp"
#include "exit_codes.hpp"
#include "reduce/variant.hpp"
#include "variant_plan.hpp"

using namespace clreduce;

namespace {

const char* kExitCodes =
    "Exit codes:\n"
    "  0  every run verified\n"
    "  1  a device result did not match the sequential reference\n"
    "  2  bad command line, bad value or bad input file\n"
    "  3  OpenCL runtime error, no OpenCL platform/device, or a device that did not finish in time\n"
    "  4  a kernel failed to build, or the kernel directory was not found\n"
    "  5  the device cannot run this (no fp64, array larger than its largest allocation)\n";

// The library speaks of what it checks ("work-group size 1 is too small ..."); the command line
// names the flag that set it.
std::string flag_words(const Error& e) {
  const std::string what = e.what();
  if (e.category() != Errc::kUsage) return what;
  for (const auto& [words, flag] : {std::pair<const char*, const char*>{"work-group size ", "--local-size "},
                                    {"accumulator ", "--acc "}})
    if (what.rfind(words, 0) == 0) return flag + what.substr(std::char_traits<char>::length(words));
  return what;
}

int run(int argc, char** argv) {
  CLI::App app{"clreduce: run, verify and time parallel reductions and prefix scans on OpenCL devices.\n"
               "Every result is checked against the sequential loop on the host."};
  app.footer(std::string("\n") + kExitCodes +
             "\nData: --size N --seed S generates int32/int64 uniform in [-1000, 1000] / "
             "[-1e12, 1e12],\nuint32/uint64 in [0, 2000] / [0, 2e12], float/double uniform in "
             "[-1, 1).\nKernels are read at run time from --kernel-dir, $CLREDUCE_KERNEL_DIR, "
             "../share/clreduce/cl beside\nthe installed executable, the source tree's cl/, or the "
             "configured install directory,\nin that order (--version names the one found).");
  std::string device = "0", variant = "fast", op = "sum", type = "int32", format = "table";
  std::string size = "16777216", input, kernel_dir;
  std::uint64_t seed = 1;
  int warmup = 1, repeat = 5;
  std::size_t local_size = 0;
  std::string acc;
  bool list_devices_flag = false, list_variants_flag = false, verbose = false;
  bool peers = false, measure_copy = false, accuracy = false, show_version = false;
  app.add_option("-d,--device", device, "device index from --list-devices, or a name substring (nvidia, pocl)")->capture_default_str();
  app.add_option("-v,--variant", variant, "variant name (scan-* are scans), comma-separated names, 'all', 'all-reduce', 'all-scan', or 'ladder' (kernels 1-7 as the seeds' table); with a scan-only flag the default is scan-fast")->capture_default_str();
  app.add_option("--op", op, "sum | prod | min | max | argmin | argmax")->capture_default_str();
  app.add_option("-t,--type", type, "int32 | uint32 | int64 | uint64 | float | double")->capture_default_str();
  app.add_option("--acc", acc, "accumulator/result type for sum and prod; default NumPy's (int32 -> int64)");
  app.add_option("-n,--size", size, "elements to generate: N, 2^K or NeK")->capture_default_str();
  app.add_option("--seed", seed, "seed of the generated data")->capture_default_str();
  app.add_option("-i,--input", input, "read the array from a 1-D .npy file instead of generating it");
  app.add_option("--kernel-dir", kernel_dir, "directory holding the .cl sources");
  app.add_option("--warmup", warmup, "untimed runs before timing")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--repeat", repeat, "timed runs; medians are reported")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--local-size", local_size, "work-group size override");
  app.add_option("--format", format, "table | json (one object per line per variant)")->capture_default_str()->check(CLI::IsMember({"table", "json"}));
  app.add_flag("--peers", peers, "also run the OpenMP peer on the same array (row 'omp'; vs_omp ratios)");
  app.add_flag("--measure-copy", measure_copy, "also time a device-to-device copy of the array (row 'copy', GB/s read + written)");
  app.add_flag("--accuracy", accuracy, "table: add each float sum's distance from the correctly rounded sum (err ulp, err rel; JSON always has them)");
  app.add_flag("--list-devices", list_devices_flag, "print every OpenCL device with its global index (with --device: that one; --format json: one object per line)");
  app.add_flag("--list-variants", list_variants_flag, "print every variant with one line each");
  app.add_flag("--verbose", verbose, "print the kernel directory, build options and launch policies to stderr");
  app.add_flag("--version", show_version, "print the version, how clreduce was built and the kernel directory it finds");
  bool exclusive = false;
  std::string segments, output;
  std::size_t segment_length = 0;
  app.add_flag("--exclusive", exclusive, "scans: exclusive (identity first); default inclusive");
  auto* seg_file = app.add_option("--segments", segments, "scans: .npy flag array (any integer or bool dtype), nonzero starts a segment");
  app.add_option("--segment-length", segment_length, "scans: a segment starts every L elements")->check(CLI::PositiveNumber)->excludes(seg_file);
  app.add_option("-o,--output", output, "scans: write the whole result to this .npy file");
  std::vector<std::string> tunes;
  app.add_option("--tune", tunes, "KEY=VALUE: set a tuning knob (repeatable; keys below)");
  std::string knobs = "\nTuning knobs (--tune KEY=VALUE, or the environment variable CLREDUCE_KEY with\n"
                      "'_' for '-', e.g. CLREDUCE_FAST_SHAPE=cpu; --tune wins):\n";
  for (const TuningKey& k : tuning_keys())
    knobs += "  " + std::string(k.key) + " = " + k.values + "\n      " + k.meaning + "\n";
  app.footer(app.get_footer() + "\n" + knobs);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::cerr << "clreduce: " << e.what() << " (see --help)\n";
    return kExitUsage;
  }

  if (show_version) {
    std::cout << "clreduce " << version() << "\n" << build_options();
    try {
      std::cout << "kernels: " << find_kernel_dir(kernel_dir) << "\n";
    } catch (const Error& e) {
      std::cout << "kernels: " << e.what() << "\n";
      return exit_code(e.category());
    }
    return kExitOk;
  }
  // Every knob is checked before any device is touched: a bad value is exit 2, not a late failure.
  Tuning tuning = tuning_from_env();
  for (const std::string& kv : tunes) set_tuning(tuning, kv);

  if (list_variants_flag) {
    // With a device, the path each variant takes there; without an OpenCL platform, the plain list.
    std::unique_ptr<Context> ctx;
    try {
      ctx = std::make_unique<Context>(select_device(list_devices(), device),
                                      find_kernel_dir(kernel_dir), verbose, tuning);
    } catch (const Error& e) {
      if (e.category() == Errc::kUsage) throw;  // a --device that names nothing is still an error
    } catch (const cl::Error&) {
    }
    std::cout << format_variant_list(ctx.get());
    return kExitOk;
  }
  const Op the_op = parse_op(op);
  const DType the_type = parse_dtype(type);
  const bool segmented = !segments.empty() || segment_length > 0;
  // A scan-only flag without --variant asks for a scan: the default scan is scan-fast.
  if (!app.count("--variant") && (exclusive || segmented || !output.empty())) variant = "scan-fast";
  const VariantPlan plan = plan_variants(variant, the_op);
  check_scan_flags(plan, the_op, exclusive || segmented || !output.empty());
  const bool ladder = variant == "ladder";
  const std::size_t n = input.empty() ? parse_size(size) : 0;

  const auto devices = list_devices();
  if (list_devices_flag && !app.count("--device")) {
    if (format == "json") {
      for (const auto& d : devices) std::cout << to_json(d) << "\n";
    } else {
      std::cout << format_device_list(devices);
    }
    return kExitOk;
  }
  const DeviceInfo dev = select_device(devices, device);
  if (list_devices_flag) {
    std::cout << (format == "json" ? to_json(dev) + "\n" : format_device_list({dev}));
    return kExitOk;
  }
  Context ctx(dev, find_kernel_dir(kernel_dir), verbose, tuning);
  if (verbose) std::cerr << "kernels: " << ctx.kernel_dir() << "\n";

  HostArray data;
  if (!input.empty()) {
    data = read_npy(input);
    if (app.count("--type") && data.type != the_type)
      throw Error(Errc::kUsage, input + " holds " + dtype_name(data.type) + ", not --type " + type);
  } else {
    check_fits(dev, the_type, n);  // before allocating the host copy
    data = generate(the_type, n, seed);
  }

  check_named_reductions(plan, the_op, data.type);

  RunConfig cfg;
  cfg.warmup = warmup;
  cfg.repeat = repeat;
  cfg.local_size = local_size;
  cfg.acc = acc;
  // Peers run beside reductions (not with the ladder table, whose rows are kernels 1-7).
  const bool with_peers = peers && !ladder && !plan.reduce.empty();
  bool all_ok = true, header = format == "table";
  LadderTable ladder_table;
  const auto print = [&](const RunRecord& r) {
    if (header)  // after the first run, so an unusable --local-size is the only line printed
      std::cout << "device " << dev.index << ": " << dev.name << " (" << dev.platform_name
                << ")  " << op_name(the_op) << " " << dtype_name(data.type) << "  n = " << data.n
                << (plan.scan.empty() ? std::string()
                                      : std::string("  scans: ") + (exclusive ? "exclusive" : "inclusive") +
                                            (segmented ? ", segmented" : ""))
                << "\n" << (ladder ? LadderTable::header() : table_header(with_peers, accuracy));
    header = false;
    if (verbose && !r.skipped) std::cerr << r.variant << ": " << r.policy.str() << "\n";
    if (!r.skipped && !r.verified) all_ok = false;
    if (ladder)
      std::cout << (format == "json" ? ladder_table.json(r) + "\n" : ladder_table.row(r));
    else
      std::cout << (format == "json" ? to_json(r) + "\n" : table_row(r, with_peers, accuracy));
    std::cout << std::flush;
  };
  std::unique_ptr<ReduceSession> session;
  if (!plan.reduce.empty() || measure_copy)
    session = std::make_unique<ReduceSession>(ctx, data, the_op, cfg);
  std::unique_ptr<ScanSession> scans;
  if (!plan.scan.empty()) {
    ScanOptions so;
    so.exclusive = exclusive;
    so.segmented = segmented;
    so.flags = segment_flags(data.n, segments, segment_length);
    scans = std::make_unique<ScanSession>(ctx, data, the_op, cfg, std::move(so));
  }
  // Peers first, so every variant's row can carry its ratio against them.
  RunRecord omp;
  if (with_peers) print(omp = session->run_omp());
  if (measure_copy) print(session->run_copy());
  for (ReduceVariant* v : plan.reduce) {
    RunRecord r = session->run(*v);
    if (with_peers && !omp.skipped && omp.verified && omp.kernel_ms > 0 && r.kernel_ms > 0)
      r.ratios.emplace_back("vs_omp", omp.kernel_ms / r.kernel_ms);
    print(r);
  }
  HostArray result;
  bool have_result = false;
  for (ScanVariant* v : plan.scan) {
    RunRecord r = scans->run(*v, output.empty() ? nullptr : &result);
    have_result = have_result || !r.skipped;
    print(r);
  }
  if (!output.empty() && have_result) write_npy(output, result);
  return all_ok ? kExitOk : kExitVerify;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::cerr << "clreduce: " << flag_words(e) << "\n";
    if (e.category() == Errc::kTimeout) {
      // A device that stopped responding can block the release of its queue and buffers: leave
      // without running destructors.
      std::cout.flush();
      std::cerr.flush();
      std::_Exit(exit_code(e.category()));
    }
    return exit_code(e.category());
  } catch (const cl::Error& e) {
    std::cerr << "clreduce: " << e.what() << ": " << cl_error_name(e.err()) << " (" << e.err() << ")\n";
    return kExitOpenCL;
  } catch (const std::bad_alloc&) {
    std::cerr << "clreduce: out of host memory\n";
    return kExitUnsupported;
  } catch (const std::exception& e) {
    std::cerr << "clreduce: " << e.what() << "\n";
    return kExitOpenCL;
  }
}
