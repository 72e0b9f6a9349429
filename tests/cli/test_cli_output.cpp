// test_cli_output.cpp: what the command prints: CSV beside JSON (the same keys), the variant list
// as JSON, rows that say how to reproduce them and what made them (version, commit, driver), the
// copy and peer rows where they belong (beside the ladder, beside scans), noisy timings flagged
// (the sequential loop's too), columns that line up for every result, no rates with no elements,
// several devices' rows, the OpenMP peer's passive waiting, and nothing on stderr from a cold
// compiler cache.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "clreduce/version.hpp"
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
  const clreduce::test::TempDir d;  // removed at the end, pass or fail
  const fs::path dir = d.dir;
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

TEST_CASE("the copy row copies with a kernel off NVIDIA GPUs, verified, the tail bytes too",
          "[cli][output]") {
  // 10003 int32: 2500 words of 16 bytes and 12 bytes past them; 3 doubles: a word and 8 bytes.
  for (const char* args : {"--size 10003", "--size 3 --type double", "--size 2^20 --type float"}) {
    CAPTURE(args);
    const Result r = run_cli(std::string(args) + " --measure-copy --repeat 2 --format json");
    REQUIRE(r.code == 0);
    const std::string row = row_of(r.out, "copy");
    CHECK_THAT(row, ContainsSubstring("\"verified\":true"));
    if (!(clreduce::test::device_context().info().is_gpu &&
          clreduce::test::device_context().info().is_nvidia))
      CHECK_THAT(row, ContainsSubstring("\"policy\":\"copy kernel, "));
  }
}

TEST_CASE("beside the ladder, the peer and the copy are rows of their own, outside its speedups",
          "[cli][output]") {
  Result r = run_cli("--variant ladder --peers --measure-copy --size 20000 --repeat 2");
  CHECK(r.code == 0);
  // Device line, header, omp, copy, kernels 1-7; and the noisy footnote ("~ noisy: ...") where a
  // timing varied by 4x, as one may on a loaded machine.
  std::size_t footnotes = 0;
  for (std::size_t at = 0; (at = r.out.find("\n~ ", at)) != std::string::npos; ++at) ++footnotes;
  CHECK(lines(r.out) - footnotes == 11);
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
  r.n = 1000;
  r.verified = true;
  r.kernel_ms = 1.0;
  r.kernel_ms_min = 0.5;
  r.kernel_ms_max = 9.0;
  r.seq_ms = 2.0;
  r.speedup = 2.0;
  r.noisy = true;
  r.ratios.emplace_back("vs_omp", std::numeric_limits<double>::quiet_NaN());
  const std::string row = clreduce::table_row(r, true);
  CHECK_THAT(row, ContainsSubstring("1.0000~"));
  // Neither ratio is quoted: the speedup (seq ms / kernel ms) and vs omp.
  CHECK_THAT(row, ContainsSubstring("    2.0000      noisy        0    noisy\n"));
  const std::string json = clreduce::to_json(r);
  CHECK_THAT(json, ContainsSubstring("\"noisy\":true"));
  CHECK_THAT(json, ContainsSubstring("\"speedup\":null"));
  CHECK_THAT(json, ContainsSubstring("\"vs_omp\":null"));
  r.noisy = false;
  r.ratios = {{"vs_omp", 2.5}};
  CHECK_THAT(clreduce::table_row(r, true), ContainsSubstring("1.0000 "));
  CHECK_THAT(clreduce::table_row(r, true),
             ContainsSubstring("    2.0000       2.00        0     2.50\n"));
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
  const clreduce::test::TempDir d;  // removed at the end, pass or fail
  const fs::path kernels = d.dir / "cl";
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, kernels, fs::copy_options::recursive);
  {
    std::ifstream in(kernels / "reduce_sequential_device.cl");
    std::string s((std::istreambuf_iterator<char>(in)), {});
    const std::string at = "  out[0] = a;";
    REQUIRE(s.find(at) != std::string::npos);
    s.replace(s.find(at), at.size(), "  int truncated = 1.5;\n  out[0] = a;");
    std::ofstream(kernels / "reduce_sequential_device.cl", std::ios::trunc) << s;
  }
  const fs::path cache = d.dir / "pocl_cache";
  fs::create_directories(cache);
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
}

namespace {

// The text of a JSON string value `key` in a flat line ("" when absent; escapes kept).
std::string json_text(const std::string& line, const std::string& key) {
  const std::string at = "\"" + key + "\":\"";
  const std::size_t from = line.find(at);
  if (from == std::string::npos) return "";
  std::size_t end = from + at.size();
  while (end < line.size() && line[end] != '"') end += line[end] == '\\' ? 2 : 1;
  return line.substr(from + at.size(), end - from - at.size());
}

// The raw value of key `key` in a flat line (a number, true, false, null; "" when absent).
std::string json_raw(const std::string& line, const std::string& key) {
  const std::string at = "\"" + key + "\":";
  const std::size_t from = line.find(at);
  if (from == std::string::npos) return "";
  const std::size_t start = from + at.size();
  return line.substr(start, line.find_first_of(",}", start) - start);
}

// The device under test, twice (--device D,D: two contexts on it).
std::string two_devices() {
  const std::string one = clreduce::test::test_device_spec();
  return "--device '" + one + "," + one + "'";
}

// One CSV line's fields (RFC 4180 quoting).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> f(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        f.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        f.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      f.emplace_back();
    } else {
      f.back() += c;
    }
  }
  return f;
}

// A table's rows of results: the lines after the header that start with a variant's name and are
// not skipped (the device line, layout lines, parts, notes and the footnote are not).
std::vector<std::string> result_rows(const std::string& out, std::string* header) {
  std::vector<std::string> rows;
  bool after = false;
  for (const std::string& line : split_lines(out)) {
    if (line.rfind("variant ", 0) == 0) {
      *header = line;
      after = true;
    } else if (after && !line.empty() && line[0] != ' ' && line[0] != '~' &&
               line.find(" skipped: ") == std::string::npos) {
      rows.push_back(line);
    }
  }
  return rows;
}

// The cell of a right-aligned column `label` (width characters ending where the label ends).
std::string table_cell(const std::string& header, const std::string& row, const std::string& label,
                       std::size_t width) {
  const std::size_t end = header.find(label) + label.size();
  if (end > row.size()) return "";
  std::string c = row.substr(end - width, width);
  const std::size_t first = c.find_first_not_of(' ');
  return first == std::string::npos ? "" : c.substr(first, c.find_last_not_of(' ') - first + 1);
}

}  // namespace

TEST_CASE("the table's columns line up for every result: the widest doubles with their index",
          "[cli][output]") {
  const clreduce::test::TempDir d;  // removed at the end, pass or fail
  const fs::path dir = d.dir;
  // 1000 doubles with the extreme at index 999: "-1.7976931348623157e+308 @999" (29 characters)
  // and "-2.2250738585072014e-308 @999".
  for (const auto& [name, fill, extreme] :
       {std::tuple<const char*, double, double>{"lowest", 0.5, -1.7976931348623157e308},
        {"tiny", -1.0, -2.2250738585072014e-308}}) {
    clreduce::HostArray a;
    a.type = clreduce::DType::kDouble;
    a.n = 1000;
    std::vector<double> v(a.n, fill);
    v.back() = extreme;
    a.bytes.assign(a.n * 8, 0);
    std::memcpy(a.bytes.data(), v.data(), a.n * 8);
    clreduce::write_npy((dir / (std::string(name) + ".npy")).string(), a);
  }
  std::vector<std::string> runs = {"--input " + (dir / "lowest.npy").string() + " --op argmin",
                                   "--input " + (dir / "tiny.npy").string() + " --op argmax",
                                   "--size 5000 --op argmax --type int64",
                                   "--size 5000 --op argmin --type uint64",
                                   "--size 5000 --op sum --type uint64",
                                   "--size 5000 --op prod --type double",
                                   "--size 5000 --op min --type float"};
  for (const std::string& args : runs) {
    CAPTURE(args);
    const Result r = run_cli(args + " --variant fast,topdown --peers --measure-copy --repeat 1");
    CHECK(r.code == 0);
    std::string header;
    const std::vector<std::string> rows = result_rows(r.out, &header);
    CHECK(rows.size() == 4);  // omp, copy, fast, topdown
    for (const std::string& row : rows) {
      CAPTURE(header, row);
      CHECK(row.size() == header.size());
      CHECK(row.substr(header.find("verified"), 4) == "yes ");
    }
  }
  const Result r = run_cli("--input " + (dir / "lowest.npy").string() +
                           " --op argmin --repeat 1 --variant fast");
  CHECK_THAT(r.out, ContainsSubstring("-1.7976931348623157e+308 @999 yes "));
}

TEST_CASE("n = 0: no rate or ratio: '-' in the table, null in JSON, empty in CSV",
          "[cli][output]") {
  const std::string args = "--size 0 --variant all --peers --repeat 2";
  const Result t = run_cli(args);
  CHECK(t.code == 0);
  std::string header;
  const std::vector<std::string> rows = result_rows(t.out, &header);
  CHECK(rows.size() > 10);
  for (const std::string& row : rows) {
    CAPTURE(row);
    CHECK(table_cell(header, row, "GB/s", 9) == "-");
    CHECK(table_cell(header, row, "speedup", 9) == "-");
    CHECK(table_cell(header, row, "vs omp", 9) == "-");
  }
  const Result j = run_cli(args + " --format json");
  CHECK(j.code == 0);
  for (const std::string& line : split_lines(j.out)) {
    CAPTURE(line);
    if (line.find("\"skipped\":true") != std::string::npos) continue;
    CHECK(json_raw(line, "gbps") == "null");
    CHECK(json_raw(line, "speedup") == "null");
    const std::string vs = json_raw(line, "vs_omp");
    CHECK((vs.empty() || vs == "null"));
  }
  const Result c = run_cli(args + " --format csv");
  CHECK(c.code == 0);
  const std::vector<std::string> lines = split_lines(c.out);
  REQUIRE(lines.size() > 1);
  const std::vector<std::string> cols = csv_fields(lines[0]);
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  for (std::size_t k = 1; k < lines.size(); ++k) {
    const std::vector<std::string> f = csv_fields(lines[k]);
    REQUIRE(f.size() == cols.size());
    CHECK(f[col("gbps")].empty());
    CHECK(f[col("speedup")].empty());
    CHECK(f[col("vs_omp")].empty());
  }
  // The ladder's table too.
  const Result l = run_cli("--size 0 --variant ladder --repeat 1");
  CHECK(l.code == 0);
  std::string ladder_header, kernel1;
  for (const std::string& line : split_lines(l.out)) {
    if (line.rfind(" #", 0) == 0) ladder_header = line;
    if (line.find("interleaved-divergent") != std::string::npos) kernel1 = line;
  }
  CHECK(table_cell(ladder_header, kernel1, "GB/s", 9) == "-");
}

TEST_CASE("every row says which clreduce, commit, driver and platform made it", "[cli][output]") {
  Result r = run_cli("--list-devices --format json");
  REQUIRE(r.code == 0);
  const std::string device_line = split_lines(r.out).front();
  const std::string driver = json_text(device_line, "driver");
  const std::string platform_version = json_text(device_line, "platform_version");
  CHECK(!driver.empty());
  CHECK_THAT(platform_version, StartsWith("OpenCL "));
  r = run_cli("--version");
  REQUIRE(r.code == 0);
  const std::size_t at = r.out.find("\ncommit: ");
  REQUIRE(at != std::string::npos);
  const std::string commit = r.out.substr(at + 9, r.out.find('\n', at + 1) - at - 9);
  CAPTURE(commit);
  // 40 hex digits, "-dirty" when built with changes, or "unknown" outside git.
  bool hex = commit.size() >= 40;
  for (std::size_t i = 0; hex && i < 40; ++i)
    hex = std::isxdigit(static_cast<unsigned char>(commit[i]));
  CHECK((commit == "unknown" || (hex && (commit.size() == 40 || commit.substr(40) == "-dirty"))));
  if (hex) {  // a commit of the sources' own repository
    const std::string repo = fs::path(CLREDUCE_SOURCE_KERNEL_DIR).parent_path().string();
    CHECK(std::system(("git -C '" + repo + "' cat-file -e " + commit.substr(0, 40) +
                       "^{commit} 2>/dev/null")
                          .c_str()) == 0);
  }
  for (const std::string& args : std::vector<std::string>{
           "--variant all --size 3000 --repeat 1 --peers --measure-copy",
           "--variant ladder --size 3000 --repeat 1 --peers",
           "--variant all-scan --size 0 --repeat 1",
           two_devices() + " --variant fast,scan-fast --size 3000 --repeat 1"}) {
    CAPTURE(args);
    const Result j = run_cli(std::string(args) + " --format json");
    CHECK(j.code == 0);
    CHECK(lines(j.out) > 0);
    for (const std::string& line : split_lines(j.out)) {
      CAPTURE(line);
      CHECK(json_text(line, "clreduce_version") == CLREDUCE_VERSION);
      CHECK(json_text(line, "commit") == commit);
      CHECK(json_text(line, "driver") == driver);
      CHECK(json_text(line, "platform_version") == platform_version);
    }
    const Result c = run_cli(std::string(args) + " --format csv");
    CHECK(c.code == 0);
    const std::vector<std::string> rows = split_lines(c.out);
    REQUIRE(rows.size() == lines(j.out) + 1);
    const std::vector<std::string> cols = csv_fields(rows[0]);
    for (std::size_t k = 1; k < rows.size(); ++k) {
      const std::vector<std::string> f = csv_fields(rows[k]);
      REQUIRE(f.size() == cols.size());
      for (const auto& [key, want] :
           {std::pair<std::string, std::string>{"clreduce_version", CLREDUCE_VERSION},
            {"commit", commit},
            {"driver", driver},
            {"platform_version", platform_version}}) {
        const auto it = std::find(cols.begin(), cols.end(), key);
        REQUIRE(it != cols.end());
        CHECK(f[static_cast<std::size_t>(it - cols.begin())] == want);
      }
    }
  }
}

TEST_CASE("the sequential loop is timed over the repetitions, its spread shown and judged",
          "[cli][output]") {
  for (const char* repeat : {"1", "4"}) {
    CAPTURE(repeat);
    const Result j = run_cli(std::string("--size 100000 --peers --measure-copy --variant "
                                         "fast,scan-fast --format json --repeat ") +
                             repeat);
    CHECK(j.code == 0);
    for (const std::string& line : split_lines(j.out)) {
      CAPTURE(line);
      if (line.find("\"kind\":\"ceiling\"") != std::string::npos) {
        CHECK(json_raw(line, "seq_noisy").empty());  // the copy has no sequential loop
        continue;
      }
      CHECK(json_raw(line, "seq_runs") == repeat);
      const double lo = std::stod(json_raw(line, "seq_ms_min"));
      const double mid = std::stod(json_raw(line, "seq_ms"));
      const double hi = std::stod(json_raw(line, "seq_ms_max"));
      CHECK(lo > 0);
      CHECK(lo <= mid);
      CHECK(mid <= hi);
      const std::string noisy = json_raw(line, "seq_noisy");
      CHECK((noisy == "true" || noisy == "false"));
      if (std::string(repeat) == "1") CHECK(noisy == "false");  // one run: no spread
      if (noisy == "true" || json_raw(line, "noisy") == "true")
        CHECK(json_raw(line, "speedup") == "null");
      else
        CHECK(std::stod(json_raw(line, "speedup")) > 0);
    }
  }
}

TEST_CASE(
    "several devices: the combined kernel ms is each run's slowest part, and CSV holds the "
    "parts",
    "[cli][output]") {
  const std::string args = two_devices() + " --variant fast,scan-fast --size 200000 --repeat 3";
  const Result t = run_cli(args);
  CHECK(t.code == 0);
  std::size_t notes = 0;
  for (const std::string& line : split_lines(t.out))
    if (line.find("(kernel ms above: ") != std::string::npos) {
      CHECK_THAT(line, StartsWith("  (kernel ms above: each run's slowest part, median over the "
                                  "runs; combine "));
      ++notes;
    }
  CHECK(notes == 2);
  const Result j = run_cli(args + " --format json");
  CHECK(j.code == 0);
  for (const std::string& line : split_lines(j.out)) {
    CAPTURE(line);
    const double whole = std::stod(json_raw(line, "kernel_ms"));
    std::size_t parts = 0;
    for (std::size_t at = line.find("\"parts\":[");
         (at = line.find("\"kernel_ms\":", at + 1)) != std::string::npos; ++parts)
      CHECK(whole >= std::stod(line.substr(at + 12)));
    // fast: a share a device; scan-fast: split, the last device also has the first piece.
    CHECK(parts == (line.find("\"variant\":\"scan-fast\"") != std::string::npos ? 3u : 2u));
    CHECK(json_raw(line, "devices") == "2");
  }
  const Result c = run_cli(args + " --format csv");
  CHECK(c.code == 0);
  const std::vector<std::string> rows = split_lines(c.out);
  REQUIRE(rows.size() == 3);
  const std::vector<std::string> cols = csv_fields(rows[0]);
  const auto parts = std::find(cols.begin(), cols.end(), "parts");
  REQUIRE(parts != cols.end());
  CHECK_THAT(csv_fields(rows[1])[static_cast<std::size_t>(parts - cols.begin())],
             StartsWith("[{\"device\":"));
}
