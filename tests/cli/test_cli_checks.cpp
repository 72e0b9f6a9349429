// test_cli_checks.cpp: every value checked before any work, in words a person reads: one line,
// exit 2 (or 5), nothing run; a variant asked for by name that cannot run is an error, and every
// mistake that can be found before the first kernel runs is found there.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "io/npy.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::ContainsSubstring;
using clreduce::test::run_cli;
using Result = clreduce::test::CliResult;

namespace {

std::size_t lines(const std::string& s) { return clreduce::test::count_lines(s); }

// An int32 .npy file of n elements, `tag`.npy in d (removed with d at the end of the test).
std::filesystem::path temp_npy(const clreduce::test::TempDir& d, const std::string& tag,
                               std::size_t n) {
  const std::filesystem::path path = d.dir / (tag + ".npy");
  clreduce::HostArray a;
  a.type = clreduce::DType::kInt32;
  a.n = n;
  a.bytes.assign(n * 4, 0);
  for (std::size_t i = 0; i < n; ++i) a.bytes[i * 4] = static_cast<unsigned char>(i % 7);
  clreduce::write_npy(path.string(), a);
  return path;
}

}  // namespace

TEST_CASE("every value is checked up front: one line in words, exit 2", "[cli][checks]") {
  const clreduce::test::TempDir d;
  const auto npy = temp_npy(d, "checks", 10);
  const std::string f = npy.string();
  struct Case {
    std::string args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"--seed -1",
       "--seed must be a whole number from 0 to 18446744073709551615 (2^64-1), not '-1'"},
      {"--seed 18446744073709551616", "not '18446744073709551616'"},
      {"--seed 1e3", "--seed must be a whole number"},
      {"--input " + f + " --size 10", "--size and --input exclude each other"},
      {"--input " + f + " --seed 3", "--seed and --input exclude each other"},
      {"--local-size 0",
       "--local-size must be a whole number from 1 to the device's largest work-group size"},
      {"--local-size -1", "not '-1'"},
      {"--local-size 99999999999", "--local-size must be a whole number from 1"},
      {"--acc int32 --op min", "--acc applies to sum and prod only"},
      {"--acc int128", "unknown type 'int128'"},
      {"--acc uint32 --type int32", "--acc uint32 is not available for sum of int32"},
      {"--segment-length 99999999999999999999 --size 10",
       "--segment-length must be a count from 1 to 2^64-1, written N, 2^K, NeK, 2^K+M or 2^K-M"},
      {"--segment-length 0 --size 10", "--segment-length must be a count from 1 to 2^64-1"},
      {"--input ''", "--input needs a file name ('-' for standard input), not an empty value"},
      {"--segments '' --size 10", "--segments needs a .npy file name"},
      {"--output '' --size 10", "--output needs a file name"},
      {"--variant ''", "--variant needs a variant name"},
      {"--kernel-dir ''", "--kernel-dir needs a directory"},
      {"--warmup 2147483647 --repeat 1",
       "--warmup must be a whole number from 0 to 1000000, not '2147483647'"},
      {"--warmup -1", "--warmup must be a whole number from 0 to 1000000"},
      {"--repeat 0", "--repeat must be a whole number from 1 to 1000000, not '0'"},
      {"--repeat 2000000000",
       "--repeat must be a whole number from 1 to 1000000, not '2000000000'"},
      {"--output /nonexistent_dir/x.npy --variant scan-fast --size 10",
       "directory /nonexistent_dir does not exist"},
      {"--output " + std::filesystem::temp_directory_path().string() +
           " --variant scan-fast --size 10",
       "is a directory"},
      {"--format yaml", "format"}};
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Result r = run_cli(c.args);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK(lines(r.out) == 1);
  }
  // A range is said in words, never as a floating-point bound.
  CHECK_THAT(run_cli("--repeat 0").out, !ContainsSubstring("179769"));
  // The limits of the counts are in --help, with the reason.
  const Result help = run_cli("--help");
  CHECK_THAT(help.out, ContainsSubstring("timed runs, 1 to 1000000"));
  CHECK_THAT(help.out, ContainsSubstring("0 to 1000000"));
  CHECK_THAT(help.out, ContainsSubstring("left out, each variant picks its own"));
}

TEST_CASE("values at the edges of their ranges are taken as given", "[cli][checks]") {
  Result r = run_cli("--seed 18446744073709551615 --size 100 --repeat 1 --warmup 0 --format json");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("\"seed\":18446744073709551615,"));
  CHECK_THAT(r.out, ContainsSubstring("\"warmup\":0,\"repeat\":1"));
  r = run_cli("--variant scan-blelloch --segment-length 2^70 --size 10");
  CHECK(r.code == 2);
  r = run_cli("--variant scan-blelloch --segment-length 1e30 --size 10 --repeat 1");
  CHECK(r.code == 2);
  r = run_cli("--variant scan-blelloch --segment-length 2^40 --size 100 --repeat 1 --format json");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("\"segmented\":true"));
  r = run_cli("--local-size 1 --variant topdown --size 100 --repeat 1");
  CHECK(r.code == 0);
}

TEST_CASE("counts are taken in every written form up to their flag's largest, refused past it",
          "[cli][checks][size]") {
  // A zero under a huge exponent is 0 at once, for every flag that takes a count (it once spun
  // the parser for ever): --size 0 runs, the others refuse 0 with their range.
  const std::string limit = "timeout 60";
  Result r = run_cli("--size 0e9999999999999999 --repeat 1 --format json", limit);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("\"n\":0,"));
  r = run_cli("--segment-length 0e9999999999999999 --size 10", limit);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("--segment-length must be a count from 1 to 2^64-1"));
  CHECK(lines(r.out) == 1);
  r = run_cli("--max-chunk 0e9999999999999999 --size 10", limit);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("--max-chunk must be a count of bytes from 1 to 2^62"));
  CHECK(lines(r.out) == 1);
  // The largest segment length, in each form: all alike (the 20 digits were once refused while
  // 1e19 was taken).
  for (const char* l : {"18446744073709551615", "2^64-1", "1e19", "2^63"}) {
    CAPTURE(l);
    r = run_cli(std::string("--variant scan-blelloch --segment-length ") + l +
                    " --size 100 --repeat 1 --format json",
                limit);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, ContainsSubstring("\"segmented\":true"));
  }
  // Past the largest, in each form: one line naming the flag and its range.
  for (const char* l : {"18446744073709551616", "2^64", "2e19", "2^99999999999"}) {
    CAPTURE(l);
    r = run_cli(std::string("--segment-length ") + l + " --size 10", limit);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring("--segment-length must be a count from 1 to 2^64-1"));
    CHECK(lines(r.out) == 1);
    r = run_cli(std::string("--size ") + l, limit);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring("--size must be a count from 0 to 2^64-1"));
    CHECK(lines(r.out) == 1);
  }
  // --max-chunk takes what the max-chunk knob takes: 1 to 2^62 bytes.
  r = run_cli("--max-chunk 2^62 --size 100 --repeat 1", limit);
  CHECK(r.code == 0);
  for (const char* c : {"2^62+1", "2^63", "1e19"}) {
    CAPTURE(c);
    r = run_cli(std::string("--max-chunk ") + c + " --size 100 --repeat 1", limit);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring("--max-chunk must be a count of bytes from 1 to 2^62"));
  }
  // Malformed, in any flag: the same one line (no sign, fraction, negative exponent or space).
  for (const char* bad : {"1e-5", "1.5e0", "+5", "5x", "x5", "0x10", "' 5'"}) {
    CAPTURE(bad);
    for (const char* flag : {"--size", "--segment-length", "--max-chunk"}) {
      r = run_cli(
          std::string(flag) + " " + bad + (std::string(flag) == "--size" ? "" : " --size 10"),
          limit);
      CHECK(r.code == 2);
      CHECK_THAT(r.out, ContainsSubstring(std::string(flag) + " must be a count"));
      CHECK(lines(r.out) == 1);
    }
  }
}

TEST_CASE("a variant asked for by name that cannot run is an error; under all it is skipped",
          "[cli][checks]") {
  // sequential-device refuses more than 2^22 elements: named, that is exit 2, before any data is
  // made.
  Result r = run_cli("--variant sequential-device --size 2^23");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("sequential-device cannot run this: n > 2^22"));
  CHECK(lines(r.out) == 1);
  r = run_cli("--variant fast,sequential-device --size 4194305");
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);  // fast did not run first
  // An argmin scan named: the same rule, exit 2.
  r = run_cli("--variant scan-fast --op argmin --size 10");
  CHECK(r.code == 2);
  // Under a group, the same refusals are rows with their reasons.
  r = run_cli("--variant all --op argmin --size 100 --repeat 1");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("scan-fast              skipped: argmin has no prefix scan"));
}

TEST_CASE("mistakes are found before the first kernel runs", "[cli][checks]") {
  const clreduce::test::TempDir d;
  // butterfly refuses a group of 48 when its launch policy is made: before fast has run.
  Result r = run_cli("--variant fast,butterfly --local-size 48 --size 1000 --repeat 1");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("power-of-two"));
  CHECK(lines(r.out) == 1);
  // A group larger than the device's: said with the device's limit, before anything is built.
  r = run_cli("--local-size 1048576 --size 100");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("--local-size 1048576 is larger than device"));
  CHECK(lines(r.out) == 1);
  // A flag file of the wrong length, found before the reductions run.
  const auto flags = temp_npy(d, "flags", 5);
  r = run_cli("--variant fast,scan-blelloch --size 100 --repeat 1 --segments " + flags.string());
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("5 segment flags for an array of 100 elements"));
  CHECK(lines(r.out) == 1);
  // --input with a --type that is not the file's.
  const auto npy = temp_npy(d, "type", 10);
  r = run_cli("--input " + npy.string() + " --type float");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("holds int32, not --type float"));
}

TEST_CASE("the short flag -v is --verbose; --variant has no short form", "[cli][checks]") {
  Result r = run_cli("-v --size 1000 --repeat 1");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("fast: wg="));  // the launch policy, on stderr
  r = run_cli("-v topdown --size 1000");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("topdown"));
  const Result help = run_cli("--help");
  CHECK_THAT(help.out, ContainsSubstring("-v,--verbose"));
  CHECK_THAT(help.out, ContainsSubstring("  --variant TEXT"));
}

TEST_CASE("a device type as --device picks the first device of that type", "[cli][checks]") {
  // Every device, whatever device the tests run on ($CLREDUCE_TEST_DEVICE would narrow the list).
  const char* test_device = std::getenv("CLREDUCE_TEST_DEVICE");
  const std::string saved = test_device ? test_device : "";
  unsetenv("CLREDUCE_TEST_DEVICE");
  const Result all = run_cli("--list-devices --format json");
  REQUIRE(all.code == 0);
  for (const char* type : {"cpu", "gpu", "accelerator"}) {
    CAPTURE(type);
    std::string upper = type;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const std::size_t at = all.out.find("\"type\":\"" + upper + "\"");
    const Result r = run_cli(std::string("--list-devices --format json --device ") + type);
    if (at == std::string::npos) {
      CHECK(r.code == 2);
      CHECK_THAT(r.out, ContainsSubstring(std::string("no ") + type + " device (devices: "));
    } else {
      CHECK(r.code == 0);
      const std::size_t line = all.out.rfind('\n', at);
      const std::string first =
          all.out.substr(line == std::string::npos ? 0 : line + 1,
                         all.out.find('\n', at) - (line == std::string::npos ? 0 : line + 1) + 1);
      CHECK(r.out == first);
    }
  }
  if (!saved.empty()) setenv("CLREDUCE_TEST_DEVICE", saved.c_str(), 1);
}
