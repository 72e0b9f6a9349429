// test_cli.cpp: the command line as a user meets it: exit codes and one-line messages for
// every error path, --help, listings, JSON output.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "clreduce/version.hpp"
#include "reduce/variant.hpp"
#include "scan/scan_variant.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {

using Result = clreduce::test::CliResult;
using clreduce::test::run_cli;
std::size_t lines(const std::string& s) { return clreduce::test::count_lines(s); }

}  // namespace

TEST_CASE("the README's run line prints a verified result of the default variant, fast", "[cli]") {
  const Result r = run_cli("--device 0 --size 100000");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("\nfast "));
  CHECK_THAT(r.out, ContainsSubstring("yes"));
}

TEST_CASE("help, device list and variant list answer", "[cli]") {
  Result r = run_cli("--help");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("Exit codes"));
  CHECK_THAT(r.out, ContainsSubstring("--variant"));
  r = run_cli("--list-devices");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("OpenCL C"));
  CHECK_THAT(r.out, ContainsSubstring("max alloc"));
  r = run_cli("--list-variants");
  CHECK(r.code == 0);
  for (const char* v : {"sequential-device", "bottomup", "topdown", "fast"})
    CHECK_THAT(r.out, ContainsSubstring(v));
  r = run_cli("--list-devices --format json --device 0");
  CHECK(r.code == 0);
  CHECK(lines(r.out) == 1);
  for (const char* key :
       {"{\"index\":0,", "\"type\":", "\"name\":", "\"driver\":", "\"compute_units\":",
        "\"global_mem\":", "\"max_alloc\":", "\"fp64\":", "\"global_cache\":"})
    CHECK_THAT(r.out, ContainsSubstring(key));
}

TEST_CASE("clreduce --version names the version, the build options and the kernel directory",
          "[cli]") {
  const Result r = run_cli("--version");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring(std::string("clreduce ") + CLREDUCE_VERSION + "\n"));
  CHECK_THAT(r.out, ContainsSubstring("\nopencl: API 1.2"));
  CHECK_THAT(r.out, ContainsSubstring("\nopenmp: "));
#if CLREDUCE_HAVE_MPI
  CHECK_THAT(r.out, ContainsSubstring("\nmpi: Open MPI v"));
#else
  CHECK_THAT(r.out, ContainsSubstring("\nmpi: not built in\n"));
#endif
  // A build-tree run reads the source tree's kernels.
  CHECK_THAT(r.out,
             ContainsSubstring(std::string("\nkernels: ") + CLREDUCE_SOURCE_KERNEL_DIR + "\n"));
  const Result bad = run_cli("--version --kernel-dir /nonexistent/cl");
  CHECK(bad.code == 4);
  CHECK_THAT(
      bad.out,
      ContainsSubstring("kernels: kernel directory not found: tried --kernel-dir /nonexistent/cl"));
}

TEST_CASE("bad arguments get one line and exit code 2", "[cli]") {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c :
       {Case{"--device 99", "no device 99"}, Case{"--device nosuchdevice", "no device matches"},
        Case{"--variant nope", "unknown variant 'nope' (valid: all"},
        Case{"--op nope", "unknown op 'nope' (valid: sum"},
        Case{"--type int128", "unknown type 'int128'"},
        Case{"--size abc", "--size must be a count from 0 to 2^64-1, written N, 2^K"},
        Case{"--size -5", "not '-5'"}, Case{"--repeat x", "repeat"}, Case{"--format xml", "format"},
        Case{"--bogus", "bogus"}, Case{"--input /nonexistent.npy", "cannot open /nonexistent.npy"},
        Case{"--op min --size 0", "no identity"},
        Case{"--variant exact --op max --type float --size 10",
             "exact cannot run this: max of float has no exact form"},
        Case{"--variant fast,exact --type int32 --size 10",
             "exact cannot run this: sum of int32 has no exact form"}}) {
    CAPTURE(c.args);
    const Result r = run_cli(c.args);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK(lines(r.out) == 1);
  }
}

TEST_CASE("an array larger than host memory is exit code 5, saying what it needs", "[cli]") {
  const Result r = run_cli("--size 2^50");
  CHECK(r.code == 5);
  CHECK_THAT(r.out, ContainsSubstring("more host memory"));
  CHECK(lines(r.out) == 1);
}

TEST_CASE("a malformed .npy file is refused with what is wrong", "[cli]") {
  const clreduce::test::TempDir d;
  const std::string path = d / "bad.npy";
  std::ofstream(path, std::ios::binary) << "this is not numpy";
  const Result r = run_cli("--input " + path);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("bad magic"));
}

TEST_CASE("a missing kernel directory names every place tried (exit 4)", "[cli]") {
  Result r = run_cli("--kernel-dir /nonexistent/cl --size 10");
  CHECK(r.code == 4);
  CHECK_THAT(r.out, ContainsSubstring("/nonexistent/cl"));
  r = run_cli("--size 10", "CLREDUCE_KERNEL_DIR=/nowhere");
  CHECK(r.code == 4);
  CHECK_THAT(r.out, ContainsSubstring("/nowhere"));
}

TEST_CASE("no OpenCL platform is exit code 3 with a hint", "[cli]") {
  const clreduce::test::TempDir empty;  // no vendor files: removed at the end, pass or skip
  const std::string env = "OCL_ICD_VENDORS=" + empty.dir.string();
  if (run_cli("--list-devices", env).code != 3) SKIP("this ICD loader ignores OCL_ICD_VENDORS");
  const Result r = run_cli("--size 10", env);
  CHECK(r.code == 3);
  CHECK_THAT(r.out, ContainsSubstring("no OpenCL platform"));
}

TEST_CASE("JSON output prints one object per variant with the documented keys", "[cli]") {
  const Result r =
      run_cli("--variant all --op argmin --type float --size 5000 --format json --repeat 2");
  CHECK(r.code == 0);
  CHECK(lines(r.out) ==
        clreduce::reduce_variants().size() + clreduce::scan_variants().size());  // scans skipped
  for (const char* key :
       {"\"variant\":", "\"kind\":\"clreduce\"", "\"mode\":\"reduce\"", "\"op\":\"argmin\"",
        "\"type\":\"float\"", "\"n\":5000", "\"device\":", "\"result\":", "\"index\":",
        "\"expected\":", "\"verified\":true", "\"kernel_ms\":", "\"kernel_ms_min\":",
        "\"kernel_ms_max\":", "\"wall_ms\":", "\"gbps\":", "\"seq_ms\":", "\"speedup\":"})
    CHECK_THAT(r.out, ContainsSubstring(key));
}

TEST_CASE(
    "exact: under --variant all skipped for other ops; --accuracy and JSON give float sums' errors",
    "[cli][exact]") {
  Result r =
      run_cli("--variant all-reduce --op max --type float --size 1000 --format json --repeat 1");
  CHECK(r.code == 0);
  CHECK_THAT(
      r.out,
      ContainsSubstring(
          "{\"variant\":\"exact\",\"kind\":\"clreduce\",\"mode\":\"reduce\",\"op\":\"max\""));
  CHECK_THAT(r.out, ContainsSubstring("\"skipped\":true,\"reason\":\"max of float has no exact "
                                      "form (exact sums float and double only)"));
  CHECK_THAT(r.out, !ContainsSubstring("err_ulp"));  // not a sum
  r = run_cli("--variant fast,exact --type double --size 100003 --format json --repeat 1");
  CHECK(r.code == 0);
  CHECK(lines(r.out) == 2);
  CHECK_THAT(r.out, ContainsSubstring("\"err_ulp\":0,\"err_rel\":0,\"bound\":0}"));  // exact's
  CHECK_THAT(r.out, ContainsSubstring(" fpe2 ticket"));
  r = run_cli("--variant fast,exact --type float --size 100003 --repeat 1 --accuracy");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("err ulp    err rel"));
  CHECK_THAT(r.out, ContainsSubstring("          0          0\n"));
  r = run_cli("--variant fast --type int32 --size 1000 --repeat 1 --accuracy");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("          -          -\n"));
}

TEST_CASE("peers: --peers adds a verified omp row and vs_omp ratios, --measure-copy a copy row",
          "[cli]") {
  for (const char* op : {"sum", "argmin"}) {
    CAPTURE(op);
    const Result r =
        run_cli(std::string("--variant fast,topdown --op ") + op +
                " --type float --size 100003 --format json --repeat 3 --peers --measure-copy");
    CHECK(r.code == 0);
    CHECK(lines(r.out) == 4);
    const std::size_t omp = r.out.find("{\"variant\":\"omp\",\"kind\":\"peer\"");
    const std::size_t copy = r.out.find("{\"variant\":\"copy\",\"kind\":\"ceiling\"");
    const std::size_t fast = r.out.find("{\"variant\":\"fast\",\"kind\":\"clreduce\"");
    REQUIRE(omp != std::string::npos);
    REQUIRE(copy != std::string::npos);
    REQUIRE(fast != std::string::npos);
    const std::string omp_line = r.out.substr(omp, r.out.find('\n', omp) - omp);
    const std::string copy_line = r.out.substr(copy, r.out.find('\n', copy) - copy);
    const std::string fast_line = r.out.substr(fast, r.out.find('\n', fast) - fast);
    for (const char* key :
         {"\"verified\":true", "\"kernel_ms\":", "\"kernel_ms_min\":", "\"kernel_ms_max\":",
          "\"gbps\":", "\"seq_ms\":", "\"result\":", "\"expected\":", "openmp threads="})
      CHECK_THAT(omp_line, ContainsSubstring(key));
    CHECK_THAT(copy_line, ContainsSubstring("\"verified\":true"));
    CHECK_THAT(copy_line, !ContainsSubstring("\"result\":"));
    CHECK_THAT(fast_line, ContainsSubstring("\"vs_omp\":"));
    CHECK_THAT(omp_line, !ContainsSubstring("\"vs_omp\":"));
  }
  const Result t = run_cli("--size 100003 --peers");
  CHECK(t.code == 0);
  CHECK_THAT(t.out, ContainsSubstring("vs omp"));
  CHECK_THAT(t.out, ContainsSubstring("\nomp "));
}

TEST_CASE("a bad CLREDUCE_FAST_SHAPE or CLREDUCE_FAST_GROUPS is a usage error", "[cli]") {
  Result r = run_cli("--size 1000", "CLREDUCE_FAST_SHAPE=fpga");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring(
                        "CLREDUCE_FAST_SHAPE must be one of auto, gpu, cpu, topdown, not 'fpga'"));
  r = run_cli("--size 1000", "CLREDUCE_FAST_GROUPS=0");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("CLREDUCE_FAST_GROUPS must be a count"));
}

TEST_CASE("a wrong result exits 1", "[cli]") {
  namespace fs = std::filesystem;
  const clreduce::test::TempDir d;
  const fs::path dir = d.dir / "cl";
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, dir, fs::copy_options::recursive);
  {
    std::ifstream in(dir / "clr_ticket.h");  // the epilogue that writes topdown's result
    std::string s((std::istreambuf_iterator<char>(in)), {});
    const std::string from = "out[0] = a;";
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    s.replace(at, from.size(), "out[0] = clr_op(a, (acc_t)1);");
    std::ofstream(dir / "clr_ticket.h", std::ios::trunc) << s;
  }
  const Result r = run_cli("--kernel-dir " + dir.string() + " --variant topdown --size 1000");
  CHECK(r.code == 1);
  CHECK_THAT(r.out, ContainsSubstring("NO"));
}
