// test_cli_output.cpp: what the command prints: CSV beside JSON (the same keys), the variant list
// as JSON, rows that say how to reproduce them, the copy and peer rows where they belong (beside
// the ladder, beside scans), noisy timings flagged, the OpenMP peer's passive waiting, and nothing
// on stderr from a cold compiler cache.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <string>

#include "csv.hpp"
#include "io/npy.hpp"
#include "io/report.hpp"
#include "reduce/variant.hpp"
#include "scan/scan_variant.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using clreduce::test::run_cli;
using Result = clreduce::test::CliResult;
namespace fs = std::filesystem;

namespace {

std::size_t lines(const std::string& s) { return clreduce::test::count_lines(s); }

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> v;
  for (std::size_t pos = 0, end; (end = s.find('\n', pos)) != std::string::npos; pos = end + 1)
    v.push_back(s.substr(pos, end - pos));
  return v;
}

// The keys of clreduce's flat JSON lines.
std::set<std::string> json_keys(const std::string& out) {
  std::set<std::string> keys;
  for (const std::string& line : split_lines(out)) {
    bool in_string = false, key = true;
    std::string cur;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (in_string) {
        if (c == '\\') {
          cur += line[++i];
          continue;
        }
        if (c == '"') {
          in_string = false;
          if (key) keys.insert(cur);
          continue;
        }
        cur += c;
      } else if (c == '"') {
        in_string = true;
        cur.clear();
      } else if (c == ':') {
        key = false;
      } else if (c == ',' || c == '{') {
        key = true;
      }
    }
  }
  return keys;
}

// The line of `out` whose JSON variant is `name` (and, when given, whose mode is `mode`).
std::string row_of(const std::string& out, const std::string& name, const std::string& mode = "") {
  for (const std::string& line : split_lines(out))
    if (line.find("{\"variant\":\"" + name + "\"") == 0 &&
        (mode.empty() || line.find("\"mode\":\"" + mode + "\"") != std::string::npos))
      return line;
  return "";
}

fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() /
                     ("clreduce_" + tag + "_" + std::to_string(std::random_device{}()));
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("CSV output: a header, one line per row, a column for every JSON key", "[cli][output]") {
  const std::vector<std::string> runs = {
      "--variant all --op argmin --type float --size 3000 --repeat 2 --peers --measure-copy",
      "--variant all --op sum --size 3000 --repeat 2 --peers --local-size 64",
      "--variant scan-blelloch,scan-lookback --size 3000 --repeat 1 --exclusive --segment-length "
      "100",
      "--variant ladder --size 3000 --repeat 1 --peers --measure-copy",
      "--variant all-scan --op min --size 0 --repeat 1"};
  const auto& columns = clreduce::run_csv_columns();
  for (const std::string& args : runs) {
    CAPTURE(args);
    const Result json = run_cli(args + " --format json");
    const Result csv = run_cli(args + " --format csv");
    CHECK(json.code == csv.code);
    for (const std::string& key : json_keys(json.out)) {
      CAPTURE(key);
      CHECK(std::find(columns.begin(), columns.end(), key) != columns.end());
    }
    const auto rows = split_lines(csv.out);
    REQUIRE(!rows.empty());
    CHECK(rows[0] + "\n" == clreduce::csv_header(columns));
    CHECK(rows.size() == lines(json.out) + 1);
  }
  // A field with a comma or a quote is quoted; null is empty.
  const std::string row =
      clreduce::csv_row("{\"variant\":\"a,b\",\"policy\":\"say \\\"hi\\\"\",\"vs_omp\":null}",
                        {"variant", "policy", "vs_omp", "kernel"});
  CHECK(row == "\"a,b\",\"say \"\"hi\"\"\",,\n");
  CHECK_THROWS(clreduce::csv_row("{\"nosuchkey\":1}", columns));
  // Lists too.
  Result r = run_cli("--list-devices --format csv");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, StartsWith("index,type,name,platform,"));
  r = run_cli("--list-variants --format csv");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, StartsWith("name,mode,kernel,description,path\n"));
}

TEST_CASE("the variant list as JSON: one object per variant", "[cli][output]") {
  const Result r = run_cli("--list-variants --format json");
  CHECK(r.code == 0);
  CHECK(lines(r.out) == clreduce::reduce_variants().size() + clreduce::scan_variants().size());
  for (const auto& v : clreduce::reduce_variants()) {
    const std::string line = r.out.substr(r.out.find("{\"name\":\"" + v->name() + "\""));
    CHECK_THAT(line.substr(0, line.find('\n')), ContainsSubstring("\"mode\":\"reduce\""));
  }
  CHECK_THAT(r.out,
             ContainsSubstring("{\"name\":\"scan-fast\",\"mode\":\"scan\",\"kernel\":null,"));
  CHECK_THAT(r.out, ContainsSubstring(
                        "{\"name\":\"interleaved-divergent\",\"mode\":\"reduce\",\"kernel\":1,"));
  CHECK_THAT(r.out, ContainsSubstring("\"path\":\""));  // with the device: the path taken there
}

TEST_CASE("JSON rows say how to reproduce them: seed, input, warmup, repeat", "[cli][output]") {
  Result r = run_cli("--size 1000 --seed 42 --warmup 2 --repeat 3 --format json");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("\"seed\":42,\"input\":null,\"warmup\":2,\"repeat\":3"));
  // Standard input as --input -.
  const fs::path dir = temp_dir("stdin");
  clreduce::HostArray a;
  a.type = clreduce::DType::kInt64;
  a.n = 3;
  a.bytes.assign(24, 0);
  a.bytes[0] = 5;
  a.bytes[8] = 6;
  a.bytes[16] = 7;
  clreduce::write_npy((dir / "a.npy").string(), a);
  r = run_cli("--input - --format json --repeat 1 < " + (dir / "a.npy").string());
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("\"type\":\"int64\""));
  CHECK_THAT(r.out, ContainsSubstring("\"seed\":null,\"input\":\"-\""));
  CHECK_THAT(r.out, ContainsSubstring("\"result\":18,"));
  std::ofstream(dir / "bad.npy") << "not numpy";
  r = run_cli("--input - < " + (dir / "bad.npy").string());
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("standard input: not a .npy file"));
  CHECK(lines(r.out) == 1);
  fs::remove_all(dir);
}

TEST_CASE("the copy row has no sequential time or speedup", "[cli][output]") {
  Result r = run_cli("--size 10000 --measure-copy --repeat 2");
  CHECK(r.code == 0);
  const std::size_t at = r.out.find("\ncopy ");
  REQUIRE(at != std::string::npos);
  const std::string copy = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  CHECK_THAT(copy, ContainsSubstring(" - "));
  r = run_cli("--size 10000 --measure-copy --repeat 2 --format json");
  CHECK_THAT(row_of(r.out, "copy"), ContainsSubstring("\"seq_ms\":null,\"speedup\":null"));
}

TEST_CASE("beside the ladder, the peer and the copy are rows of their own, outside its speedups",
          "[cli][output]") {
  Result r = run_cli("--variant ladder --peers --measure-copy --size 20000 --repeat 2");
  CHECK(r.code == 0);
  CHECK(lines(r.out) == 11);  // device line, header, omp, copy, kernels 1-7
  CHECK_THAT(r.out, ContainsSubstring("\n -  omp "));
  CHECK_THAT(r.out, ContainsSubstring("\n -  copy "));
  const std::size_t k1 = r.out.find("\n 1  interleaved-divergent");
  REQUIRE(k1 != std::string::npos);
  CHECK_THAT(r.out.substr(k1, r.out.find('\n', k1 + 1) - k1), ContainsSubstring("1.00x"));
  r = run_cli("--variant ladder --peers --measure-copy --size 20000 --repeat 1 --format json");
  CHECK(r.code == 0);
  CHECK_THAT(
      row_of(r.out, "omp"),
      ContainsSubstring("\"kernel\":null,\"step_speedup\":null,\"cumulative_speedup\":null}"));
  CHECK_THAT(row_of(r.out, "copy"), ContainsSubstring("\"kernel\":null"));
  CHECK_THAT(row_of(r.out, "interleaved-divergent"),
             ContainsSubstring("\"step_speedup\":null,\"cumulative_speedup\":1}"));
  CHECK_THAT(row_of(r.out, "interleaved-divergent"), ContainsSubstring("\"vs_omp\":"));
}

TEST_CASE("peers beside scans: an omp scan row where the peer has the scan, else the reason",
          "[cli][output]") {
  struct Case {
    const char* args;
    bool runs;
  };
  for (const Case& c : {Case{"--type int32", true}, Case{"--type int32 --acc int32", true},
                        Case{"--type float", true}, Case{"--type int32 --exclusive", false},
                        Case{"--type int32 --segment-length 1000", false},
                        Case{"--type int64", false}, Case{"--op max --type int32", false}}) {
    CAPTURE(c.args);
    const Result r = run_cli(
        std::string("--variant scan-blelloch --size 100003 --repeat 2 --peers --format json ") +
        c.args);
    CHECK(r.code == 0);
    CHECK(lines(r.out) == 2);
    const std::string omp = row_of(r.out, "omp", "scan");
    const std::string scan = row_of(r.out, "scan-blelloch");
    CHECK_THAT(omp, ContainsSubstring("\"kind\":\"peer\""));
    if (c.runs) {
      CHECK_THAT(omp, ContainsSubstring("\"verified\":true"));
      CHECK_THAT(omp, ContainsSubstring("\"wrong_count\":0"));
      CHECK_THAT(omp, ContainsSubstring("openmp two-pass threads="));
      CHECK_THAT(scan, ContainsSubstring("\"vs_omp\":"));
    } else {
      CHECK_THAT(omp, ContainsSubstring("\"skipped\":true,\"reason\":\"the OpenMP scan peer has "
                                        "inclusive, unsegmented sums of int32 and float only\""));
      CHECK_THAT(scan, !ContainsSubstring("\"vs_omp\":"));
    }
  }
  // In the table: the omp row, and the ratio column.
  const Result t = run_cli("--variant all --size 100003 --repeat 1 --peers");
  CHECK(t.code == 0);
  CHECK_THAT(t.out, ContainsSubstring("vs omp"));
  std::size_t omp_rows = 0;
  for (const std::string& line : split_lines(t.out)) omp_rows += line.rfind("omp ", 0) == 0;
  CHECK(omp_rows == 2);  // the reduction peer and the scan peer
}

TEST_CASE("a noisy timing is marked and its ratios are not quoted", "[cli][output]") {
  clreduce::RunRecord r;
  r.variant = "fast";
  r.verified = true;
  r.kernel_ms = 1.0;
  r.kernel_ms_min = 0.5;
  r.kernel_ms_max = 9.0;
  r.noisy = true;
  r.ratios.emplace_back("vs_omp", std::numeric_limits<double>::quiet_NaN());
  const std::string row = clreduce::table_row(r, true);
  CHECK_THAT(row, ContainsSubstring("1.0000~"));
  CHECK_THAT(row, ContainsSubstring("   noisy\n"));
  const std::string json = clreduce::to_json(r);
  CHECK_THAT(json, ContainsSubstring("\"noisy\":true"));
  CHECK_THAT(json, ContainsSubstring("\"vs_omp\":null"));
  r.noisy = false;
  r.ratios = {{"vs_omp", 2.5}};
  CHECK_THAT(clreduce::table_row(r, true), ContainsSubstring("1.0000 "));
  CHECK_THAT(clreduce::table_row(r, true), ContainsSubstring("    2.50\n"));
  // Every run's JSON says whether it is noisy.
  const Result out = run_cli("--size 1000 --repeat 3 --peers --format json");
  CHECK(out.code == 0);
  for (const std::string& line : split_lines(out.out))
    CHECK((line.find("\"noisy\":false") != std::string::npos ||
           line.find("\"noisy\":true") != std::string::npos));
}

TEST_CASE("the OpenMP peer waits passively unless the user chose a policy", "[cli][output]") {
  Result r = run_cli("--size 100000 --repeat 1 --peers --format json", "OMP_DISPLAY_ENV=verbose");
  CHECK(r.code == 0);
  const std::size_t at = r.out.rfind("GOMP_SPINCOUNT = '");
  if (at == std::string::npos) SKIP("not libgomp: no GOMP_SPINCOUNT to read");
  CHECK_THAT(r.out.substr(at), StartsWith("GOMP_SPINCOUNT = '0'"));  // passive: no spinning
  r = run_cli("--size 100000 --repeat 1 --peers --format json",
              "OMP_DISPLAY_ENV=verbose OMP_WAIT_POLICY=active");
  CHECK(r.code == 0);
  CHECK_THAT(r.out.substr(r.out.rfind("OMP_WAIT_POLICY = '")),
             StartsWith("OMP_WAIT_POLICY = 'ACTIVE'"));
}

TEST_CASE("a cold compiler cache prints nothing but the table; --verbose shows the build log",
          "[cli][output]") {
  // A kernel that compiles with a warning, built with PoCL's cache empty: its compiler then
  // writes "1 warning generated." to stderr by itself.
  const fs::path kernels = temp_dir("warnkernels");
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, kernels, fs::copy_options::recursive);
  {
    std::ifstream in(kernels / "reduce_sequential_device.cl");
    std::string s((std::istreambuf_iterator<char>(in)), {});
    const std::string at = "  out[0] = a;";
    REQUIRE(s.find(at) != std::string::npos);
    s.replace(s.find(at), at.size(), "  int truncated = 1.5;\n  out[0] = a;");
    std::ofstream(kernels / "reduce_sequential_device.cl", std::ios::trunc) << s;
  }
  const fs::path cache = temp_dir("pocl_cache");
  const std::string env = "POCL_CACHE_DIR=" + cache.string();
  const std::string args =
      "--kernel-dir " + kernels.string() + " --variant sequential-device --size 1000 --repeat 1";
  Result r = run_cli(args, env);
  CHECK(r.code == 0);
  CHECK(lines(r.out) == 3);  // device line, header, one row
  CHECK_THAT(r.out, !ContainsSubstring("generated"));
  fs::remove_all(cache);
  fs::create_directories(cache);
  r = run_cli(args + " --verbose", env);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, !ContainsSubstring("generated."));
  if (r.out.find("build log of reduce_sequential_device.cl") == std::string::npos)
    WARN("this compiler leaves no warning in the build log");
  fs::remove_all(cache);
  fs::remove_all(kernels);
}
