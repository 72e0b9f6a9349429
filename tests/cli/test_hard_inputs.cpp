// test_hard_inputs.cpp: the command line on hostile or unusual inputs: special files where a file
// is expected, text from files in messages, overflowing floats, output files that cannot be written
// or are interrupted, and low memory. Each error is one line with its documented exit code.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "io/npy.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace clreduce;
namespace fs = std::filesystem;

namespace {

using Result = clreduce::test::CliResult;
using clreduce::test::run_cli;
std::size_t lines(const std::string& s) { return clreduce::test::count_lines(s); }

// A command that hangs fails the test instead of the suite: timeout exits 124.
const std::string kTimeout = "timeout 60";

using clreduce::test::TempDir;

// A .npy image with a raw header dict.
std::string npy_bytes(std::string dict, const std::string& data) {
  dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::string s("\x93NUMPY\x01\x00", 8);
  s += static_cast<char>(dict.size() & 0xff);
  s += static_cast<char>(dict.size() >> 8);
  return s + dict + data;
}

template <class T> void save(const std::string& path, DType t, const std::vector<T>& v) {
  HostArray a;
  a.type = t;
  a.n = v.size();
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  write_npy(path, a);
}

}  // namespace

TEST_CASE("a FIFO or a directory as --input or --segments is refused at once (exit 2)",
          "[cli][hard]") {
  const TempDir d;
  const std::string fifo = d / "fifo.npy";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_directory(d / "dir.npy");
  for (const std::string& args : {"--input " + fifo, "--input " + (d / "dir.npy"),
                                  "--variant scan-blelloch --size 10 --segments " + fifo}) {
    CAPTURE(args);
    const Result r = run_cli(args + " --repeat 1", kTimeout);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring(": not a regular file (a "));
    CHECK(lines(r.out) == 1);
  }
}

TEST_CASE("a kernel file that is a FIFO or a directory is a build error naming it (exit 4)",
          "[cli][hard]") {
  const TempDir d;
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, d.dir / "cl", fs::copy_options::recursive);
  fs::remove(d.dir / "cl" / "reduce_topdown.cl");
  REQUIRE(::mkfifo((d / "cl/reduce_topdown.cl").c_str(), 0600) == 0);
  fs::remove(d.dir / "cl" / "clr_scan.h");
  fs::create_directory(d.dir / "cl" / "clr_scan.h");
  Result r =
      run_cli("--kernel-dir " + (d / "cl") + " --variant topdown --size 1000 --repeat 1", kTimeout);
  CHECK(r.code == 4);
  CHECK_THAT(r.out, ContainsSubstring("kernel source " + (d / "cl/reduce_topdown.cl") +
                                      ": not a regular file (a FIFO)"));
  r = run_cli("--kernel-dir " + (d / "cl") + " --variant scan-blelloch --size 1000 --repeat 1",
              kTimeout);
  CHECK(r.code == 4);
  CHECK_THAT(r.out, ContainsSubstring("kernel source " + (d / "cl/clr_scan.h") +
                                      ": not a regular file (a directory)"));
  fs::remove(d.dir / "cl" / "clreduce.h");
  REQUIRE(::mkfifo((d / "cl/clreduce.h").c_str(), 0600) == 0);
  r = run_cli("--kernel-dir " + (d / "cl") + " --size 1000 --repeat 1", kTimeout);
  CHECK(r.code == 4);
  CHECK_THAT(r.out, ContainsSubstring("its clreduce.h is not a regular file"));
  CHECK(lines(r.out) == 1);
}

namespace {

std::string text_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Puts `code` at the start of the body of every kernel function in `file`.
void inject_into_kernels(const fs::path& file, const std::string& code) {
  std::string s = text_of(file);
  std::size_t at = 0, kernels = 0;
  while ((at = s.find("__kernel ", at)) != std::string::npos) {
    const std::size_t body = s.find('{', at);
    REQUIRE(body != std::string::npos);
    s.insert(body + 1, code);
    at = body + 1 + code.size();
    ++kernels;
  }
  REQUIRE(kernels > 0);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << s;
}

bool cpu_device() { return !clreduce::test::device_context().info().is_gpu; }

}  // namespace

TEST_CASE(
    "a kernel file that does not build is exit 4 with the compiler's line for every variant, "
    "never a fallback to another kernel",
    "[cli][hard]") {
  const TempDir d;
  const fs::path src = CLREDUCE_SOURCE_KERNEL_DIR, cl = d.dir / "cl";
  fs::copy(src, cl, fs::copy_options::recursive);
  struct Case {
    std::string variant, file;
  };
  std::vector<Case> cases = {{"fast", "reduce_fast.cl"},
                             {"exact --type float", "reduce_exact.cl"},
                             {"exact --type double", "reduce_exact.cl"},
                             {"interleaved-divergent", "reduce_interleaved_divergent.cl"},
                             {"unroll-last-warp", "reduce_unroll_last_warp.cl"},
                             {"scan-lookback", "scan_lookback.cl"},
                             {"scan-hierarchical", "scan_hierarchical.cl"}};
  // scan-fast's paths on a CPU: the look-back over tiles, and the two-pass scan that a group
  // size asked for takes.
  if (cpu_device()) {
    cases.push_back({"scan-fast", "scan_cpu_lookback.cl"});
    cases.push_back({"scan-fast --local-size 4", "scan_cpu_two_pass.cl"});
  }
  for (const Case& c : cases) {
    CAPTURE(c.variant, c.file);
    const std::string good = text_of(src / c.file);
    REQUIRE(!good.empty());
    REQUIRE(good.back() == '\n');
    // The appended line's number, as the compiler reports it: file:LINE:COLUMN.
    const std::size_t line =
        static_cast<std::size_t>(std::count(good.begin(), good.end(), '\n')) + 1;
    std::ofstream(cl / c.file, std::ios::binary | std::ios::trunc)
        << good << "kernel void broken(\n";
    const Result r = run_cli("--kernel-dir " + cl.string() + " --variant " + c.variant +
                                 " --size 1000 --repeat 1 --warmup 0",
                             kTimeout);
    CHECK(r.code == 4);
    CHECK_THAT(r.out, ContainsSubstring("kernel build failed"));
    CHECK_THAT(r.out, ContainsSubstring(c.file + ":" + std::to_string(line) + ":"));
    CHECK_THAT(r.out, !ContainsSubstring("verified"));
    std::ofstream(cl / c.file, std::ios::binary | std::ios::trunc) << good;
  }
  // A kernel file that is a FIFO: exit 4 naming it, fast and scan-fast alike.
  fs::remove(cl / "reduce_fast.cl");
  REQUIRE(::mkfifo((cl / "reduce_fast.cl").c_str(), 0600) == 0);
  Result r =
      run_cli("--kernel-dir " + cl.string() + " --variant fast --size 1000 --repeat 1", kTimeout);
  CHECK(r.code == 4);
  CHECK_THAT(r.out, ContainsSubstring("kernel source " + (cl / "reduce_fast.cl").string() +
                                      ": not a regular file (a FIFO)"));
  if (cpu_device()) {
    fs::remove(cl / "scan_cpu_lookback.cl");
    REQUIRE(::mkfifo((cl / "scan_cpu_lookback.cl").c_str(), 0600) == 0);
    r = run_cli("--kernel-dir " + cl.string() + " --variant scan-fast --size 1000 --repeat 1",
                kTimeout);
    CHECK(r.code == 4);
    CHECK_THAT(r.out, ContainsSubstring("kernel source " + (cl / "scan_cpu_lookback.cl").string() +
                                        ": not a regular file (a FIFO)"));
  }
}

TEST_CASE(
    "a kernel that never ends is stopped by --timeout, in a start-up check as in a run (exit 3)",
    "[cli][hard]") {
  // A hung kernel can take a GPU's driver down with it: on CPU devices only.
  if (!cpu_device()) SKIP("a kernel that never ends is run on CPU devices only");
  const TempDir d;
  const fs::path src = CLREDUCE_SOURCE_KERNEL_DIR, cl = d.dir / "cl";
  fs::copy(src, cl, fs::copy_options::recursive);
  struct Case {
    std::string variant, file, says;
  };
  // fast, scan-fast and exact meet their loop in their start-up checks (capability answers are
  // waited for too), topdown in its run.
  const Case cases[] = {
      {"fast", "reduce_fast.cl", "the start-up check of fast's"},
      {"scan-fast", "scan_cpu_lookback.cl", "the start-up check of scan-fast's"},
      {"exact --type float", "reduce_exact.cl", "the start-up check of exact's"},
      {"topdown", "reduce_topdown.cl", "topdown sum of 1000 int32 elements did not finish"}};
  for (const Case& c : cases) {
    CAPTURE(c.variant, c.file);
    const std::string good = text_of(src / c.file);
    inject_into_kernels(cl / c.file, "\n  for (volatile int spin = 1; spin;) {}\n");
    const auto t0 = std::chrono::steady_clock::now();
    // The default limit is 60 s: a wait that ignored --timeout would be cut by `timeout` (124).
    const Result r = run_cli("--kernel-dir " + cl.string() + " --variant " + c.variant +
                                 " --size 1000 --repeat 1 --warmup 0 --timeout 2",
                             "timeout 50");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(r.code == 3);
    CHECK(s < 45);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK_THAT(r.out, ContainsSubstring(c.variant.substr(0, c.variant.find(' ')) + " sum"));
    CHECK_THAT(r.out, ContainsSubstring("did not finish within --timeout 2 s; raise --timeout"));
    CHECK(lines(r.out) == 1);
    std::ofstream(cl / c.file, std::ios::binary | std::ios::trunc) << good;
  }
}

namespace {

bool pocl_device() {
  return clreduce::test::device_context().info().platform_name.find(
             "Portable Computing Language") != std::string::npos;
}

// The message of a kernel cache that cannot be used: one line naming it and the variable.
void check_cache_message(const Result& r, const std::string& dir, const std::string& what) {
  CHECK(r.code == 4);
  CHECK_THAT(r.out, ContainsSubstring("PoCL's kernel cache " + dir + " " + what));
  CHECK_THAT(r.out, ContainsSubstring("point POCL_CACHE_DIR at a writable folder"));
  CHECK(lines(r.out) == 1);
}

}  // namespace

TEST_CASE(
    "a kernel cache that cannot be made or written says so and how to point it elsewhere "
    "(exit 4)",
    "[cli][hard]") {
  if (!pocl_device()) SKIP("the kernel cache checked is PoCL's");
  const TempDir d;
  std::ofstream(d / "file") << "a regular file";
  // Its folder under a regular file: PoCL cannot make it and finds no device (root included).
  const std::string under = d / "file/cache";
  for (const std::string args : {"--size 1000", "--list-devices"}) {
    CAPTURE(args);
    check_cache_message(run_cli(args, "POCL_CACHE_DIR=" + under), under,
                        "cannot be made (Not a directory)");
  }
  // A regular file as the folder: every build fails, trial builds and start-up checks too.
  const std::string file = d / "file";
  for (const std::string v : {"fast", "scan-fast", "exact --type float", "topdown"}) {
    CAPTURE(v);
    const Result r = run_cli("--size 1000 --repeat 1 --variant " + v, "POCL_CACHE_DIR=" + file);
    check_cache_message(r, file, "cannot be made");
    CHECK_THAT(r.out, ContainsSubstring("kernel build failed"));
  }
}

TEST_CASE("a full or read-only kernel cache says so (exit 4), never a silent exit", "[cli][hard]") {
  if (!pocl_device()) SKIP("the kernel cache checked is PoCL's");
  // A small tmpfs of its own, mounted in a user and mount namespace of the command's own.
  if (std::system("unshare -rm sh -c 'mount -t tmpfs -o size=64k tmpfs /tmp' >/dev/null 2>&1") != 0)
    SKIP("unshare cannot mount a tmpfs here");
  const TempDir d;
  const std::string dir = d / "cache";
  fs::create_directory(dir);
  const auto in_tmpfs = [&](const std::string& opts) {
    return "unshare -rm sh -c 'mount -t tmpfs -o " + opts + " tmpfs " + dir +
           " && POCL_CACHE_DIR=" + dir + " exec \"$@\"' sh";
  };
  // 64 KiB: the compiler's preprocessed source does not fit, and LLVM ends the process.
  for (const std::string v : {"fast", "scan-fast"}) {
    CAPTURE(v);
    const Result r = run_cli("--size 1000 --repeat 1 --variant " + v, in_tmpfs("size=64k"));
    check_cache_message(r, dir, "is full (No space left on device)");
    CHECK_THAT(r.out, ContainsSubstring("the OpenCL compiler ended the process while building"));
    CHECK_THAT(r.out, ContainsSubstring("No space left on device"));
  }
  const Result r = run_cli("--size 1000 --repeat 1", in_tmpfs("size=64k,ro"));
  check_cache_message(r, dir, "cannot be written (Read-only file system)");
}

TEST_CASE("text from a .npy header is escaped: no colour codes, no forged line (exit 2)",
          "[cli][hard]") {
  const TempDir d;
  const std::string path = d / "forged.npy";
  std::ofstream(path, std::ios::binary) << npy_bytes(
      "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), '\x1b[32mok\nclreduce: all "
      "verified': 1}",
      std::string(4, '\0'));
  const Result r = run_cli("--input " + path, kTimeout);
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK_THAT(r.out, ContainsSubstring("unexpected key '\\x1B[32mok\\x0Aclreduce: all verified'"));
}

TEST_CASE("an --output that cannot be written is refused before any work (exit 2)", "[cli][hard]") {
  const TempDir d;
  REQUIRE(::mkfifo((d / "fifo.npy").c_str(), 0600) == 0);
  fs::create_directory(d / "dir.npy");
  for (const std::string& out : {d / "missing/y.npy", d / "dir.npy", d / "fifo.npy"}) {
    CAPTURE(out);
    const Result r =
        run_cli("--variant scan-fast --size 1000 --repeat 1 --output " + out, kTimeout);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring("cannot write " + out + ": "));
    CHECK(lines(r.out) == 1);  // no table: nothing ran
  }
}

TEST_CASE("an --output written from a scan that did not verify says so on stderr", "[cli][hard]") {
  const TempDir d;
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, d.dir / "cl", fs::copy_options::recursive);
  {
    std::ifstream in(d.dir / "cl" / "scan_add.cl");
    std::string s((std::istreambuf_iterator<char>(in)), {});
    const std::string from = "y[base + k] = clr_op(c, y[base + k]);";
    REQUIRE(s.find(from) != std::string::npos);
    s.replace(s.find(from), from.size(), "if (k != 5) y[base + k] = clr_op(c, y[base + k]);");
    std::ofstream(d.dir / "cl" / "scan_add.cl", std::ios::trunc) << s;
  }
  const std::string out = d / "y.npy";
  Result r = run_cli("--kernel-dir " + (d / "cl") +
                         " --variant scan-hillis-steele --local-size 64 --size 1000 "
                         "--repeat 1 --output " +
                         out,
                     kTimeout);
  CHECK(r.code == 1);
  CHECK_THAT(r.out, ContainsSubstring("clreduce: wrote " + out +
                                      " from scan-hillis-steele, whose result did not verify"));
  CHECK(read_npy(out).n == 1000);
  r = run_cli("--variant scan-hillis-steele --size 1000 --repeat 1 --output " + out, kTimeout);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, !ContainsSubstring("did not verify"));
}

TEST_CASE("JSON keeps the sign of a -0.0 result, as the table does", "[cli][hard]") {
  const TempDir d;
  const std::string path = d / "negzero.npy";
  save<float>(path, DType::kFloat, {-0.0f, -0.0f});
  Result r = run_cli(
      "--input " + path + " --op min --variant fast,scan-fast --repeat 1 --format json", kTimeout);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("\"result\":-0.0,\"expected\":-0.0"));
  r = run_cli("--input " + path + " --op max --variant fast --repeat 1", kTimeout);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("\nfast                   -0 "));
}

TEST_CASE("float inputs where an order overflows verify as overflow (exit 0), scans included",
          "[cli][hard][overflow]") {
  const TempDir d;
  save<float>(d / "f32.npy", DType::kFloat, {3e38f, 3e38f, -3e38f, -3e38f});
  save<double>(d / "f64.npy", DType::kDouble, {1.7e308, 1.7e308, -1.7e308, -1.7e308});
  save<float>(d / "prod.npy", DType::kFloat, {1e30f, 1e30f, 1e-30f, 1e-30f});
  for (const std::string& args : {"--input " + (d / "f32.npy"), "--input " + (d / "f64.npy"),
                                  "--input " + (d / "prod.npy") + " --op prod"}) {
    CAPTURE(args);
    Result r = run_cli(args + " --variant all --repeat 1 --local-size 64 --peers", kTimeout);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, ContainsSubstring(" overflow "));
    CHECK_THAT(r.out, ContainsSubstring("  overflow: "));
    CHECK_THAT(r.out, !ContainsSubstring("internal"));
    CHECK_THAT(r.out, !ContainsSubstring(" NO "));
    r = run_cli(args + " --variant fast,scan-fast --exclusive --repeat 1 --format json", kTimeout);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, ContainsSubstring("\"verified\":true,\"overflow\":true"));
    CHECK_THAT(r.out, !ContainsSubstring("\"verified\":false"));
    r = run_cli(args + " --variant fast --repeat 1 --format csv", kTimeout);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, ContainsSubstring(",verified,overflow,error,"));
    CHECK_THAT(r.out, ContainsSubstring(",true,true,"));
  }
}

TEST_CASE("under an address-space limit a run is refused with the reason, never aborted",
          "[cli][hard][memory]") {
  // GPU drivers reserve tens of GB of address space when they load: a limit tests nothing there.
  if (clreduce::test::device_context().info().is_gpu)
    SKIP("address-space limits are for CPU runtimes");
  // 100 MB: too little for an OpenCL runtime to load: exit 3 naming the limit (or, for a runtime
  // that loads in less, the host-memory check: exit 5).
  Result r = run_cli("--size 2^24 --repeat 1", "ulimit -v 100000 &&");
  CHECK((r.code == 3 || r.code == 5));
  CHECK_THAT(r.out, ContainsSubstring("ulimit -v"));
  CHECK(lines(r.out) == 1);
  // 1.25 GB: the runtime loads (or not: exit 3), but 2^28 int32 (1 GiB) does not fit beside the
  // 400 MiB it maps: refused before it is allocated, exit 5. (At 1.5 GB the array fits but for
  // 26 MiB of what the check keeps for the runtime: a run that maps a little less once loaded
  // is rightly taken, and runs.)
  if (clreduce::test::device_context().info().max_alloc < (std::uint64_t{1} << 30))
    SKIP("the device's largest allocation is under 1 GiB");
  r = run_cli("--size 2^28 --repeat 1", "ulimit -v 1250000 &&");
  CHECK((r.code == 3 || r.code == 5));
  CHECK_THAT(r.out, ContainsSubstring("ulimit -v"));
  CHECK(lines(r.out) == 1);
  if (r.code == 5) CHECK_THAT(r.out, ContainsSubstring("more host memory"));
}

namespace {

// What a refusal under an address-space limit says is mapped already and kept for the runtime,
// in MiB: "(391 MiB mapped already, 80 MiB kept for thread stacks and the OpenCL runtime)".
bool mapped_and_kept(const std::string& out, double& mapped, double& kept) {
  const std::regex re(R"(\(([0-9.]+) MiB mapped already, ([0-9.]+) MiB kept for)");
  std::smatch m;
  if (!std::regex_search(out, m, re)) return false;
  mapped = std::stod(m[1]);
  kept = std::stod(m[2]);
  return true;
}

}  // namespace

TEST_CASE("the memory check counts every buffer a run makes, and nothing it does not",
          "[cli][hard][memory]") {
  if (clreduce::test::device_context().info().is_gpu)
    SKIP("address-space limits are for CPU runtimes");
  // The kernels built and probed once, so the runs below find them in the runtime's cache.
  Result r = run_cli("--size 1000 --repeat 1 --variant all --type double", kTimeout);
  REQUIRE(r.code == 0);
  // What the runtime maps once loaded, and what the check keeps for it: read from the refusal of
  // an array past any host (refused before any kernel is built, whatever the limit).
  r = run_cli("--size 2^60 --type double --variant all", "ulimit -v 8000000 && " + kTimeout);
  if (r.code == 3) SKIP("the OpenCL runtime does not load under an 8 GB address-space limit");
  REQUIRE(r.code == 5);
  double mapped = 0, kept = 0;
  REQUIRE(mapped_and_kept(r.out, mapped, kept));
  CAPTURE(mapped, kept);
  const auto limit_kb = [&](double mib) {
    return "ulimit -v " + std::to_string(static_cast<long long>(mib * 1024)) + " && ";
  };
  // 2^25 doubles and their scans' output are 512 MiB; under a limit with 128 MiB to spare beside
  // them, the scratch of bottomup alone (n/2 + n/4 accumulators: 192 MiB) does not fit. Refused
  // before any row (once, every variant ran until PoCL asserted inside one of them).
  r = run_cli("--size 2^25 --type double --variant all --repeat 1",
              limit_kb(mapped + kept + 512 + 128) + kTimeout);
  CHECK(r.code == 5);
  CHECK_THAT(r.out, ContainsSubstring("more host memory (the array 256 MiB, the scans' output "
                                      "256 MiB"));
  CHECK_THAT(r.out, ContainsSubstring("the largest plan's scratch 192 MiB"));
  CHECK_THAT(r.out, !ContainsSubstring("variant "));  // no table, not even its header
  CHECK(lines(r.out) == 1);
  // A user reduction's arrays and the device's copies of them (once made, then refused by
  // clCreateBuffer): refused before any array is made.
  r = run_cli("--map 'x*y' --reduce 'a+b' --identity 0 --size 2^25 --type double --repeat 1",
              limit_kb(mapped + kept + 512 + 128) + kTimeout);
  CHECK(r.code == 5);
  CHECK_THAT(r.out,
             ContainsSubstring("this run needs 1024 MiB more host memory (the arrays 512 MiB, "
                               "the device's copies 512 MiB)"));
  CHECK(lines(r.out) == 1);
  // A small run with room for itself beside what is mapped, what the check keeps and 48 MiB
  // runs (once refused, "needs 0 MiB ... leaves 0 MiB", for a margin meant for kernel builds
  // that were cached).
  r = run_cli("--size 1000 --repeat 1 --variant fast", limit_kb(mapped + kept + 48) + kTimeout);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("fast  "));
  CHECK_THAT(r.out, !ContainsSubstring("0 MiB more"));
  // Under a limit that leaves less than the run needs, the figures are the real ones: KiB for
  // 1000 int32s and their chunk, not "0 MiB".
  r = run_cli("--size 1000 --repeat 1 --variant fast", limit_kb(mapped + kept / 2) + kTimeout);
  if (r.code == 5) {
    CHECK_THAT(r.out, ContainsSubstring(" KiB more host memory (the array 4 KiB, "));
    CHECK(lines(r.out) == 1);
  } else {
    CHECK(r.code == 3);  // or the runtime itself does not load there
  }
}

TEST_CASE("sizes whose byte count passes 2^64 are refused, never wrapped (exit 5)",
          "[cli][hard][memory]") {
  // 2^62 int32s are 2^64 bytes: wrapped, 0. Every type and every part of the run alike, refused
  // before any kernel is built.
  struct Case {
    std::string args;
    std::string says;
  };
  for (const Case& c :
       {Case{"--size 2^62", "the array more than 2^64-1 bytes"},
        Case{"--size 2^61 --type double", "the array more than 2^64-1 bytes"},
        Case{"--size 2^63 --type double --variant all", "the array more than 2^64-1 bytes"},
        Case{"--size 2^64-1 --type uint64 --variant scan-fast", "more than 2^64-1 bytes"},
        Case{"--size 2^61 --variant scan-blelloch", "the scans' output more than 2^64-1 bytes"},
        Case{"--size 2^63 --type int32 --variant scan-fast --segment-length 5",
             "more than 2^64-1 bytes"},
        Case{"--size 2^60 --max-chunk 1 --variant fast", "the chunks' bookkeeping more than"},
        Case{"--size 2^62 --tune in-place=off --tune stream=on", "more than 2^64-1 bytes"},
        Case{"--map 'x*y' --reduce 'a+b' --identity 0 --size 2^62",
             "the arrays more than 2^64-1 bytes"}}) {
    CAPTURE(c.args);
    const Result r = run_cli(c.args + " --repeat 1", kTimeout);
    CHECK(r.code == 5);
    CHECK_THAT(r.out, ContainsSubstring("this run needs more than 2^64-1 bytes of host memory"));
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK(lines(r.out) == 1);
  }
}
