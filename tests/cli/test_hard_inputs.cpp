// test_hard_inputs.cpp: the command line on hostile or unusual inputs: special files where a file
// is expected, text from files in messages, overflowing floats, output files that cannot be written
// or are interrupted, and low memory. Each error is one line with its documented exit code.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
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
  // 1.5 GB: the runtime loads (or not: exit 3), but 2^28 int32 (1 GiB, twice on a CPU device)
  // does not fit beside it: refused before it is allocated, exit 5.
  if (clreduce::test::device_context().info().max_alloc < (std::uint64_t{1} << 30))
    SKIP("the device's largest allocation is under 1 GiB");
  r = run_cli("--size 2^28 --repeat 1", "ulimit -v 1500000 &&");
  CHECK((r.code == 3 || r.code == 5));
  CHECK_THAT(r.out, ContainsSubstring("ulimit -v"));
  CHECK(lines(r.out) == 1);
  if (r.code == 5) CHECK_THAT(r.out, ContainsSubstring("more host memory"));
}
