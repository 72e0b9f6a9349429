// main.cpp: the clreduce command line. Parses flags (CLI11) as text and checks every value
// (args.hpp), picks the device and variants, checks everything that can be checked before the
// first kernel runs (a variant asked for by name that cannot run, a group size, the memory
// needed; every kernel built), then runs them through the library and prints a table, JSON
// lines or CSV. One try block maps every error to a one-line message and a documented exit code.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "args.hpp"
#include "clreduce/error.hpp"
#include "clreduce/options.hpp"
#include "clreduce/version.hpp"
#include "core/checked.hpp"
#include "core/parallel.hpp"
#include "csv.hpp"
#include "exit_codes.hpp"
#include "expr_run.hpp"
#include "io/data.hpp"
#include "io/files.hpp"
#include "io/npy.hpp"
#include "io/report.hpp"
#include "io/text.hpp"
#include "progress.hpp"
#include "reduce/expr_ops.hpp"
#include "reduce/ladder.hpp"
#include "reduce/variant.hpp"
#include "run/omp_wait.hpp"
#include "run/ranks.hpp"
#include "run/runner.hpp"
#include "run/scan_runner.hpp"
#include "run/shares.hpp"
#include "runtime/context.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_dir.hpp"
#include "runtime/pocl_affinity.hpp"
#include "segments_run.hpp"
#include "variant_plan.hpp"

using namespace clreduce;
namespace fs = std::filesystem;

namespace {

const char* kExitCodes =
    "Exit codes:\n"
    "  0  every run verified\n"
    "  1  a device result did not match the sequential reference\n"
    "  2  bad command line, bad value, bad input or output file; a variant asked for by name that\n"
    "     refuses the request (e.g. sequential-device above 2^22 elements); a user reduction\n"
    "     (--map) whose expression is not one, does not compile or breaks a law\n"
    "  3  OpenCL runtime error, no OpenCL platform/device, or a device that did not finish in "
    "time\n"
    "  4  a kernel failed to build, the kernel directory was not found, or the OpenCL\n"
    "     compiler's kernel cache cannot be used (PoCL: POCL_CACHE_DIR)\n"
    "  5  the device cannot run this (no fp64, a variant asked for by name that needs what the\n"
    "     device lacks), or out of memory (an array larger than the host's memory)\n";

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
// The host memory each chunk of a layout keeps besides its data (its buffers' and sub-buffers'
// objects, events, its partial result), with room to spare: measured on PoCL at 1.7 KiB per
// chunk of a reduction and 2.6 KiB per chunk of a scan (--max-chunk 64: 2^16 and 2^17 chunks).
constexpr std::uint64_t kReduceChunkBytes = 2048, kScanChunkBytes = 4096;

// Adds to `need` the host memory an array under layout L on device d takes besides the host
// arrays: device buffers that are not over the host arrays (host memory on a CPU device), pinned
// staging buffers (host memory on any device), and per_chunk bytes for each chunk.
void add_layout_memory(MemoryNeed& need, const DeviceInfo& d, const ChunkLayout& L, ElementBytes e,
                       std::uint64_t per_chunk) {
  need.add("the chunks' bookkeeping", sat_mul(L.chunks, per_chunk));
  if (L.in_place) return;
  const std::uint64_t held = L.streamed() ? sat_mul(L.slots, L.chunk) : L.n;
  if (d.type == "CPU") need.add("the device's copies", sat_mul(held, e.total()));
  if (L.streamed() && L.source == "stage")
    need.add("the pinned staging buffers", sat_mul(held, e.in));
}

// The devices --device names (select_devices()); under mpirun the one device a rank takes of those
// it names (select_rank_devices(): a single name or type names every device it matches), by its
// rank on the host. Where a host's ranks outnumber the GPUs named, rank 0 says that ranks share a
// GPU: they take turns on it, and the run's kernel times, each rank's own, are not those of ranks
// running side by side.
std::vector<DeviceInfo> run_devices(const std::vector<DeviceInfo>& all, const std::string& spec,
                                    const Ranks& ranks) {
  if (!ranks.many()) return select_devices(all, spec);
  const std::vector<DeviceInfo> named = select_rank_devices(all, spec);
  const DeviceInfo& d = named[static_cast<std::size_t>(ranks.local_rank) % named.size()];
  if (ranks.root() && d.is_gpu && named.size() < static_cast<std::size_t>(ranks.local_size))
    std::cerr << "clreduce: the " << ranks.local_size << " ranks on this host share "
              << named.size() << (named.size() == 1 ? " GPU" : " GPUs") << " (--device "
              << printable(spec)
              << "): ranks on one GPU take turns on it, so the kernel times are not those of "
                 "ranks side by side; give each rank its own (--device all-gpus, or a list)\n";
  return {d};
}

// The library speaks of what it checks ("work-group size 1 is too small ..."); the command line
// names the flag that set it.
std::string flag_words(const Error& e) {
  const std::string what = e.what();
  if (e.category() != Errc::kUsage) return what;
  for (const auto& [words, flag] :
       {std::pair<const char*, const char*>{"work-group size ", "--local-size "},
        {"accumulator ", "--acc "}})
    if (what.rfind(words, 0) == 0) return flag + what.substr(std::char_traits<char>::length(words));
  return what;
}

// --input -: standard input, read as a stream (io/npy.hpp): its header first, then no more than
// the data the header declares, into memory; nothing is written to disk. Messages name "standard
// input".
HostArray read_input(const std::string& input) {
  if (input != "-") return read_npy(input);
  if (isatty(0) == 1)
    throw Error(Errc::kUsage, "--input -: standard input is a terminal; pipe a .npy file in");
  return read_npy_stream(0, "standard input");
}

std::string count_words(std::uint64_t n) {
  if (n >= 1024 && (n & (n - 1)) == 0) {
    int k = 0;
    while ((std::uint64_t{1} << k) < n) ++k;
    return "2^" + std::to_string(k);
  }
  return std::to_string(n);
}

// "rank 2: " under mpirun, else "".
std::string rank_words(const Ranks& r) {
  return r.many() ? "rank " + std::to_string(r.rank) + ": " : "";
}

// A rank's segment flags: its slice of the file's, or a start every `length` global elements.
std::vector<std::uint8_t> slice_flags(std::uint64_t total, const Slice& s, const std::string& file,
                                      std::size_t length) {
  if (!file.empty()) {
    const std::vector<std::uint8_t> all = segment_flags(total, file, 0);
    return {all.begin() + static_cast<std::ptrdiff_t>(s.first),
            all.begin() + static_cast<std::ptrdiff_t>(s.first + s.count)};
  }
  std::vector<std::uint8_t> f(s.count, 0);
  for (std::uint64_t i = 0; i < s.count; ++i) f[i] = (s.first + i) % length == 0;
  return f;
}

// "device 0: NAME (PLATFORM)  " or, for several, "devices 1, 0: NAME + NAME  ".
std::string devices_words(const std::vector<DeviceInfo>& devs) {
  if (devs.size() == 1)
    return "device " + std::to_string(devs[0].index) + ": " + devs[0].name + " (" +
           devs[0].platform_name + ")  ";
  std::string ids, names;
  for (const DeviceInfo& d : devs) {
    ids += (ids.empty() ? "" : ", ") + std::to_string(d.index);
    names += (names.empty() ? "" : " + ") + d.name;
  }
  return "devices " + ids + ": " + names + "  ";
}

// --local-size against every device of the run: Errc::kUsage naming the first that cannot take it.
void check_local_size_fits(const std::vector<DeviceInfo>& devs, std::size_t local_size) {
  for (const DeviceInfo& d : devs)
    if (local_size > d.max_wg_size)
      throw Error(Errc::kUsage, "--local-size " + std::to_string(local_size) +
                                    " is larger than device " + std::to_string(d.index) +
                                    "'s largest work-group (" + std::to_string(d.max_wg_size) +
                                    ")");
}

// --shares W1,W2,...: one finite weight >= 0 per device, not all 0.
std::vector<double> parse_shares(const std::string& text, std::size_t devices) {
  const std::string shown = printable(text);
  std::vector<double> w;
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = text.find(',', pos);
    const std::string one = text.substr(pos, comma == std::string::npos ? comma : comma - pos);
    char* end = nullptr;
    const double x = std::strtod(one.c_str(), &end);
    if (one.empty() || end != one.c_str() + one.size() || !std::isfinite(x) || x < 0)
      throw Error(Errc::kUsage, "--shares " + shown + ": '" + printable(one) +
                                    "' is not a weight (a number >= 0, one per device)");
    w.push_back(x);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (w.size() != devices)
    throw Error(Errc::kUsage, "--shares " + shown + ": " + std::to_string(w.size()) +
                                  " weights for " + std::to_string(devices) + " devices");
  double sum = 0;
  for (double x : w) sum += x;
  if (sum <= 0) throw Error(Errc::kUsage, "--shares " + shown + ": every weight is 0");
  return w;
}

// Whether main() asked PoCL to pin its workers (pocl_affinity.hpp), for --verbose.
bool pocl_pinned = false;

// Under mpirun, the ranks' start-up agreement (run/ranks.hpp): every rank reaches agree() at the
// same fixed points before the run (after the command line's checks, and once everything before
// the first collective is done), or once, from main(), with the code it stopped with. started:
// the ranks agreed to start the run; settled: they agreed to stop.
bool g_started = false, g_settled = false;

// -1 when every rank goes on; else the exit code every rank leaves with, its line printed once
// (by rank 0). One rank: `code`, and nothing printed.
int agree(const Ranks& ranks, int code, const std::string& line,
          const std::vector<Setting>& settings, bool start) {
  if (!ranks.many()) return code;
  const Agreement a = agree_ranks(code, line, settings, kExitUsage);
  if (a.go) {
    g_started = start;
    return -1;
  }
  g_settled = true;
  if (ranks.root() && !a.line.empty())
    std::cerr << "clreduce: " << a.line
              << (a.differ ? " (every rank takes the same options; only --device, --kernel-dir, "
                             "--format, --accuracy and --verbose may differ)"
                           : "")
              << "\n";
  return a.code;
}

// The settings of a rank that stops with `task` printed (--help, --version, a list): what it did.
std::vector<Setting> task(const char* what) { return {{"the task", what}}; }

// An error every rank met together, at a collective (writing --output): printed once, and every
// rank leaves with its code.
struct EveryRank : Error {
  using Error::Error;
};

// A file named on the command line as ranks compare it: its absolute path, with symbolic links,
// "." and ".." resolved as far as it exists, and with_size its size in bytes when it has one.
std::string file_identity(const std::string& path, bool with_size) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec) return path;
  if (std::filesystem::path c = std::filesystem::weakly_canonical(p, ec); !ec) p = c;
  std::string s = p.string();
  if (with_size) {
    const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
    if (!ec) s += " (" + std::to_string(bytes) + " bytes)";
  }
  return s;
}

int run(int argc, char** argv, const Ranks& ranks) {
  CLI::App app{
      "clreduce: run, verify and time parallel reductions and prefix scans on OpenCL devices.\n"
      "Every result is checked against the sequential loop on the host."};
  app.footer(
      std::string("\n") + kExitCodes +
      "\nData: --size N --seed S generates int32/int64 uniform in [-1000, 1000] / "
      "[-1e12, 1e12],\nuint32/uint64 in [0, 2000] / [0, 2e12], float/double uniform in "
      "[-1, 1);\nfloat16 in [-1, 1) on a 2^-10 grid, bool 0/1, int8/int16 in [-100, 100] / "
      "[-1000, 1000],\nuint8/uint16 in [0, 200] / [0, 2000].\nKernels are read at run time from "
      "--kernel-dir, $CLREDUCE_KERNEL_DIR, "
      "../share/clreduce/cl beside\nthe installed executable, the source tree's cl/, or the "
      "configured install directory,\nin that order (--version names the one found).\n"
      "\nNoisy timings: when the slowest timed run takes more than 4x the fastest, the time is\n"
      "marked '~' in the table (JSON \"noisy\": true; the sequential loop's \"seq_noisy\") and\n"
      "ratios against it, speedup and vs omp, are not quoted (table 'noisy', JSON null). Rates "
      "and\n"
      "ratios with no elements (n = 0) are '-' (JSON null). The OpenMP peer's threads sleep when "
      "idle\n"
      "(OMP_WAIT_POLICY=passive) unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set. PoCL's CPU\n"
      "threads are pinned one to a core (POCL_AFFINITY=1) where the process may use every core,\n"
      "unless POCL_AFFINITY is set (POCL_AFFINITY=0 leaves them to the scheduler).\n"
      "\nSeveral devices: --device 0,1 (or nvidia,pocl, all, all-gpus) runs one share of the "
      "array on\neach device at once (--shares sets them) and combines the shares' results.\n"
      "MPI: mpirun -n R clreduce ... gives each rank a slice of the array and one device (of the\n"
      "devices --device names, a name every device it matches, by the rank's place on its host), "
      "and\n"
      "combines the ranks' results (MPI_Allreduce, MPI_Exscan); rank 0 prints (--input -: rank "
      "0\nreads standard input and sends the slices). Every rank takes the same options but "
      "--device,\n--kernel-dir, --format, --accuracy and --verbose. This build: " +
      (mpi_built() ? mpi_library_version() : std::string("MPI not built in")) + ".");
  std::string device = "0", variant = "fast", op = "sum", type = "int32", format = "table";
  std::string size = "16777216", seed_text = "1", kernel_dir, acc;
  std::vector<std::string> inputs;
  std::string warmup_text = "1", repeat_text = "5", local_size_text, segment_length_text;
  bool list_devices_flag = false, list_variants_flag = false, verbose = false;
  bool peers = false, measure_copy = false, accuracy = false, show_version = false;
  app.add_option("-d,--device", device,
                 "device index from --list-devices, a type (cpu, gpu: the first of that type), or "
                 "a name substring (nvidia, pocl); several devices: a comma-separated list "
                 "(0,1 or nvidia,pocl) or all, all-gpus, all-cpus: each runs its share of the "
                 "array at once, and the shares' results are combined")
      ->capture_default_str();
  std::string shares_text;
  app.add_option("--shares", shares_text,
                 "several devices: each one's share of the array, relative weights in --device's "
                 "order (e.g. 1,3), 'rate': each device's measured end-to-end rate on a sample "
                 "(uploads included: for arrays that cross the link), or 'kernel-rate': its "
                 "kernel rate (for data already on the devices); default: equal shares");
  app.add_option("--variant", variant,
                 "variant name (scan-* are scans), comma-separated names, 'all', 'all-reduce', "
                 "'all-scan', or 'ladder' (kernels 1-7 as the seeds' table); with a scan-only flag "
                 "the default is scan-fast. A variant named that cannot run the request is an "
                 "error; under all, all-reduce and all-scan it is skipped with the reason")
      ->capture_default_str();
  app.add_option("--op", op,
                 "sum | prod | min | max | argmin | argmax; rows of the reduction engine: dot "
                 "(two arrays) | norm2 | mean | var | std | count | any | all | logsumexp | "
                 "minmax (both extremes and their first indices) (with "
                 "--map: expr); select (with --where: the elements where it holds, compacted "
                 "on the device; --output writes them)")
      ->capture_default_str();
  std::string where_expr, ddof_text;
  app.add_option("--where", where_expr,
                 "with --map, any --op of a whole array, or select: an OpenCL C predicate over "
                 "x (and y, z, w); where it is false the element is left out (NumPy's where=; "
                 "min, max and the arg ops: of the selected elements, none is exit 2)");
  app.add_option("--ddof", ddof_text,
                 "var and std: the divisor is count - ddof, a number >= 0 (default 0, as NumPy)");
  std::string map_expr, reduce_expr, identity_expr, post_expr;
  app.add_option("--map", map_expr,
                 "a user reduction: an OpenCL C expression over x (and y, z, w: one name per "
                 "input array) giving each element's value in the accumulator type");
  app.add_option("--reduce", reduce_expr,
                 "with --map: an associative and commutative expression over a and b (checked on "
                 "the device first)");
  app.add_option("--identity", identity_expr,
                 "with --map: the reduce's neutral element (an expression, e.g. 0 or INFINITY)");
  app.add_option("--post", post_expr,
                 "with --map: an expression over the reduced value a and the count n (long), "
                 "applied once to the result (e.g. sqrt(a), a / n)");
  app.add_option("-t,--type", type,
                 "int32 | uint32 | int64 | uint64 | float | double; through the reduction "
                 "engine: float16 (half) | bool | int8 | uint8 | int16 | uint16")
      ->capture_default_str();
  app.add_option("--acc", acc,
                 "sum and prod only: the accumulator and result type, the element type or NumPy's "
                 "(int32 -> int64, uint32 -> uint64: the default; double for float and float16 "
                 "arrays); with --map any type (default: "
                 "double or float if an array is, else int64, or uint64 for unsigned arrays)");
  app.add_option(
         "-n,--size", size,
         "elements to generate, 0 to 2^64-1: N, 2^K, NeK or 2^K+M, 2^K-M (not with --input)")
      ->capture_default_str();
  app.add_option("--seed", seed_text, "seed of the generated data, 0 to 2^64-1 (not with --input)")
      ->capture_default_str();
  app.add_option(
         "-i,--input", inputs,
         "read the array from a 1-D .npy file instead of generating it; '-' reads standard input; "
         "with --map once per array (x, y, z, w), all of one length")
      ->allow_extra_args(false);  // one file per --input; several --input gather
  app.add_option("--kernel-dir", kernel_dir, "directory holding the .cl sources");
  app.add_option("--warmup", warmup_text, "untimed runs before timing, 0 to 1000000")
      ->capture_default_str();
  app.add_option("--repeat", repeat_text,
                 "timed runs, 1 to 1000000; medians are reported (every run's times are kept, and "
                 "the sequential loop is timed as often)")
      ->capture_default_str();
  app.add_option(
      "--local-size", local_size_text,
      "work-group size, 1 to the device's largest; left out, each variant picks its own");
  app.add_option("--format", format,
                 "table | json (one object per line per row) | csv (a header, then one line per "
                 "row; the JSON keys as columns)")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json", "csv"}));
  app.add_flag("--peers", peers,
               "also run the OpenMP peer on the same array (row 'omp', for reductions, the "
               "scans, engine rows and segmented or axis sums it has; vs_omp ratios)");
  app.add_flag("--measure-copy", measure_copy,
               "also time a device-to-device copy of the array (row 'copy', GB/s read + written) "
               "and, where the array crosses to the device (not used in place), a copy to the "
               "device from pinned host memory (row 'copy-h2d'): the ceilings of the runs");
  app.add_flag("--accuracy", accuracy,
               "table: add each float sum's distance from the correctly rounded sum (err ulp, err "
               "rel; JSON and CSV always have them)");
  app.add_flag("--list-devices", list_devices_flag,
               "print every OpenCL device with its global index (with --device: that one; --format "
               "json or csv: one row per device)");
  app.add_flag(
      "--list-variants", list_variants_flag,
      "print every variant with one line each (--format json or csv: one row per variant)");
  app.add_flag("-v,--verbose", verbose,
               "print build options, build logs and launch policies to stderr");
  app.add_flag("--version", show_version,
               "print the version, how clreduce was built and the kernel directory it finds");
  bool exclusive = false;
  std::string segments, output;
  app.add_flag("--exclusive", exclusive, "scans: exclusive (identity first); default inclusive");
  auto* seg_file = app.add_option(
      "--segments", segments,
      "scans: .npy flag array (any integer or bool dtype), nonzero starts a segment");
  app.add_option("--segment-length", segment_length_text,
                 "scans: a segment starts every L elements (1 to 2^64-1: N, 2^K or NeK)")
      ->excludes(seg_file);
  app.add_option("-o,--output", output,
                 "scans and --op select: write the whole result to this .npy file; with "
                 "--offsets or --axis: the results, with NumPy's shape and dtype");
  std::string offsets_file, axis_text;
  bool keepdims = false;
  app.add_option("--offsets", offsets_file,
                 "reduce each segment on its own: an int64 .npy of S + 1 ascending offsets, "
                 "segment s is elements [off[s], off[s+1]) (sum, prod, min, max, argmin, argmax "
                 "or --map; an empty segment gives the identity)");
  app.add_option("--axis", axis_text,
                 "reduce an N-dimensional .npy (--input) along axis K (negative from the end, "
                 "several: 0,2), as NumPy's axis=");
  app.add_flag("--keepdims", keepdims, "with --axis: keep the reduced axes with length 1");
  std::string save_input;
  app.add_option("--save-input", save_input,
                 "write the input array, generated or read, to this .npy file (little-endian, "
                 "1-D, as NumPy writes it) before the runs, to check it elsewhere; written like "
                 "--output and checked before any work");
  std::vector<std::string> tunes;
  app.add_option("--tune", tunes, "KEY=VALUE: set a tuning knob (repeatable; keys below)");
  std::string max_chunk_text, timeout_text;
  app.add_option(
      "--max-chunk", max_chunk_text,
      "largest chunk of the input on the device, in bytes (1 to 2^62: N, 2^K or NeK); larger "
      "arrays run in chunks (default: the device's largest allocation)");
  app.add_option("--timeout", timeout_text,
                 "seconds any wait on the device (a run's, a start-up check's) may take before "
                 "clreduce gives up with exit 3 (default: 60 plus 1 per 256 MiB moved)");
  std::string knobs =
      "\nTuning knobs (--tune KEY=VALUE, or the environment variable CLREDUCE_KEY with\n"
      "'_' for '-', e.g. CLREDUCE_FAST_SHAPE=cpu; --tune wins):\n";
  for (const TuningKey& k : tuning_keys())
    knobs += "  " + std::string(k.key) + " = " + k.values + "\n      " + k.meaning + "\n";
  app.footer(app.get_footer() + "\n" + knobs);

  // MPI ranks: rank 0 prints; the others run, check and time their slices silently.
  if (!ranks.root()) std::cout.setstate(std::ios::failbit);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return agree(ranks, kExitOk, "", task("--help"), false);
  } catch (const CLI::ParseError& e) {
    throw Error(Errc::kUsage, printable(e.what(), 1000) + " (see --help)");
  }

  const bool user_expr =
      app.count("--map") + app.count("--reduce") + app.count("--identity") + app.count("--post") >
      0;
  if (inputs.size() > 1 && !user_expr && !is_expr_op(op))
    throw Error(Errc::kUsage, "--input is given " + std::to_string(inputs.size()) +
                                  " times: several arrays are for a user reduction (--map) and "
                                  "the engine's rows (--op dot, ...)");
  const std::string input = inputs.empty() ? std::string() : inputs.front();
  if (ranks.many()) {
    if (peers) throw Error(Errc::kUsage, "--peers does not run under mpirun (one rank per device)");
    if (measure_copy)
      throw Error(Errc::kUsage, "--measure-copy does not run under mpirun (one rank per device)");
    if (app.count("--shares"))
      throw Error(Errc::kUsage, "--shares does not run under mpirun: each rank has one device");
  }
  if (show_version) {
    // The library's lines, then the command's own: its OpenMP peer and its MPI ranks.
    std::cout << "clreduce " << version() << "\ncommit: " << build_commit() << "\n"
              << build_options();
#ifdef _OPENMP
    std::cout << "openmp: yes (" << _OPENMP << ")\n";
#else
    std::cout << "openmp: no\n";
#endif
    std::cout << "mpi: " << (mpi_built() ? mpi_library_version() : std::string("not built in"))
              << "\n";
    try {
      std::cout << "kernels: " << printable(find_kernel_dir(kernel_dir, true)) << "\n";
    } catch (const Error& e) {
      std::cout << "kernels: " << e.what() << "\n";
      return agree(ranks, exit_code(e.category()), "kernels: " + std::string(e.what()),
                   task("--version"), false);
    }
    return agree(ranks, kExitOk, "", task("--version"), false);
  }
  // Every value is checked before any device is touched: a bad one is exit 2, never a late
  // failure, a clamp or a silent default.
  for (const auto& [flag, text, what] : {std::tuple<const char*, const std::string&, const char*>{
                                             "--device", device, "an index, a type or a name"},
                                         {"--variant", variant, "a variant name"},
                                         {"--op", op, "an op"},
                                         {"--where", where_expr, "a predicate"},
                                         {"--ddof", ddof_text, "a number"},
                                         {"--type", type, "a type"},
                                         {"--acc", acc, "a type"},
                                         {"--size", size, "a count"},
                                         {"--input", input, "a file name ('-' for standard input)"},
                                         {"--kernel-dir", kernel_dir, "a directory"},
                                         {"--segments", segments, "a .npy file name"},
                                         {"--output", output, "a file name"},
                                         {"--offsets", offsets_file, "a .npy file name"},
                                         {"--axis", axis_text, "an axis"},
                                         {"--save-input", save_input, "a file name"}})
    if (app.count(flag)) require_nonempty(flag, text, what);
  const std::uint64_t seed =
      parse_count("--seed", seed_text, 0, std::numeric_limits<std::uint64_t>::max(),
                  "from 0 to 18446744073709551615 (2^64-1)");
  const int warmup = static_cast<int>(parse_count("--warmup", warmup_text, 0, kMaxWarmup));
  const int repeat = static_cast<int>(parse_count("--repeat", repeat_text, 1, kMaxRepeat));
  std::size_t local_size = 0;
  if (app.count("--local-size"))
    local_size = parse_count(
        "--local-size", local_size_text, 1, kMaxLocalSize,
        "from 1 to the device's largest work-group size (left out, each variant picks its own)");
  const std::size_t segment_length = app.count("--segment-length")
                                         ? parse_size_flag("--segment-length", segment_length_text,
                                                           1, UINT64_MAX, "from 1 to 2^64-1")
                                         : 0;
  if (!input.empty() && app.count("--size"))
    throw Error(Errc::kUsage, "--size and --input exclude each other: the file sets the size");
  if (!input.empty() && app.count("--seed"))
    throw Error(Errc::kUsage,
                "--seed and --input exclude each other: the seed is for generated data");
  Tuning tuning = tuning_from_env();
  for (const std::string& kv : tunes) set_tuning(tuning, kv);
  if (app.count("--max-chunk"))
    tuning.max_chunk = parse_size_flag("--max-chunk", max_chunk_text, 1, kMaxChunkBytes,
                                       "of bytes from 1 to 2^62");
  if (app.count("--timeout")) set_tuning(tuning, "timeout", timeout_text, "--timeout");

  const bool segmenting_early = app.count("--offsets") + app.count("--axis") > 0;
  // The variants' ops run as rows of the engine where the variants cannot: with --where, on the
  // engine's input types (float16, bool, int8, uint8, int16, uint16), or with --acc double for
  // a float16 or float sum. The element type: --type, or the file's header (standard input is
  // read here, before the device, when nothing else decides).
  std::optional<HostArray> stdin_array;
  bool builtin_row = false;
  if (!user_expr && is_builtin_row(op) && !segmenting_early && !list_variants_flag &&
      !list_devices_flag && !(ranks.many() && inputs.size() == 1 && inputs.front() == "-")) {
    builtin_row = app.count("--where") > 0;
    const auto wants_engine = [&](DType t) {
      return !is_variant_dtype(t) || (!acc.empty() && parse_dtype(acc) == DType::kDouble &&
                                      is_float(t) && t != DType::kDouble);
    };
    if (!builtin_row && inputs.empty()) builtin_row = wants_engine(parse_dtype(type));
    if (!builtin_row && inputs.size() == 1 && inputs.front() != "-")
      builtin_row = wants_engine(npy_info(inputs.front()).type);
    if (!builtin_row && inputs.size() == 1 && inputs.front() == "-") {
      stdin_array = read_input("-");
      builtin_row = wants_engine(stdin_array->type);
    }
  }
  const bool engine_row = !user_expr && (is_expr_op(op) || builtin_row);
  const bool select_op = !user_expr && op == "select";
  if (app.count("--where") && !user_expr && !engine_row && !select_op &&
      !(segmenting_early && is_builtin_row(op) && !is_arg_op(parse_op(op))))
    throw Error(
        Errc::kUsage, "--where applies to --map and to --op " +
                          [] {
                            std::string names;
                            for (const std::string& o : expr_op_names())
                              names += (names.empty() ? "" : ", ") + o;
                            return names;
                          }() +
                          ", not to --op " + op + " (yet)");
  double ddof = 0;
  if (app.count("--ddof")) {
    if (!(op == "var" || op == "std") || user_expr)
      throw Error(Errc::kUsage, "--ddof applies to --op var and --op std only");
    char* end = nullptr;
    ddof = std::strtod(ddof_text.c_str(), &end);
    if (ddof_text.empty() || *end != '\0' || !std::isfinite(ddof) || ddof < 0 || ddof > 1e18)
      throw Error(Errc::kUsage,
                  "--ddof must be a number from 0 to 1e18, not '" + printable(ddof_text) + "'");
  }
  // The device of a run on one device only (segments, --op select, the engine's runs): --device
  // naming several ("...: <runs_on_one>"), or a --local-size it cannot take, is exit 2.
  const auto one_device = [&](const std::string& runs_on_one) {
    const std::vector<DeviceInfo> devs = select_devices(list_devices(), device);
    if (devs.size() > 1)
      throw Error(Errc::kUsage, "--device " + device + " names several devices: " + runs_on_one);
    if (local_size > devs.front().max_wg_size)
      throw Error(Errc::kUsage, "--local-size " + std::to_string(local_size) +
                                    " is larger than device " + std::to_string(devs.front().index) +
                                    "'s largest work-group (" +
                                    std::to_string(devs.front().max_wg_size) + ")");
    return devs.front();
  };
  const bool segmenting = app.count("--offsets") + app.count("--axis") > 0;
  if (keepdims && !app.count("--axis"))
    throw Error(Errc::kUsage, "--keepdims applies to --axis only");
  if (segmenting && !list_variants_flag && !list_devices_flag) {
    // Segments or axes (segments_run.hpp): one device, one run, its own checks.
    if (app.count("--offsets") && app.count("--axis"))
      throw Error(Errc::kUsage,
                  "--offsets and --axis exclude each other: segments of a 1-D array, or lines "
                  "of an N-dimensional one");
    const std::string with = app.count("--axis") ? "--axis" : "--offsets";
    if (select_op) throw Error(Errc::kUsage, "--op select does not take " + with);
    if (engine_row && op == "minmax")
      throw Error(Errc::kUsage,
                  "--op minmax does not take " + with + " yet (every other op and --map do)");
    for (const char* f : {"--map", "--reduce", "--identity"})
      if (user_expr && !app.count(f))
        throw Error(Errc::kUsage,
                    std::string("a user reduction needs --map, --reduce and --identity (") + f +
                        " is missing)");
    if (user_expr && app.count("--op") && op != "expr")
      throw Error(Errc::kUsage, "--op " + printable(op) +
                                    " and --map exclude each other: --map, --reduce and "
                                    "--identity define the reduction");
    if (!user_expr && !engine_row) parse_op(op);
    if (app.count("--variant") && variant != "segments")
      throw Error(Errc::kUsage, "--variant " + printable(variant) + " and " + with +
                                    " exclude each other: it runs as the engine's own variant, "
                                    "segments");
    for (const char* f : {"--measure-copy", "--accuracy", "--exclusive", "--segments",
                          "--segment-length", "--save-input"})
      if (app.count(f)) throw Error(Errc::kUsage, std::string(f) + " does not apply to " + with);
    if (ranks.many()) throw Error(Errc::kUsage, with + " does not run under mpirun yet");
    if (app.count("--shares"))
      throw Error(Errc::kUsage, "--shares: " + with + " runs on one device");
    if (!inputs.empty() && app.count("--size"))
      throw Error(Errc::kUsage, "--size and --input exclude each other: the files set the size");
    if (!inputs.empty() && app.count("--seed"))
      throw Error(Errc::kUsage,
                  "--seed and --input exclude each other: the seed is for generated data");
    SegmentArgs sa;
    if (!user_expr) sa.op = op;
    sa.map = map_expr;
    sa.reduce = reduce_expr;
    sa.identity = identity_expr;
    sa.post = post_expr;
    sa.where = where_expr;
    sa.acc = acc;
    if (!acc.empty()) {
      parse_dtype(acc);
      if (!user_expr && !engine_row && parse_op(op) != Op::kSum && parse_op(op) != Op::kProd)
        throw Error(Errc::kUsage,
                    "--acc applies to sum and prod only (" + op + " keeps the element type)");
    }
    sa.inputs = inputs;
    if (user_expr || engine_row) {
      ExprArgs ea;  // the expressions' text and the arrays' count, checked as for a whole array
      if (engine_row) ea.op = op;
      ea.map = map_expr;
      ea.reduce = reduce_expr;
      ea.identity = identity_expr;
      ea.post = post_expr;
      ea.where = where_expr;
      ea.inputs = inputs;
      check_expr_args(ea);
    } else if (inputs.size() > 1) {
      throw Error(Errc::kUsage, "--input is given " + std::to_string(inputs.size()) +
                                    " times: --op " + op + " reduces one array");
    }
    sa.type = type;
    sa.type_given = app.count("--type") > 0;
    if (sa.type_given || inputs.empty()) parse_dtype(type);
    sa.n = inputs.empty() ? parse_size_flag("--size", size, 0, UINT64_MAX, "from 0 to 2^64-1") : 0;
    sa.seed = seed;
    sa.ddof = ddof;
    sa.offsets = offsets_file;
    sa.axis_given = app.count("--axis") > 0;
    if (sa.axis_given) sa.axes = parse_axes(axis_text);
    sa.keepdims = keepdims;
    sa.output = output;
    if (!output.empty()) check_output_path(output);  // before any work, not after it
    sa.warmup = warmup;
    sa.repeat = repeat;
    sa.peers = peers;
    sa.local_size = local_size;
    sa.format = format;
    sa.verbose = verbose;
    Context ctx(one_device(with + " runs on one device"), find_kernel_dir(kernel_dir, true),
                verbose, tuning);
    return run_segments(sa, ctx, [](const std::string& path, std::vector<std::uint64_t>* shape) {
      if (path != "-") return read_npy_nd(path, shape);
      if (isatty(0) == 1)
        throw Error(Errc::kUsage, "--input -: standard input is a terminal; pipe a .npy file in");
      return read_npy_stream_nd(0, "standard input", shape);
    });
  }
  if (select_op && !list_variants_flag && !list_devices_flag) {
    // Stream compaction (expr_run.hpp's run_select): one array, one device, its own checks.
    if (!app.count("--where"))
      throw Error(Errc::kUsage,
                  "--op select needs --where E: the predicate over x that keeps an "
                  "element");
    for (const char* f :
         {"--peers", "--measure-copy", "--accuracy", "--exclusive", "--segments",
          "--segment-length", "--save-input", "--acc", "--ddof", "--variant", "--shares"})
      if (app.count(f))
        throw Error(Errc::kUsage, std::string(f) + " does not apply to --op select");
    if (ranks.many()) throw Error(Errc::kUsage, "--op select does not run under mpirun yet");
    if (inputs.size() > 1) throw Error(Errc::kUsage, "--op select takes one array (--input once)");
    if (!inputs.empty() && app.count("--size"))
      throw Error(Errc::kUsage, "--size and --input exclude each other: the file sets the size");
    if (!output.empty()) check_output_path(output);  // before any work, not after it
    ExprArgs ea;
    ea.where = where_expr;
    ea.inputs = inputs;
    ea.type = type;
    ea.type_given = app.count("--type") > 0;
    if (ea.type_given || inputs.empty()) parse_dtype(type);
    ea.n = inputs.empty() ? parse_size_flag("--size", size, 0, UINT64_MAX, "from 0 to 2^64-1") : 0;
    ea.seed = seed;
    ea.warmup = warmup;
    ea.repeat = repeat;
    ea.local_size = local_size;
    ea.format = format;
    ea.verbose = verbose;
    check_expression("--where", where_expr);
    const std::size_t named = inputs_named(where_expr);
    if (named > 1)
      throw Error(Errc::kUsage, "--where '" + printable(where_expr) + "' names " +
                                    std::string(1, "xyzw"[named - 1]) +
                                    ": --op select has one array, x");
    Context ctx(one_device("--op select runs on one device"), find_kernel_dir(kernel_dir, true),
                verbose, tuning);
    return run_select(ea, output, ctx, read_input);
  }
  if ((user_expr || engine_row) && !list_variants_flag && !list_devices_flag) {
    // A user reduction or an engine row (expr_run.hpp): one device, one run, its own checks.
    const std::string what = user_expr ? "a user reduction (--map)" : "--op " + op;
    for (const char* f : {"--map", "--reduce", "--identity"})
      if (user_expr && !app.count(f))
        throw Error(Errc::kUsage,
                    std::string("a user reduction needs --map, --reduce and --identity (") + f +
                        " is missing)");
    if (user_expr && app.count("--op") && op != "expr")
      throw Error(Errc::kUsage, "--op " + printable(op) +
                                    " and --map exclude each other: --map, --reduce and "
                                    "--identity define the reduction");
    if (app.count("--variant") && variant != "expr")
      throw Error(Errc::kUsage, "--variant " + printable(variant) + " and " +
                                    (user_expr ? std::string("--map") : "--op " + op) +
                                    " exclude each other: it runs as the engine's own variant, "
                                    "expr");
    for (const char* f : {"--measure-copy", "--accuracy", "--exclusive", "--segments",
                          "--segment-length", "--output"})
      if (app.count(f)) throw Error(Errc::kUsage, std::string(f) + " does not apply to " + what);
    if (!save_input.empty()) {
      if (!inputs.empty() || (user_expr && inputs_named(map_expr) > 1) || op == "dot")
        throw Error(Errc::kUsage,
                    "--save-input writes one generated array (not with --input "
                    "or several arrays)");
      check_output_path(save_input);  // before any work, not after it
    }
    if (ranks.many()) {
      if (std::find(inputs.begin(), inputs.end(), "-") != inputs.end())
        throw Error(Errc::kUnsupported, what +
                                            " does not read standard input under mpirun (yet): "
                                            "give a file, --input x.npy");
      if (!save_input.empty())
        throw Error(Errc::kUnsupported,
                    "--save-input with " + what + " does not run under mpirun (yet)");
    }
    if (!inputs.empty() && app.count("--size"))
      throw Error(Errc::kUsage, "--size and --input exclude each other: the files set the size");
    if (!inputs.empty() && app.count("--seed"))
      throw Error(Errc::kUsage,
                  "--seed and --input exclude each other: the seed is for generated data");
    // Several devices: a share of the arrays each (--shares weighs them). Under mpirun a rank
    // takes one of the devices named, by its rank on the host.
    const std::vector<DeviceInfo> devs = run_devices(list_devices(), device, ranks);
    check_local_size_fits(devs, local_size);
    std::vector<double> weights;
    if (app.count("--shares")) {
      if (devs.size() < 2)
        throw Error(Errc::kUsage, "--shares needs several devices (--device 0,1 or all)");
      if (shares_text == "rate" || shares_text == "kernel-rate")
        throw Error(Errc::kUnsupported, "--shares " + shares_text + " does not apply to " + what +
                                            " (yet): give each device's weight, e.g. --shares 3,1");
      weights = parse_shares(shares_text, devs.size());
    }
    ExprArgs ea;
    if (engine_row) ea.op = op;
    ea.where = where_expr;
    ea.ddof = ddof;
    ea.map = map_expr;
    ea.reduce = reduce_expr;
    ea.identity = identity_expr;
    ea.post = post_expr;
    ea.acc = acc;
    if (!acc.empty()) parse_dtype(acc);
    ea.inputs = inputs;
    ea.type = type;
    ea.type_given = app.count("--type") > 0;
    if (ea.type_given || inputs.empty()) parse_dtype(type);
    ea.n = inputs.empty() ? parse_size_flag("--size", size, 0, UINT64_MAX, "from 0 to 2^64-1") : 0;
    ea.seed = seed;
    ea.warmup = warmup;
    ea.repeat = repeat;
    ea.local_size = local_size;
    ea.format = format;
    ea.verbose = verbose;
    ea.save_input = save_input;
    ea.peers = peers;
    check_expr_args(ea);
    if (ranks.many()) {
      // The options that shape the run, as every rank must have them (as for the variants).
      std::vector<Setting> settings;
      std::string files;
      for (const std::string& f : inputs)
        files += (files.empty() ? "" : ", ") + file_identity(f, true);
      for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
               {"the task", "a run"},
               {"--op", op},
               {"--map", map_expr},
               {"--reduce", reduce_expr},
               {"--identity", identity_expr},
               {"--post", post_expr},
               {"--where", where_expr},
               {"--ddof", ddof_text},
               {"--acc", acc},
               {"--input", inputs.empty() ? "none (generated data)" : files},
               {"--size", inputs.empty() ? size : "the input's"},
               {"--seed", inputs.empty() ? std::to_string(seed) : "none"},
               {"--type", type},
               {"--warmup", std::to_string(warmup)},
               {"--repeat", std::to_string(repeat)},
               {"--local-size", std::to_string(local_size)}})
        settings.push_back({name, value});
      for (const auto& [key, value] : tuning_values(tuning))
        settings.push_back({key == "max-chunk" ? "--max-chunk"
                            : key == "timeout" ? "--timeout"
                                               : "--tune " + key,
                            value});
      if (const int c = agree(ranks, -1, "", settings, false); c >= 0) return c;
    }
    std::vector<std::unique_ptr<Context>> owned;
    std::vector<Context*> contexts;
    for (const DeviceInfo& d : devs) {
      owned.push_back(std::make_unique<Context>(
          d, owned.empty() ? find_kernel_dir(kernel_dir, true) : owned.front()->kernel_dir(),
          verbose, tuning));
      contexts.push_back(owned.back().get());
    }
    ExprRanks mpi;
    mpi.ranks = &ranks;
    mpi.start = [&] { return agree(ranks, -1, "", {}, true); };
    return run_expr(
        ea, contexts, weights,
        [&](const std::string& path) {
          if (path == "-" && stdin_array) return std::move(*stdin_array);
          return read_input(path);
        },
        mpi);
  }
  if (list_variants_flag) {
    // With a device, the path each variant takes there; without an OpenCL platform, the plain list.
    std::unique_ptr<Context> ctx;
    try {
      ctx = std::make_unique<Context>(select_device(list_devices(), device),
                                      find_kernel_dir(kernel_dir, true), verbose, tuning);
    } catch (const Error& e) {
      if (e.category() == Errc::kUsage) throw;  // a --device that names nothing is still an error
    } catch (const cl::Error&) {
    }
    if (format == "table") {
      std::cout << format_variant_list(ctx.get());
    } else {
      const std::string lines = format_variant_list_json(ctx.get());
      if (format == "json") {
        std::cout << lines;
      } else {
        std::cout << csv_header(variant_csv_columns());
        for (std::size_t pos = 0, end; (end = lines.find('\n', pos)) != std::string::npos;
             pos = end + 1)
          std::cout << csv_row(lines.substr(pos, end - pos), variant_csv_columns());
      }
    }
    return agree(ranks, kExitOk, "", task("--list-variants"), false);
  }
  const Op the_op = parse_op(op);
  const DType the_type = parse_dtype(type);
  if (!acc.empty()) {
    parse_dtype(acc);
    if (the_op != Op::kSum && the_op != Op::kProd)
      throw Error(Errc::kUsage,
                  "--acc applies to sum and prod only (" + op + " keeps the element type)");
    if (input.empty())
      resolve_acc(the_op, the_type, acc);  // with --input, once the file's type is known
  }
  const bool segmented = !segments.empty() || segment_length > 0;
  // A scan-only flag without --variant asks for a scan: the default scan is scan-fast.
  if (!app.count("--variant") && (exclusive || segmented || !output.empty())) variant = "scan-fast";
  const VariantPlan plan = plan_variants(variant, the_op);
  check_scan_flags(plan, the_op, exclusive || segmented || !output.empty());
  const bool ladder = variant == "ladder";
  const std::size_t n =
      input.empty() ? parse_size_flag("--size", size, 0, UINT64_MAX, "from 0 to 2^64-1") : 0;
  // Under mpirun each rank owns a contiguous slice of the global array (run/ranks.hpp): of a file,
  // read by each rank; of standard input, which the launcher gives to rank 0 alone, read by rank 0
  // and sent as slices once the ranks have agreed to go on.
  HostArray data;  // --input: the array (this rank's slice), read before the device is chosen
  std::uint64_t total_n = input.empty() ? n : 0;
  DType slice_type = the_type;  // the element type, where the slices are cut
  if (ranks.many() && input == "-") {
    if (ranks.root()) data = read_input(input);
  } else if (ranks.many() && !input.empty()) {
    const NpyInfo info = npy_info(input);
    total_n = info.n;
    slice_type = info.type;
  }
  if (!output.empty()) check_output_path(output);  // before any work, not after it
  if (!save_input.empty()) {
    std::error_code ec1, ec2;
    if (save_input == output ||
        (!output.empty() &&
         fs::weakly_canonical(save_input, ec1) == fs::weakly_canonical(output, ec2) && !ec1 &&
         !ec2))
      throw Error(Errc::kUsage, "--save-input and --output name the same file, " +
                                    printable(output) + ": one would replace the other");
    check_output_path(save_input);
  }

  // Under mpirun, the options that shape the run, as every rank must have them: all but --device
  // (each rank takes its own), --kernel-dir (each host's) and what only changes rank 0's printing
  // (--format, --accuracy, --verbose). Compared here, before any device is touched, and again
  // before the run.
  std::vector<Setting> settings;
  if (ranks.many()) {
    const auto set = [&](const std::string& name, const std::string& value) {
      settings.push_back({name, value});
    };
    set("the task", list_devices_flag ? "--list-devices" : "a run");
    set("--input", input.empty()  ? "none (generated data)"
                   : input == "-" ? "- (standard input)"
                                  : file_identity(input, true));
    set("--size", input.empty() ? std::to_string(n) : "the input's");
    set("--seed", input.empty() ? std::to_string(seed) : "none");
    set("--type", input.empty() || app.count("--type") ? dtype_name(the_type) : "the input's");
    set("--op", op_name(the_op));
    set("--acc", acc.empty() ? "the default" : dtype_name(parse_dtype(acc)));
    std::string names;
    for (const ReduceVariant* v : plan.reduce) names += (names.empty() ? "" : ",") + v->name();
    for (const ScanVariant* v : plan.scan) names += (names.empty() ? "" : ",") + v->name();
    set("--variant", (ladder ? "ladder: " : "") + names);
    set("--exclusive", exclusive ? "on" : "off");
    set("--segments", segments.empty() ? "none" : file_identity(segments, true));
    set("--segment-length", segment_length ? std::to_string(segment_length) : "none");
    set("--output", output.empty() ? "none" : file_identity(output, false));
    set("--save-input", save_input.empty() ? "none" : file_identity(save_input, false));
    set("--warmup", std::to_string(warmup));
    set("--repeat", std::to_string(repeat));
    set("--local-size", local_size ? std::to_string(local_size) : "each variant's own");
    for (const auto& [key, value] : tuning_values(tuning))
      set(key == "max-chunk" ? "--max-chunk"
          : key == "timeout" ? "--timeout"
                             : "--tune " + key,
          value);
  }
  if (const int c = agree(ranks, -1, "", settings, false); c >= 0) return c;
  if (ranks.many() && input == "-") data = scatter_from_root(data, &total_n);
  // A scan alone, unsegmented, at scan-split auto, under ranks: rank 0's slice begins with the
  // array's first piece, which the last rank scans (run/ranks.hpp, split_first_piece()).
  // Standard input's slices are cut as rank 0 sent them.
  std::uint64_t first_piece = 0;
  if (ranks.many() && input != "-" && plan.reduce.empty() && !plan.scan.empty() && !segmented &&
      !is_arg_op(the_op) && tuning.scan_split == "auto" && is_variant_dtype(slice_type)) {
    try {
      first_piece = split_first_piece(total_n, ranks.size, dtype_size(slice_type),
                                      dtype_size(resolve_acc(the_op, slice_type, acc)),
                                      tuning.scan_split_piece);
    } catch (const Error&) {  // an --acc this type cannot take: said once the run is checked
      first_piece = 0;
    }
  }
  const Slice slice = rank_slice(total_n, ranks.rank, ranks.size, first_piece);

  Progress progress(!verbose);  // --verbose writes its own lines to stderr
  const auto devices = list_devices();
  const auto print_devices = [&](const std::vector<DeviceInfo>& ds) {
    if (format == "table") {
      std::cout << format_device_list(ds);
    } else {
      if (format == "csv") std::cout << csv_header(device_csv_columns());
      for (const auto& d : ds)
        std::cout << (format == "json" ? to_json(d) + "\n"
                                       : csv_row(to_json(d), device_csv_columns()));
    }
  };
  if (list_devices_flag && !app.count("--device")) {
    print_devices(devices);
    return agree(ranks, kExitOk, "", task("--list-devices"), false);
  }
  // A rank takes one of the devices named, by its rank on the host.
  const std::vector<DeviceInfo> devs = run_devices(devices, device, ranks);
  const DeviceInfo& dev = devs.front();
  if (list_devices_flag) {
    print_devices(devs);
    return agree(ranks, kExitOk, "", task("--list-devices"), false);
  }
  check_local_size_fits(devs, local_size);
  std::vector<double> share_weights;
  if (app.count("--shares")) {
    if (devs.size() < 2)
      throw Error(Errc::kUsage, "--shares needs several devices (--device 0,1 or all)");
    if (shares_text != "rate" && shares_text != "kernel-rate")
      share_weights = parse_shares(shares_text, devs.size());
  }
  const bool shares_by_rate =
      app.count("--shares") && (shares_text == "rate" || shares_text == "kernel-rate");
  const bool kernel_rate = shares_text == "kernel-rate";
  Context ctx(dev, find_kernel_dir(kernel_dir, true), verbose, tuning);
  // Several devices: a context (and queue) each, the first being ctx.
  std::vector<std::unique_ptr<Context>> more;
  std::vector<Context*> contexts{&ctx};
  for (std::size_t d = 1; d < devs.size(); ++d) {
    more.push_back(std::make_unique<Context>(devs[d], ctx.kernel_dir(), verbose, tuning));
    contexts.push_back(more.back().get());
  }
  if (verbose) std::cerr << "kernels: " << printable(ctx.kernel_dir()) << "\n";
  if (verbose && pocl_pinned)
    for (const Context* c : contexts)
      if (c->info().platform_name.find("Portable Computing Language") != std::string::npos) {
        std::cerr << "PoCL: worker threads pinned one to a core (POCL_AFFINITY=1, set by clreduce; "
                     "POCL_AFFINITY=0 leaves them to the scheduler)\n";
        break;
      }
  // Open MPI binds each of two ranks to one core by default: the rank's host work (generating,
  // the sequential loop, the checks) and a CPU device then have that core alone.
  if (ranks.root() && ranks.many() && host_threads() == 1 &&
      std::thread::hardware_concurrency() > static_cast<unsigned>(ranks.local_size))
    std::cerr << "clreduce: rank 0 may use 1 of this host's " << std::thread::hardware_concurrency()
              << " cores (mpirun binds ranks to cores by default), so its generating, checking and "
                 "any CPU device run on that core alone; mpirun --bind-to none lets each rank use "
                 "the host's cores\n";

  // ---- Before the first kernel runs: the data's shape, the memory, every variant's refusal and
  // launch policy (which builds its kernels).
  const std::string input_name = input == "-" ? "standard input" : printable(input);
  if (!input.empty()) {
    progress.show("reading " + input_name);
    if (!ranks.many())
      data = stdin_array ? std::move(*stdin_array) : read_input(input);
    else if (input != "-")  // (standard input: rank 0 read it, and sent every rank its slice)
      data = read_npy_slice(input, slice.first, slice.count);
    if (app.count("--type") && data.type != the_type)
      throw Error(Errc::kUsage,
                  input_name + " holds " + dtype_name(data.type) + ", not --type " + type);
  }
  const DType elem = input.empty() ? the_type : data.type;
  if (!is_variant_dtype(elem))
    throw Error(Errc::kUsage,
                dtype_name(elem) + " arrays reduce through the engine's rows, " +
                    (ranks.many() ? "which do not read standard input under mpirun yet"
                                  : "which do not run scans or --variant " + printable(variant)));
  const std::size_t count = input.empty() ? (ranks.many() ? slice.count : n) : data.n;
  const DType acc_type = resolve_acc(the_op, elem, acc);
  if ((elem == DType::kDouble || acc_type == DType::kDouble) && !dev.fp64)
    throw Error(Errc::kUnsupported, dev.name + " has no double precision (cl_khr_fp64); try float");
  const bool scanning = !plan.scan.empty() && !is_arg_op(the_op);
  // How the array will lie on the device: whole, in chunks, or streamed (run/chunks.hpp).
  // Data read from a file is used in place only where it is aligned for the device (a mapped
  // .npy's data may start anywhere); generated data will be.
  const HostArrays host{input.empty() ? nullptr : data.bytes.data()};
  const ChunkLayout reduce_layout =
      choose_layout(dev, ctx.tuning(), count, ElementBytes{dtype_size(elem)}, host);
  const ChunkLayout scan_layout = choose_layout(
      dev, ctx.tuning(), count,
      ElementBytes{dtype_size(elem), segmented ? 1u : 0u, dtype_size(acc_type)}, host);
  // The memory the run takes, checked before anything large is allocated and again, with the
  // plans' scratch, before the array is made (exit 5 with the figures, never an abort inside
  // the runtime): the array (already read with --input), the scans' output and flags, what
  // each device's layout keeps (host memory on a CPU device, and pinned staging buffers on any),
  // the copy rows' buffers, and the largest plan's scratch.
  const bool reducing = !plan.reduce.empty() || measure_copy;
  MemoryNeed need;
  {
    const std::uint64_t eb = dtype_size(elem), ab = dtype_size(acc_type);
    const std::uint64_t in = sat_mul(count, eb);
    if (input.empty()) need.add("the array", in);
    if (scanning) need.add("the scans' output", sat_mul(count, ab));
    // Segment flags are held twice: as read, and aligned for the device.
    if (!plan.scan.empty() && segmented) need.add("the segment flags", sat_mul(count, 2));
    for (const DeviceInfo& d : devs) {
      if (reducing)
        add_layout_memory(need, d, choose_layout(d, ctx.tuning(), count, ElementBytes{eb}, host),
                          ElementBytes{eb}, kReduceChunkBytes);
      if (scanning) {
        const ElementBytes e{eb, segmented ? 1u : 0u, ab};
        add_layout_memory(need, d, choose_layout(d, ctx.tuning(), count, e, host), e,
                          kScanChunkBytes);
      }
    }
    if (measure_copy) {
      // The copy row: two device buffers of b1 (kept) and a read-back; then, where the array
      // crosses to the device, the host copy: a pinned buffer and a read-back of b2, its device
      // buffer grown from b1 to b2.
      const std::uint64_t b1 = std::min({in, sat_mul(reduce_layout.chunk, eb), kGiB}),
                          b2 = std::min(in, kGiB);
      const bool crosses = !reduce_layout.in_place && reduce_layout.chunks > 0;
      const bool cpu = dev.type == "CPU";
      const std::uint64_t copy = (cpu ? 2 * b1 : 0) + b1,
                          host_copy = (cpu ? 2 * b1 + (b2 > b1 ? b2 : 0) : 0) + 2 * b2;
      need.add("the copy rows' buffers", crosses ? std::max(copy, host_copy) : copy);
    }
  }
  check_host_memory(need);
  if (!segments.empty() && !plan.scan.empty()) {
    // Reading a flags file holds its data and the flags made from it for a moment.
    MemoryNeed reading;
    std::error_code ec;
    const std::uintmax_t file_bytes = std::filesystem::file_size(segments, ec);
    reading.add("the segment flags file", ec ? 0 : static_cast<std::uint64_t>(file_bytes));
    reading.add("the segment flags", ranks.many() ? total_n : count);  // a rank reads them all
    check_host_memory(reading);
  }
  std::vector<std::uint8_t> flags;
  if (!plan.scan.empty() && segmented) {
    progress.show("reading segment flags");
    flags = ranks.many() ? slice_flags(total_n, slice, segments, segment_length)
                         : segment_flags(count, segments, segment_length);
  }
  // The problems plans are made for: the whole array, or one chunk of it.
  ReduceProblem rp;
  rp.op = the_op;
  rp.type = elem;
  rp.n = reduce_layout.chunks > 1 ? reduce_layout.chunk : count;
  rp.acc_type = acc_type;
  ScanProblem sp;
  sp.op = the_op;
  sp.type = elem;
  sp.n = scan_layout.chunks > 1 ? scan_layout.chunk : count;
  sp.carry_in = scan_layout.chunks > 1;
  sp.acc_type = acc_type;
  sp.exclusive = exclusive;
  sp.segmented = segmented;
  const std::size_t planned = plan.reduce.size() + plan.scan.size();
  std::size_t step = 0;
  std::uint64_t scratch = 0;  // the most a plan allocated when it was made
  // Each variant's refusal and plan (its start-up checks' messages, and an OpenCL error met,
  // name the run they serve, as the run's own do).
  const auto prepare = [&](const std::string& name, const std::string& words, auto&& refusal,
                           auto&& make_policy) {
    ++step;
    const Context::Doing doing(ctx, words);
    try {
      const std::string reason = refusal();
      if (!reason.empty()) {
        if (plan.named.count(name)) throw named_refusal(name, reason);
        return;  // a group's member: skipped with the reason when its turn comes
      }
      if (count == 0) return;  // nothing is launched
      progress.show("building kernels: " + name + " (" + std::to_string(step) + "/" +
                    std::to_string(planned) + ")");
      const std::uint64_t before = ctx.buffer_bytes_made();
      make_policy();
      scratch = std::max(scratch, ctx.buffer_bytes_made() - before);
    } catch (const cl::Error& e) {
      throw describe_cl_error(e, words);
    }
  };
  const std::string of = " of " + std::to_string(count) + " " + dtype_name(elem) + " elements";
  for (ReduceVariant* v : plan.reduce)
    prepare(
        v->name(), v->name() + " " + op_name(the_op) + of, [&] { return v->unsupported(ctx, rp); },
        [&] { v->plan(ctx, rp, local_size); });
  for (ScanVariant* v : plan.scan)
    prepare(
        v->name(), v->name() + " " + op_name(the_op) + " scan" + of,
        [&] { return v->unsupported(ctx, sp); }, [&] { v->plan(ctx, sp, local_size); });
  // Each CPU device holds one plan's scratch at a time (each its own, running its share).
  for (const DeviceInfo& d : devs)
    if (d.type == "CPU") need.add("the largest plan's scratch", scratch);
  if (verbose)
    std::cerr << "host memory: " << byte_words(need.total()) << " more for this run, "
              << byte_words(host_memory().mapped) << " mapped\n";
  check_host_memory(need);

  if (input.empty()) {
    progress.show("generating " + count_words(n) + " " + dtype_name(the_type) + " elements");
    data = ranks.many() ? generate(the_type, slice.count, seed, slice.first)
                        : generate(the_type, n, seed);
  }
  // Under mpirun: every rank has now met every error it can meet before the run's first
  // collective (files, devices, kernel builds, memory): the ranks start together or stop together.
  if (ranks.many()) {
    if (!input.empty())
      settings.push_back(
          {"--input's array", std::to_string(total_n) + " " + dtype_name(data.type) + " elements"});
    if (const int c = agree(ranks, -1, "", settings, true); c >= 0) return c;
  }
  // After the ranks agreed (writing under mpirun is collective).
  if (!save_input.empty()) {
    progress.show("writing " + printable(save_input));
    if (ranks.many()) {
      try {
        write_npy_ranks(save_input, data, slice.first, total_n, ranks);
      } catch (const Error& e) {  // every rank throws it (run/ranks.hpp)
        throw EveryRank(e.category(), e.what());
      }
    } else {
      write_npy(save_input, data);
    }
    progress.clear();
  }

  RunConfig cfg;
  cfg.warmup = warmup;
  std::string current;  // what is running, for the chunk progress
  cfg.progress = [&](const std::string& what) { progress.show(current + ": " + what); };
  cfg.repeat = repeat;
  cfg.local_size = local_size;
  cfg.acc = acc;
  cfg.share_weights = share_weights;
  if (shares_by_rate && data.n > 0) {
    // Each device's end-to-end rate (upload, where the array crosses to it, and one run) on a
    // sample of the array, alone: the shares follow those rates.
    // 2^28 elements: large enough that a GPU's launch costs no longer hide its rate.
    const std::size_t sample = std::min<std::size_t>(data.n, std::size_t{1} << 28);
    const HostArray part = view_of(data, 0, sample);
    RunConfig probe;
    probe.warmup = 1;
    probe.repeat = 3;
    probe.acc = acc;
    probe.local_size = local_size;
    std::string rates;
    for (Context* c : contexts) {
      progress.show("measuring " + c->info().name + "'s rate for --shares rate");
      double gbps = 0.0;
      if (!plan.reduce.empty()) {
        ReduceSession s(*c, part, the_op, probe);
        const RunRecord r = s.run(*plan.reduce.front());
        gbps = r.skipped ? 0.0 : kernel_rate ? r.gbps : r.e2e_gbps;
      } else {
        ScanOptions so;
        so.exclusive = exclusive;
        so.segmented = segmented;
        if (segmented) so.flags = std::vector<std::uint8_t>(sample, 0);
        ScanSession s(*c, part, the_op, probe, std::move(so));
        const RunRecord r = s.run(*plan.scan.front());
        gbps = r.skipped ? 0.0 : kernel_rate ? r.gbps : r.e2e_gbps;
      }
      cfg.share_weights.push_back(gbps);
      char b[64];
      std::snprintf(b, sizeof b, "%s%.1f", rates.empty() ? "" : ", ", gbps);
      rates += b;
    }
    // A device under 1/20 of the fastest's rate would save less than the rates' own spread
    // (docs/PERF.md: a 3% CPU share of resident data cost 7%): it gets no share.
    const double top = *std::max_element(cfg.share_weights.begin(), cfg.share_weights.end());
    for (double& w : cfg.share_weights)
      if (w < top / 20) w = 0.0;
    progress.clear();
    if (verbose || format == "table")
      std::cerr << "clreduce: --shares " << printable(shares_text) << ": " << rates
                << (kernel_rate ? " GB/s kernel rates on " : " GB/s end to end on ")
                << count_words(sample) << " elements (a device under 1/20 of the fastest: none)\n";
  }
  if (ranks.many()) {
    cfg.ranks = &ranks;
    cfg.first = slice.first;
    cfg.total = total_n;
    cfg.first_piece = first_piece;
  }
  // Peers run beside reductions and beside scans; beside the ladder they are rows of their own,
  // outside its chain of speedups.
  const bool reduce_peer = peers && !plan.reduce.empty();
  const bool scan_peer = peers && !plan.scan.empty();
  const bool ratio_column = (reduce_peer || scan_peer) && !ladder;
  bool all_ok = true, header = format != "json", any_noisy = false;
  // The result column fits every result this run can print (arg ops: every index).
  const std::size_t width = result_width(the_op, acc_type, ranks.many() ? total_n : data.n);
  LadderTable ladder_table;
  std::string shown_layout;
  const auto print = [&](RunRecord& r) {
    progress.clear();
    if (header &&
        format ==
            "table")  // after the first run, so an unusable --local-size is the only line printed
      std::cout << devices_words(devs) << op_name(the_op) << " " << dtype_name(data.type)
                << "  n = " << (ranks.many() ? total_n : data.n)
                << (ranks.many() ? "  ranks = " + std::to_string(ranks.size) : std::string())
                << (plan.scan.empty()
                        ? std::string()
                        : std::string("  scans: ") + (exclusive ? "exclusive" : "inclusive") +
                              (segmented ? ", segmented" : ""))
                << (data.bytes.size() > kSeqOnceBytes ? "  seq ms: one run (a large array)" : "")
                << "\n"
                << (ladder ? LadderTable::header() : table_header(ratio_column, accuracy, width));
    if (header && format == "csv") std::cout << csv_header(run_csv_columns());
    header = false;
    if (verbose && !r.skipped) std::cerr << r.variant << ": " << r.policy.str() << "\n";
    if (!r.skipped && !r.verified) all_ok = false;
    any_noisy = any_noisy || r.noisy || (r.seq_noisy && !ladder);  // the ladder shows no seq ms
    std::string line;
    if (ladder)
      line = format == "table" ? ladder_table.row(r) : ladder_table.json(r) + "\n";
    else
      line = format == "table" ? table_row(r, ratio_column, accuracy, width) : to_json(r) + "\n";
    if (format == "csv") line = csv_row(line, run_csv_columns());
    // In the table, how the array went through the device, each time it changes.
    if (format == "table" && !r.skipped && !r.layout.empty() && r.layout != shown_layout &&
        (r.chunks > 1 || r.layout.find("stream") != std::string::npos)) {
      std::cout << "  (" << r.layout << ")\n";
      shown_layout = r.layout;
    }
    // Several devices: a line per device's share under the combined row.
    if (!r.skipped && !r.parts.empty()) {
      if (format == "table") line += table_parts(r, width);
    }
    std::cout << line << std::flush;
  };
  // How the array was made, and whether the timing can be trusted.
  const auto stamp = [&](RunRecord r) {
    r.input = input;
    r.seed = seed;
    r.warmup = warmup;
    r.repeat = repeat;
    r.noisy = !r.skipped && noisy_spread(r.kernel_ms_min, r.kernel_ms_max);
    r.seq_noisy = !r.skipped && r.kind != "ceiling" && noisy_spread(r.seq_ms_min, r.seq_ms_max);
    return r;
  };
  std::size_t rows = plan.reduce.size() + plan.scan.size() + (reduce_peer ? 1 : 0) +
                     (scan_peer ? 1 : 0) + (measure_copy ? 1 : 0);
  std::size_t row = 0;
  const auto running = [&](const std::string& what) {
    current = "running " + what + " (" + std::to_string(++row) + "/" + std::to_string(rows) + ")";
    progress.show(current);
  };
  const std::string seq_note = data.bytes.size() > kSeqOnceBytes ? " (once: a large array)"
                               : repeat > 1 ? " (" + std::to_string(repeat) + " runs)"
                                            : "";
  std::unique_ptr<ReduceSession> session;
  if (!plan.reduce.empty() || measure_copy) {
    progress.show("timing the sequential loop" + seq_note);
    session = std::make_unique<ReduceSession>(contexts, data, the_op, cfg);
  }
  std::unique_ptr<ScanSession> scans;
  if (!plan.scan.empty()) {
    progress.show("timing the sequential scan" + seq_note);
    ScanOptions so;
    so.exclusive = exclusive;
    so.segmented = segmented;
    so.flags = std::move(flags);
    scans = std::make_unique<ScanSession>(contexts, data, the_op, cfg, std::move(so));
  }
  // Peers first, so every variant's row can carry its ratio against them.
  RunRecord omp;
  if (reduce_peer) {
    running("the OpenMP peer");
    omp = stamp(session->run_omp());
    print(omp);
  }
  if (measure_copy) {
    running("the device copy");
    RunRecord c = stamp(session->run_copy());
    print(c);
    if (session->crosses_link()) {  // the array crosses the link: its ceiling too
      ++rows;
      running("the host-to-device copy");
      RunRecord h = stamp(session->run_host_copy());
      print(h);
    }
  }
  for (ReduceVariant* v : plan.reduce) {
    running(v->name());
    RunRecord r = stamp(session->run(*v));
    if (reduce_peer) add_vs_omp(r, omp);
    print(r);
  }
  RunRecord omp_scan;
  if (scan_peer) {
    running("the OpenMP scan peer");
    omp_scan = stamp(scans->run_omp());
    print(omp_scan);
  }
  std::string result_from;  // the variant whose output the session holds, when it did not verify
  bool have_result = false;
  for (ScanVariant* v : plan.scan) {
    running(v->name());
    RunRecord r = stamp(scans->run(*v));
    if (scan_peer) add_vs_omp(r, omp_scan);
    if (!r.skipped) result_from = r.verified ? "" : r.variant;
    have_result = have_result || !r.skipped;
    print(r);
  }
  if (format == "table" && any_noisy) std::cout << noisy_footnote(ladder);
  if (!output.empty() && have_result) {
    progress.show("writing " + printable(output));
    if (ranks.many()) {
      try {
        write_npy_ranks(output, scans->last_output(), slice.first, total_n, ranks);
      } catch (const Error& e) {  // every rank throws it (run/ranks.hpp)
        throw EveryRank(e.category(), e.what());
      }
    } else
      write_npy(output, scans->last_output());
    progress.clear();
    if (!result_from.empty())
      std::cerr << "clreduce: wrote " << printable(output) << " from " << result_from
                << ", whose result did not verify\n";
  }
  return all_ok ? kExitOk : kExitVerify;
}

}  // namespace

int main(int argc, char** argv) {
  // The OpenMP peer's threads sleep when idle unless the user chose (omp_wait.hpp).
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--peers") == 0) {
      reexec_with_passive_omp_wait(argv);
      break;
    }
  // PoCL's CPU workers one to a core where the process may use every core (pocl_affinity.hpp).
  pocl_pinned = pin_pocl_workers();
  // Under mpirun, MPI starts here; otherwise one rank and MPI is never touched.
  static Ranks ranks;
  ranks = init_ranks(&argc, &argv);
  // A timeout ends the process where it happens: the device may still be using memory that
  // unwinding would free. Under mpirun it ends every rank.
  set_timeout_handler([](const Error& e) {
    std::cout.flush();
    std::cerr << "clreduce: " << rank_words(ranks) << flag_words(e) << "\n";
    std::cerr.flush();
    if (ranks.many()) abort_ranks(exit_code(e.category()));
    std::_Exit(exit_code(e.category()));
  });
  // The OpenCL compiler ending the process inside a build (a full kernel cache): one line, exit 4
  // (the compiler's own status, 1, would read as a wrong result).
  set_compiler_exit_handler([](const Error& e) {
    std::cout.flush();
    std::cerr << "clreduce: " << rank_words(ranks) << e.what() << "\n";
    std::cerr.flush();
    if (ranks.many()) abort_ranks(exit_code(e.category()));
    std::_Exit(exit_code(e.category()));
  });
  // Under mpirun, an error before the ranks agreed to start the run is this rank's alone: the
  // others learn of it at their next fixed point (agree()), the first failing rank's line is
  // printed once and every rank leaves with its code. After, an error every rank met together
  // (EveryRank) is printed once and every rank leaves with its code; any other ends every rank
  // (MPI_Abort), since the others may wait on this one in a collective.
  const auto fail = [&](Errc c, const std::string& what, bool every_rank = false) {
    if (!ranks.many()) {
      std::cerr << "clreduce: " << what << "\n";
      return exit_code(c);
    }
    if (!g_started) {
      const int code = g_settled ? exit_code(c) : agree(ranks, exit_code(c), what, {}, false);
      finalize_ranks();
      return code;
    }
    if (!every_rank) {
      std::cerr << "clreduce: " << rank_words(ranks) << what << "\n";
      abort_ranks(exit_code(c));
    }
    if (ranks.root()) std::cerr << "clreduce: " << what << "\n";
    finalize_ranks();
    return exit_code(c);
  };
  try {
    const int rc = run(argc, argv, ranks);
    finalize_ranks();
    return rc;
  } catch (const Error& e) {
    if (e.category() == Errc::kTimeout) {
      // A device that stopped responding can block the release of its queue and buffers: leave
      // without running destructors.
      std::cerr << "clreduce: " << rank_words(ranks) << flag_words(e) << "\n";
      std::cout.flush();
      std::cerr.flush();
      if (ranks.many()) abort_ranks(exit_code(e.category()));
      std::_Exit(exit_code(e.category()));
    }
    return fail(e.category(), flag_words(e), dynamic_cast<const EveryRank*>(&e) != nullptr);
  } catch (const cl::Error& e) {
    const Error described = describe_cl_error(e);  // allocation failures exit 5
    return fail(described.category(), described.what());
  } catch (const std::bad_alloc&) {
    return fail(Errc::kUnsupported, "out of host memory");
  } catch (const std::exception& e) {
    return fail(Errc::kRuntime, e.what());
  }
}
