// test_shares.cpp: one array over several devices in one process (the test device listed twice:
// two contexts, two queues, two threads): shares are cut as asked, the combine code folds
// results and carries in share order, and every op, type and scan mode gives the one-device
// answer: integers and arg indices exactly, scan outputs element by element (--output).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "clreduce/error.hpp"
#include "io/npy.hpp"
#include "run/chunks.hpp"
#include "run/fold.hpp"
#include "run/shares.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace clreduce;
namespace fs = std::filesystem;

namespace {

using clreduce::test::run_cli;

const std::string kTimeout = "timeout 300";

// The device under test, twice.
std::string two_devices() {
  const char* d = std::getenv("CLREDUCE_TEST_DEVICE");
  const std::string one = d && *d ? d : "0";
  return "--device '" + one + "," + one + "'";
}

std::string field(const std::string& row, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const std::size_t at = row.find(k);
  if (at == std::string::npos) return "";
  std::size_t b = at + k.size();
  if (row[b] == '"') return row.substr(b + 1, row.find('"', b + 1) - b - 1);
  std::size_t e = b;
  while (e < row.size() && row[e] != ',' && row[e] != '}') ++e;
  return row.substr(b, e - b);
}

std::string first_row(const std::string& out) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("{\"variant\"", 0) == 0) return line;
  return "";
}

// The first row of a run that must exit 0, its verdict checked.
std::string verified_row(const std::string& args) {
  const auto r = run_cli(args, kTimeout);
  REQUIRE(r.code == 0);
  const std::string row = first_row(r.out);
  CHECK(field(row, "verified") == "true");
  return row;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

using clreduce::test::TempDir;

Value int_value(std::int64_t x) {
  Value v;
  v.type = DType::kInt64;
  v.i = x;
  return v;
}

}  // namespace

TEST_CASE("shares: proportional, on the grain, summing to n; bad weights refused", "[shares]") {
  CHECK(split_shares(1000, {1, 1}, 16) == std::vector<std::size_t>{496, 504});
  CHECK(split_shares(1000, {1, 3}, 1) == std::vector<std::size_t>{250, 750});
  CHECK(split_shares(1000, {0, 1}, 16) == std::vector<std::size_t>{0, 1000});
  CHECK(split_shares(1000, {1, 0}, 16) == std::vector<std::size_t>{1000, 0});
  CHECK(split_shares(10, {1, 1, 1}, 16) == std::vector<std::size_t>{0, 0, 10});
  CHECK(split_shares(0, {1, 2}, 16) == std::vector<std::size_t>{0, 0});
  for (std::size_t n : {1u, 17u, 4097u, 1000003u}) {
    const auto s = split_shares(n, {0.3, 1.7, 1.0}, 16);
    std::size_t sum = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (i + 1 < s.size()) CHECK(s[i] % 16 == 0);
      sum += s[i];
    }
    CHECK(sum == n);
  }
  CHECK_THROWS_AS(split_shares(10, {0, 0}), Error);
  CHECK_THROWS_AS(split_shares(10, {-1, 2}), Error);
}

TEST_CASE("share grain: shares start on every device's alignment at every element size",
          "[shares]") {
  CHECK(share_grain({}, {4}) == 16);
  CHECK(share_grain({128}, {4}) == 32);         // 32 int32 = 128 bytes
  CHECK(share_grain({128}, {4, 8}) == 32);      // int32 -> int64: 128 and 256 bytes
  CHECK(share_grain({128}, {8}) == 16);         // 16 doubles = 128 bytes
  CHECK(share_grain({128}, {4, 1, 8}) == 128);  // segment flags: a byte each
  CHECK(share_grain({128, 4096}, {4}) == 1024);
  CHECK(share_grain({128}, {0, 4}) == 32);  // no array of that part
  for (const std::size_t a : {128u, 1024u, 4096u})
    for (const std::size_t e : {1u, 2u, 4u, 8u}) {
      const std::size_t g = share_grain({a}, {e});
      CHECK(g * e % a == 0);
      CHECK((g <= 16 || g / 2 * e % a != 0));  // the fewest, at least 16
    }
  CHECK_THROWS_AS(share_grain({96}, {4}), Error);
  CHECK_THROWS_AS(share_grain({0}, {4}), Error);
  // Three equal shares of 1000003 int32: each starts on 128 bytes (the grain of 16 left the
  // second at 333328 elements, 1333312 bytes, a copy where it could be in place).
  const auto s = split_shares(1000003, {1, 1, 1}, share_grain({128}, {4}));
  CHECK(s[0] * 4 % 128 == 0);
  CHECK((s[0] + s[1]) * 4 % 128 == 0);
  CHECK(s[0] + s[1] + s[2] == 1000003);
}

TEST_CASE("carries across pieces: the flag operator's exclusive scan equals the sequential one",
          "[shares]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    // A segmented running sum over n values, cut into pieces at random places (empty pieces too).
    const std::size_t n = 1 + rng() % 60;
    std::vector<std::int64_t> x(n);
    std::vector<std::uint8_t> f(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = static_cast<std::int64_t>(rng() % 100) - 50;
      f[i] = rng() % 5 == 0;
    }
    std::vector<std::size_t> cuts{0, n};
    for (int c = 0; c < 4; ++c) cuts.push_back(rng() % (n + 1));
    std::sort(cuts.begin(), cuts.end());
    std::vector<ScanCarry> pieces;
    for (std::size_t p = 0; p + 1 < cuts.size(); ++p) {
      ScanCarry c;
      std::int64_t run = 0;
      for (std::size_t i = cuts[p]; i < cuts[p + 1]; ++i) {
        if (f[i]) {
          run = 0;
          c.reset = true;
        }
        run += x[i];
        c.empty = false;
      }
      c.value = int_value(run);
      pieces.push_back(c);
    }
    const std::vector<ScanCarry> into = exclusive_carries(Op::kSum, pieces);
    for (std::size_t p = 0; p + 1 < cuts.size(); ++p) {
      // What really reaches piece p: the running value before it, unless nothing came before.
      std::int64_t run = 0;
      bool any = false;
      for (std::size_t i = 0; i < cuts[p]; ++i) {
        if (f[i]) run = 0;
        run += x[i];
        any = true;
      }
      CAPTURE(trial, p);
      REQUIRE(into[p].empty == !any);
      if (any) CHECK(into[p].value.i == run);
    }
  }
}

TEST_CASE("the host carry pass stops at the first segment start", "[shares]") {
  std::vector<std::int64_t> y{1, 2, 3, 4, 5};
  std::vector<std::uint8_t> flags{0, 0, 1, 0, 0};
  apply_carry_host(Op::kSum, DType::kInt64, reinterpret_cast<unsigned char*>(y.data()), 5,
                   flags.data(), int_value(10));
  CHECK(y == std::vector<std::int64_t>{11, 12, 3, 4, 5});
  std::vector<float> m{1.0f, -3.0f, 2.0f};
  Value c;
  c.type = DType::kFloat;
  c.f = 0.5;
  apply_carry_host(Op::kMax, DType::kFloat, reinterpret_cast<unsigned char*>(m.data()), 3, nullptr,
                   c);
  CHECK(m == std::vector<float>{1.0f, 0.5f, 2.0f});
  CHECK(first_flag(flags.data(), 5) == 2);
  CHECK(first_flag(nullptr, 5) == 5);
}

TEST_CASE("two devices give the one-device answer for every op and type", "[shares][cli]") {
  const char* types[] = {"int32", "uint32", "int64", "uint64", "float", "double"};
  const char* ops[] = {"sum", "prod", "min", "max", "argmin", "argmax"};
  for (const char* t : types) {
    for (const char* op : ops) {
      const std::string args = std::string("--variant fast --format json --repeat 1 --warmup 0 ") +
                               "--size 20011 --op " + op + " --type " + t;
      CAPTURE(args);
      const auto one = run_cli(args, kTimeout);
      const auto two = run_cli(two_devices() + " --shares 2,3 " + args, kTimeout);
      REQUIRE(one.code == 0);
      REQUIRE(two.code == 0);
      const std::string a = first_row(one.out), b = first_row(two.out);
      CAPTURE(a, b);
      CHECK(field(b, "verified") == "true");
      CHECK(field(b, "devices") == "2");
      CHECK(field(b, "expected") == field(a, "expected"));
      const bool exact = std::string(t).find("int") != std::string::npos ||
                         std::string(op) != "sum" && std::string(op) != "prod";
      if (exact) CHECK(field(b, "result") == field(a, "result"));
      if (std::string(op).rfind("arg", 0) == 0) CHECK(field(b, "index") == field(a, "index"));
    }
  }
}

TEST_CASE(
    "two devices: scans equal the one-device output element by element, segments and "
    "ties spanning the shares",
    "[shares][cli]") {
  const TempDir d;
  for (const std::string& mode :
       {std::string("--op sum --type int32"), std::string("--op sum --type int32 --exclusive"),
        std::string("--op max --type float --segment-length 3001"),
        std::string("--op sum --type int64 --segment-length 7 --exclusive"),
        std::string("--op prod --type uint32 --segment-length 5000"),
        std::string("--op min --type double --exclusive")}) {
    for (const char* v : {"scan-hierarchical", "scan-lookback", "scan-fast"}) {
      const std::string args = std::string("--variant ") + v +
                               " --size 10007 --format json --repeat 1 --warmup 0 " + mode;
      CAPTURE(args);
      const auto one = run_cli(args + " --output " + (d / "one.npy"), kTimeout);
      const auto two =
          run_cli(two_devices() + " " + args + " --output " + (d / "two.npy"), kTimeout);
      REQUIRE(one.code == 0);
      REQUIRE(two.code == 0);
      CHECK(field(first_row(two.out), "verified") == "true");
      CHECK(field(first_row(two.out), "devices") == "2");
      CHECK(read_file(d / "one.npy") == read_file(d / "two.npy"));
    }
  }
  // An extreme tied in both shares: the first index wins; an empty share changes nothing.
  std::vector<std::int32_t> ints(1000, 0);
  ints[10] = 9;
  ints[990] = 9;
  HostArray a;
  a.type = DType::kInt32;
  a.n = ints.size();
  a.bytes.resize(ints.size() * 4);
  std::memcpy(a.bytes.data(), ints.data(), a.bytes.size());
  write_npy(d / "ties.npy", a);
  for (const char* shares : {"1,1", "0,1", "1,0", "1,99"}) {
    const auto r = run_cli(two_devices() + " --shares " + shares + " --input " + (d / "ties.npy") +
                               " --op argmax --variant fast,topdown --format json",
                           kTimeout);
    CAPTURE(shares, r.out);
    CHECK(r.code == 0);
    CHECK(field(first_row(r.out), "index") == "10");
    CHECK(field(first_row(r.out), "verified") == "true");
  }
}

TEST_CASE(
    "several devices: a scan takes its carry-in from the totals of the shares before it (chunks, "
    "an empty share, odd sizes), and a segmented scan adds its carry after",
    "[shares][cli]") {
  const TempDir d;
  const char* one_dev = std::getenv("CLREDUCE_TEST_DEVICE");
  const std::string dev = one_dev && *one_dev ? one_dev : "0";
  const std::string three = "--device '" + dev + "," + dev + "," + dev + "' --shares 3,0,4";
  for (const std::string& mode :
       {std::string("--op sum --type int32"), std::string("--op sum --type int32 --exclusive"),
        std::string("--op prod --type int64"), std::string("--op max --type double --exclusive"),
        std::string("--op sum --type float"), std::string("--op sum --type float --exclusive")}) {
    for (const char* chunk : {"", " --max-chunk 1001"}) {
      const std::string args = std::string("--variant scan-blelloch,scan-hierarchical") +
                               " --size 10007 --format json --repeat 1 --warmup 0 " + mode + chunk;
      CAPTURE(args);
      const auto one = run_cli(args + " --output " + (d / "one.npy"), kTimeout);
      const auto many = run_cli(three + " " + args + " --output " + (d / "many.npy"), kTimeout);
      REQUIRE(one.code == 0);
      REQUIRE(many.code == 0);
      const std::string row = first_row(many.out);
      CAPTURE(row);
      CHECK(field(row, "verified") == "true");
      CHECK(field(row, "devices") == "3");
      CHECK_THAT(row, Catch::Matchers::ContainsSubstring("totals first, then carry-in"));
      // Integers, and min/max of any type, are exact whatever the order.
      if (mode.find("float") == std::string::npos)
        CHECK(read_file(d / "one.npy") == read_file(d / "many.npy"));
    }
  }
  // The look-back kernel takes the carry-in itself (scan-fast delegating to it too): one launch
  // per chunk, no carry pass; the hierarchical scan adds a pass after every chunk but the first.
  for (const char* path : {"lookback", "hierarchical"}) {
    const auto r = run_cli(std::string("--variant scan-fast,scan-lookback --tune scan-fast-path=") +
                               path + " --size 30007 --max-chunk 40000 --exclusive --format json " +
                               "--repeat 1 --warmup 0",
                           kTimeout);
    REQUIRE(r.code == 0);
    std::istringstream rows(r.out);
    for (std::string row; std::getline(rows, row);) {
      if (row.empty() || row[0] != '{') continue;
      CAPTURE(path, row);
      CHECK(field(row, "verified") == "true");
      CHECK_THAT(row, Catch::Matchers::ContainsSubstring("4 chunks of 8192"));
      const bool lookback =
          std::string(path) == "lookback" || field(row, "variant") == "scan-lookback";
      CHECK(field(row, "launches") == (lookback ? "4" : "15"));
    }
  }
  // Segmented: a share's carry depends on where its last segment starts; the carry pass then.
  const auto seg =
      run_cli(three + " --variant scan-hierarchical --size 10007 --segment-length 77 " +
                  "--format json --repeat 1 --warmup 0",
              kTimeout);
  REQUIRE(seg.code == 0);
  CHECK(field(first_row(seg.out), "verified") == "true");
  CHECK_THAT(first_row(seg.out),
             !Catch::Matchers::ContainsSubstring("totals first, then carry-in"));
}

TEST_CASE(
    "several devices, default shares: an unsegmented scan is split (the last device also scans "
    "the first piece), others equal; the kernel time is the slowest first pass plus the "
    "slowest second pass",
    "[shares][cli]") {
  // {flags, weights, element sizes}: split by weights r/s, 1, 1 (r, s: the bytes a total and a
  // scan move an element), each cut on the share grain of the device's alignment and the
  // element sizes (input, segment flags, output) but the last; with scan-split off or
  // segments, equal halves; scan-split-piece sets the first weight. On PoCL (128 bytes): int32
  // -> int64 9984, 30016, 30000.
  struct Case {
    std::string flags;
    std::vector<double> weights;
    std::vector<std::size_t> sizes;
  };
  const std::vector<Case> cases = {
      {"--type int32", {4.0 / 12, 1, 1}, {4, 8}},  // int32 -> int64
      {"--type int32 --acc int32", {4.0 / 8, 1, 1}, {4, 4}},
      {"--type float --exclusive", {4.0 / 8, 1, 1}, {4, 4}},
      {"--type double --op max", {8.0 / 16, 1, 1}, {8, 8}},
      {"--type int32 --tune scan-split-piece=0.26", {0.26, 1, 1}, {4, 8}},
      {"--type int32 --tune scan-split=off", {1, 1}, {4, 8}},
      {"--type int32 --segment-length 77", {1, 1}, {4, 1, 8}}};
  const std::size_t align = in_place_alignment(test::device_context().info());
  for (const auto& [flags, weights, sizes] : cases) {
    std::vector<std::string> pieces;
    for (const std::size_t c : split_shares(70000, weights, share_grain({align}, sizes)))
      pieces.push_back(std::to_string(c));
    const std::string args = two_devices() + " --variant scan-fast --size 70000 " + flags +
                             " --format json --repeat 1 --warmup 0";
    CAPTURE(args);
    const std::string row = verified_row(args);
    CAPTURE(row);
    CHECK(field(row, "devices") == "2");
    CHECK((row.find("first piece scanned beside") != std::string::npos) == (pieces.size() == 3));
    std::size_t at = row.find("\"parts\":");
    REQUIRE(at != std::string::npos);
    // One timed run: the whole's kernel time is max(before) + max(kernel - before) of the pieces.
    double first_max = 0.0, second_max = 0.0, slowest = 0.0;
    std::uint64_t first = 0;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      CAPTURE(i);
      at = row.find("{", at);
      REQUIRE(at != std::string::npos);
      const std::string p = row.substr(at, row.find("}", at) - at);
      ++at;
      CHECK(field(p, "n") == pieces[i]);
      CHECK(field(p, "first") == std::to_string(first));
      first += std::stoull(pieces[i]);
      const double k = std::stod(field(p, "kernel_ms")), b = std::stod(field(p, "before_ms"));
      if (i == 0) CHECK(b > 0.0);  // the first piece's scan, or the first share's total
      first_max = std::max(first_max, b);
      second_max = std::max(second_max, k - b);
      slowest = std::max(slowest, k);
    }
    CHECK(row.find("{", at) == std::string::npos);  // no more pieces
    const double want = first_max + second_max;
    const double got = std::stod(field(row, "kernel_ms"));
    CHECK(std::abs(got - want) <= 1e-3 * want + 2e-6);
    CHECK(got >= slowest * (1 - 1e-3));
  }
}

TEST_CASE("device lists and --shares: bad values are one-line errors, exit 2", "[shares][cli]") {
  for (const std::string& args :
       {std::string("--device 0, --size 100"), std::string("--device 0,0 --shares 1 --size 100"),
        std::string("--device 0,0 --shares 1,-2 --size 100"),
        std::string("--device 0,0 --shares 0,0 --size 100"),
        std::string("--device 0,0 --shares 1,x --size 100"),
        std::string("--device 0 --shares 1,2 --size 100"), std::string("--device 0,99 --size 100"),
        std::string("--device all-accelerators")}) {
    CAPTURE(args);
    const auto r = run_cli(args, kTimeout);
    CHECK(r.code == 2);
    CHECK(clreduce::test::count_lines(r.out) == 1);
    CHECK_THAT(r.out, ContainsSubstring("clreduce: "));
  }
}

TEST_CASE("several CPU devices take their shares in place: every share starts aligned",
          "[shares][cli]") {
  if (test::device_context().info().type != "CPU") SKIP("a CPU device uses host arrays in place");
  // 1000003 int32 over three: the grain of 16 left the second share at 1333312 bytes, off
  // 128, so it was copied.
  const std::string one = test::test_device_spec();
  const std::string args = "--device '" + one + "," + one + "," + one +
                           "' --variant fast,scan-fast --size 1000003 --format json --repeat 1 "
                           "--warmup 0";
  CAPTURE(args);
  const auto r = run_cli(args, kTimeout);
  REQUIRE(r.code == 0);
  std::istringstream rows(r.out);
  int seen = 0;
  for (std::string row; std::getline(rows, row);) {
    if (row.find("\"kind\":\"clreduce\"") == std::string::npos) continue;
    CAPTURE(row);
    ++seen;
    CHECK(field(row, "verified") == "true");
    const std::string policy = field(row, "policy");
    std::size_t shares = 0;
    for (std::size_t at = policy.find("(whole"); at != std::string::npos;
         at = policy.find("(whole", at + 1), ++shares)
      CHECK(policy.compare(at, 16, "(whole, in place") == 0);
    CHECK(shares >= 3);
  }
  CHECK(seen == 2);
}

TEST_CASE(
    "several devices: a split scan whose first piece and last share would crowd the last "
    "device's memory runs unsplit, and says so",
    "[shares][cli]") {
  // 700000 int32 -> int64 over two contexts, copied (in-place=off): split, the last device
  // holds the piece and its share, about 400000 elements of 12 bytes (4.8 MB); unsplit 350000
  // each (4.2 MB). Planned for 5.2 MB (0.85: 4.42 MB) the split does not fit, each half does.
  const std::string base = two_devices() +
                           " --variant scan-fast --size 700000 --type int32 --format json "
                           "--repeat 1 --warmup 0 --tune in-place=off";
  for (const auto& [memory, split] : {std::pair<std::string, bool>{"5200000", false},
                                      std::pair<std::string, bool>{"6400000", true}}) {
    const std::string args = base + " --tune device-memory=" + memory;
    CAPTURE(args);
    const std::string row = verified_row(args);
    CAPTURE(row);
    CHECK((row.find("first piece scanned beside") != std::string::npos) == split);
    CHECK((row.find("unsplit: the first piece beside the last share would pass 0.85 of the "
                    "last device's memory") != std::string::npos) == !split);
    if (!split) {  // equal halves
      const std::size_t align = in_place_alignment(test::device_context().info());
      const auto half = split_shares(700000, {1, 1}, share_grain({align}, {4, 8}));
      CHECK(row.find("\"first\":" + std::to_string(half[0]) + ",") != std::string::npos);
    }
  }
}
