// test_scan_cli.cpp: scans as a user meets them on the command line: --variant all/all-scan,
// --exclusive, --segments/--segment-length, --output round trips, JSON keys, and every error path
// with its exit code and one-line message.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "io/data.hpp"
#include "io/npy.hpp"
#include "scan/scan_variant.hpp"
#include "test_helpers.hpp"
#include "verify/scan_reference.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace clreduce;

namespace {

using Result = clreduce::test::CliResult;
using clreduce::test::run_cli;
std::size_t lines(const std::string& s) { return clreduce::test::count_lines(s); }

// A file `tag`.npy in d (removed with d at the end of the test, pass or fail).
std::filesystem::path temp_path(const clreduce::test::TempDir& d, const std::string& tag) {
  return d.dir / (tag + ".npy");
}

}  // namespace

TEST_CASE("the variant list names the scans, and --variant all runs reductions then scans",
          "[cli][scan]") {
  Result r = run_cli("--list-variants");
  CHECK(r.code == 0);
  for (const auto& v : scan_variants()) CHECK_THAT(r.out, ContainsSubstring(v->name()));
  r = run_cli(
      "--variant all --op max --type int64 --size 3000 --local-size 64 --format json --repeat 1");
  CHECK(r.code == 0);
  CHECK(lines(r.out) == reduce_variants().size() + scan_variants().size());
  CHECK_THAT(r.out, ContainsSubstring("\"mode\":\"reduce\""));
  CHECK_THAT(r.out, ContainsSubstring("\"mode\":\"scan\""));
  CHECK(r.out.find("\"verified\":false") == std::string::npos);
  r = run_cli("--variant all-reduce --size 1000 --format json --repeat 1");
  CHECK(lines(r.out) == reduce_variants().size());
  CHECK(r.out.find("\"mode\":\"scan\"") == std::string::npos);
  r = run_cli("--variant all --op argmin --size 1000 --local-size 64 --repeat 1");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("skipped: argmin has no prefix scan"));
}

TEST_CASE("scan JSON has the foundation keys, the scan keys, and the last element as result",
          "[cli][scan]") {
  const clreduce::test::TempDir d;
  const auto path = temp_path(d, "out");
  const Result r = run_cli(
      "--variant scan-blelloch,scan-hierarchical --size 5000 --seed 7 --segment-length 300 "
      "--exclusive --format json --repeat 1 --output " +
      path.string());
  CHECK(r.code == 0);
  CHECK(lines(r.out) == 2);
  for (const char* key : {"\"mode\":\"scan\"",  "\"variant\":\"scan-blelloch\"",
                          "\"op\":\"sum\"",     "\"type\":\"int32\"",
                          "\"acc\":\"int64\"",  "\"n\":5000",
                          "\"device\":",        "\"exclusive\":true",
                          "\"segmented\":true", "\"result\":",
                          "\"expected\":",      "\"verified\":true",
                          "\"first_wrong\":-1", "\"wrong_count\":0",
                          "\"kernel_ms\":",     "\"wall_ms\":",
                          "\"gbps\":",          "\"seq_ms\":",
                          "\"speedup\":",       "\"launches\":",
                          "\"policy\":"})
    CHECK_THAT(r.out, ContainsSubstring(key));
  // The file holds the whole exclusive segmented scan, int64 by NumPy's rule.
  const HostArray y = read_npy(path.string());
  REQUIRE(y.type == DType::kInt64);
  REQUIRE(y.n == 5000);
  const HostArray x = generate(DType::kInt32, 5000, 7);
  std::vector<std::uint8_t> flags(5000, 0);
  for (std::size_t i = 0; i < 5000; i += 300) flags[i] = 1;
  std::vector<unsigned char> want(5000 * 8);
  sequential_scan(x, ScanMode{Op::kSum, DType::kInt64, true}, flags, want.data());
  CHECK(std::memcmp(want.data(), y.bytes.data(), want.size()) == 0);
  std::int64_t last;
  std::memcpy(&last, y.bytes.data() + 4999 * 8, 8);
  CHECK_THAT(r.out, ContainsSubstring("\"result\":" + std::to_string(last) + ","));
}

TEST_CASE("a --segments flag file and --acc int32 give an int32 result file", "[cli][scan]") {
  const clreduce::test::TempDir d;
  const auto flags_path = temp_path(d, "flags");
  const auto out_path = temp_path(d, "out");
  HostArray f;
  f.type = DType::kUInt32;
  f.n = 4000;
  f.bytes.assign(4000 * 4, 0);
  for (std::size_t i = 0; i < 4000; i += 513) f.bytes[i * 4 + 1] = 1;  // 256: nonzero, low byte 0
  write_npy(flags_path.string(), f);
  const Result r = run_cli(
      "--variant scan-hierarchical --op sum --type int32 --acc int32 --size 4000 --seed 3 "
      "--repeat 1 --segments " +
      flags_path.string() + " --output " + out_path.string());
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("segmented"));
  const HostArray y = read_npy(out_path.string());
  REQUIRE(y.type == DType::kInt32);
  std::vector<std::uint8_t> flags(4000, 0);
  for (std::size_t i = 0; i < 4000; i += 513) flags[i] = 1;
  std::vector<unsigned char> want(4000 * 4);
  sequential_scan(generate(DType::kInt32, 4000, 3), ScanMode{Op::kSum, DType::kInt32, false}, flags,
                  want.data());
  CHECK(std::memcmp(want.data(), y.bytes.data(), want.size()) == 0);
}

TEST_CASE("a scan-only flag without --variant runs the default scan, scan-fast", "[cli][scan]") {
  const Result r = run_cli("--exclusive --segment-length 100 --size 5000 --repeat 1 --format json");
  CHECK(r.code == 0);
  CHECK(lines(r.out) == 1);
  CHECK_THAT(r.out, ContainsSubstring("\"variant\":\"scan-fast\""));
  CHECK_THAT(r.out, ContainsSubstring("\"exclusive\":true,\"segmented\":true"));
  CHECK_THAT(r.out, ContainsSubstring("\"verified\":true"));
}

TEST_CASE("an empty scan verifies with a null result", "[cli][scan]") {
  const Result r = run_cli("--variant all-scan --op min --size 0 --format json --repeat 1");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("\"result\":null"));
  CHECK_THAT(r.out, ContainsSubstring("\"verified\":true"));
}

TEST_CASE("bad scan arguments get one line and exit code 2", "[cli][scan]") {
  const clreduce::test::TempDir d;
  const auto bad = temp_path(d, "bad");
  std::ofstream(bad, std::ios::binary) << "not numpy";
  const auto short_flags = temp_path(d, "short");
  HostArray f;
  f.type = DType::kInt64;
  f.n = 10;
  f.bytes.assign(80, 0);
  write_npy(short_flags.string(), f);
  const auto float_flags = temp_path(d, "float");
  f.type = DType::kFloat;
  f.bytes.assign(40, 0);
  write_npy(float_flags.string(), f);
  struct Case {
    std::string args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"--variant scan-hierarchical --op argmin", "scan-hierarchical: argmin has no prefix scan"},
      {"--variant all-scan --op argmax", "argmax has no prefix scan"},
      {"--variant scan-blelloch --segments /nonexistent.npy", "cannot open /nonexistent.npy"},
      {"--variant scan-blelloch --segments " + bad.string(), "bad magic"},
      {"--variant scan-blelloch --size 100 --segments " + short_flags.string(),
       "10 segment flags for an array of 100 elements"},
      {"--variant scan-blelloch --size 10 --segments " + float_flags.string(),
       "unsupported dtype '<f4'"},
      {"--variant scan-blelloch --segments x.npy --segment-length 4", "excludes"},
      {"--variant scan-blelloch --segment-length 0", "segment-length"},
      {"--variant topdown --exclusive", "apply to scans"},
      {"--variant topdown --output /tmp/x.npy", "apply to scans"},
      {"--variant all --op argmin --exclusive", "apply to scans: argmin has no prefix scan"},
      {"--variant scan-nope", "unknown variant 'scan-nope' (valid: all, all-reduce, all-scan"}};
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Result r = run_cli(c.args + " --repeat 1");
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK(lines(r.out) == 1);
  }
  // Found at run time, after the table header: the message is still one line on stderr.
  const Result r = run_cli("--variant scan-hillis-steele --local-size 1 --size 100 --repeat 1");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("--local-size 1 is too small for this variant (at least 2)"));
}

TEST_CASE("a wrong scan exits 1 and names the first wrong element and the count", "[cli][scan]") {
  namespace fs = std::filesystem;
  const clreduce::test::TempDir d;  // removed at the end, pass or fail
  const fs::path dir = d.dir / "cl";
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, dir, fs::copy_options::recursive);
  {
    std::ifstream in(dir / "scan_add.cl");
    std::string s((std::istreambuf_iterator<char>(in)), {});
    const std::string from = "y[base + k] = clr_op(c, y[base + k]);";
    REQUIRE(s.find(from) != std::string::npos);
    s.replace(s.find(from), from.size(), "if (k != 5) y[base + k] = clr_op(c, y[base + k]);");
    std::ofstream(dir / "scan_add.cl", std::ios::trunc) << s;
  }
  Result r = run_cli("--kernel-dir " + dir.string() +
                     " --variant scan-hillis-steele --local-size 64 --size 1000 --repeat 1");
  CHECK(r.code == 1);
  CHECK_THAT(r.out, ContainsSubstring("NO"));
  CHECK_THAT(r.out, ContainsSubstring("y[69]"));                      // tile 1 starts at 64
  CHECK_THAT(r.out, ContainsSubstring("15 of 1000 elements wrong"));  // tiles 1..15
  r = run_cli("--kernel-dir " + dir.string() +
              " --variant scan-hillis-steele --local-size 64 --size 1000 --repeat 1 --format json");
  CHECK(r.code == 1);
  CHECK_THAT(r.out, ContainsSubstring("\"first_wrong\":69"));
  CHECK_THAT(r.out, ContainsSubstring("\"wrong_count\":15"));
}

TEST_CASE("scan-fast forced onto the look-back path runs, predecessors folded in the kernel too",
          "[cli][scan]") {
  // lookback-limit 0: each group folds the tiles before its own from the input (10 tiles of 512
  // on a CPU), segmented and exclusive, in one launch.
  for (const char* env : {"CLREDUCE_SCAN_FAST_PATH=lookback",
                          "CLREDUCE_SCAN_FAST_PATH=lookback CLREDUCE_LOOKBACK_LIMIT=0"}) {
    CAPTURE(env);
    const Result r = run_cli(
        "--variant scan-fast --size 5000 --segment-length 700 --exclusive --repeat 1 "
        "--format json",
        env);
    CHECK(r.code == 0);
    CHECK(lines(r.out) == 1);
    if (r.out.find("\"skipped\":true") != std::string::npos) {
      CHECK_THAT(r.out, ContainsSubstring("64-bit global atomics"));
      continue;
    }
    CHECK_THAT(r.out, ContainsSubstring("\"verified\":true"));
    CHECK_THAT(r.out, ContainsSubstring("path=scan-lookback: look-back"));
    CHECK((r.out.find(", limit 0") != std::string::npos) ==
          (std::string(env).find("LIMIT=0") != std::string::npos));
    CHECK_THAT(r.out, ContainsSubstring("\"launches\":1,"));
  }
}

TEST_CASE(
    "scan-fast's CPU path streams its output past the caches only where the scan outgrows "
    "a quarter of the cache (scan-nt-stores auto), always with on, never with off",
    "[cli][scan]") {
  const DeviceInfo& info = clreduce::test::device_context().info();
  if (info.is_gpu) SKIP("a GPU: scan-fast's CPU paths do not run on it");
  const auto run = [](std::size_t n, const char* knob) {
    const Result r = run_cli("--variant scan-fast --acc int64 --size " + std::to_string(n) +
                             " --tune scan-nt-stores=" + knob + " --repeat 1 --format json");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, ContainsSubstring("\"verified\":true"));
    CHECK_THAT(r.out, ContainsSubstring("path=cpu"));
    return r.out.find("streaming stores") != std::string::npos;
  };
  const std::size_t small = 40000;    // 480 KB of input and output
  const bool has = run(small, "on");  // where the compiler has them (a trial build)
#if defined(__x86_64__)
  CHECK(has);  // clang's nontemporal store and x86's store fence, on every x86-64 PoCL
#endif
  CHECK_FALSE(run(small, "off"));
  const std::uint64_t cache = info.global_cache;
  CHECK(run(small, "auto") == (has && cache < 4 * small * 12));
  // Past a quarter of the cache (int32 in, int64 out: 12 bytes an element), auto streams.
  const std::uint64_t past = cache / 4 / 12 + 4096;
  if (cache > 0 && past <= (std::uint64_t{1} << 24)) CHECK(run(past, "auto") == has);
}
