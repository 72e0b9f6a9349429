// test_scan.cpp: every scan variant x op x type on sizes needing one, two and three levels of the
// recursion over tile totals; exclusive and segmented modes; segment starts on tile edges, one-
// element segments, all and no flags; inclusive = exclusive shifted; wrapping --acc int32; NaN;
// odd group sizes; an unwritten element caught by the sentinel, also when only the last of several
// runs skips it; scan-lookback's in-kernel fold of predecessors it waited on (lookback-limit 0),
// scan-fast's choice of path. Every element is checked.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "clreduce/error.hpp"
#include "io/data.hpp"
#include "run/scan_runner.hpp"
#include "test_helpers.hpp"

using namespace clreduce;
using clreduce::test::device_context;
using clreduce::test::make_array;

namespace {

// scan-fast's CPU path runs superblocks of (work-items x chunk) elements: a chunk of 16 makes the
// test sizes span many superblocks (and keeps its "tile" small). Set before any policy is made.
const bool kSmallChunks = setenv("CLREDUCE_SCAN_CHUNK", "16", 0) == 0;

std::vector<std::string> scan_names() {
  (void)kSmallChunks;
  std::vector<std::string> v;
  for (const auto& r : scan_variants()) v.push_back(r->name());
  return v;
}

const std::vector<Op>& scan_ops() {
  static const std::vector<Op> v = {Op::kSum, Op::kProd, Op::kMin, Op::kMax};
  return v;
}

struct ScanRun {
  RunRecord rec;
  HostArray out;
  std::size_t tile = 0;  // elements per work-group at level 0
};

ScanRun run_scan(const std::string& variant, const HostArray& a, Op op, bool exclusive,
                 const std::vector<std::uint8_t>* flags, std::size_t local = 64,
                 const std::string& acc = "", Context* ctx = nullptr) {
  RunConfig cfg;
  cfg.warmup = 0;
  cfg.repeat = 1;
  cfg.local_size = local;
  cfg.acc = acc;
  ScanOptions so;
  so.exclusive = exclusive;
  so.segmented = flags != nullptr;
  if (flags) so.flags = *flags;
  ScanSession s(ctx ? *ctx : device_context(), a, op, cfg, so);
  ScanRun r;
  r.rec = s.run(*find_scan_variant(variant), &r.out);
  r.tile = r.rec.policy.wg_size * r.rec.policy.items_per_thread;
  return r;
}

void require_verified(const ScanRun& r) {
  INFO(r.rec.variant << ": " << r.rec.verify_note << "; " << r.rec.policy.str()
                     << "; skipped: " << r.rec.skip_reason);
  REQUIRE_FALSE(r.rec.skipped);
  REQUIRE(r.rec.verified);
  REQUIRE(r.rec.scan.has_value());
  REQUIRE(r.rec.scan->wrong_count == 0);
  REQUIRE(r.rec.scan->first_wrong == -1);
  REQUIRE(r.out.n == r.rec.n);
}

template <class A> A at(const HostArray& a, std::size_t i) {
  A v;
  std::memcpy(&v, a.bytes.data() + i * sizeof(A), sizeof(A));
  return v;
}

std::vector<std::uint8_t> random_flags(std::size_t n, double p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution d(p);
  std::vector<std::uint8_t> f(n);
  for (auto& x : f) x = d(rng);
  return f;
}

// The level-0 tile of a variant at a group size for op and type (builds that kernel).
// The tile of variant's plan for n elements (scan-lookback's rows, hence its tile, grow with n on
// NVIDIA GPUs; the other variants' tiles do not depend on n).
std::size_t tile_of(const std::string& variant, std::size_t local, Op op = Op::kSum,
                    DType type = DType::kInt64, std::size_t n = 1) {
  ScanProblem p;
  p.op = op;
  p.type = type;
  p.acc_type = acc_dtype(op, type);
  p.n = std::max<std::size_t>(n, 1);
  const LaunchPolicy pol = find_scan_variant(variant)->plan(device_context(), p, local)->policy();
  return pol.wg_size * pol.items_per_thread;
}

// t * t, the size needing three levels of the tiled recursion, capped for the variants with
// large tiles (scan-lookback, scan-fast), which have no levels.
std::size_t square(std::size_t t) { return std::min(t * t, std::size_t{300000}); }

}  // namespace

namespace {

// Every scan variant x ops x type, inclusive, on sizes needing one, two and three levels.
void check_levels(const std::vector<Op>& ops) {
  const std::string variant = GENERATE(from_range(scan_names()));
  const Op op = GENERATE_REF(from_range(ops));
  const DType type = GENERATE(from_range(all_dtypes()));
  if (type == DType::kDouble && !device_context().info().fp64) SKIP("no fp64");
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(variant, op_name(op), dtype_name(type), seed);
  const std::size_t t = tile_of(variant, 64, op, type);
  for (std::size_t n : {std::size_t{1}, std::size_t{2}, t - 1, t, t + 1, 3 * t - 1,
                        std::size_t{7919}, square(t), square(t) + 1}) {
    CAPTURE(n, t);
    const HostArray a = generate(type, n, seed + n);
    const ScanRun r = run_scan(variant, a, op, false, nullptr);
    require_verified(r);
    REQUIRE(r.tile == tile_of(variant, 64, op, type, n));
    if (n == t) REQUIRE(scan_levels(n, t) == 1);
    if (n == t + 1) REQUIRE(scan_levels(n, t) == 2);
    if (n == t * t + 1) REQUIRE(scan_levels(n, t) == 3);  // when not capped
  }
}

// Every scan variant in one mode, for a set of (op, type) pairs that holds every op and every
// type, on one, two and three levels with random segment starts.
void check_mode(bool exclusive, bool segmented) {
  struct Case {
    Op op;
    DType type;
  };
  const std::vector<Case> cases = {{Op::kSum, DType::kFloat}, {Op::kProd, DType::kUInt32},
                                   {Op::kMin, DType::kInt64}, {Op::kMax, DType::kDouble},
                                   {Op::kSum, DType::kInt32}, {Op::kMax, DType::kUInt64}};
  const std::string variant = GENERATE(from_range(scan_names()));
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(variant, exclusive, segmented, seed);
  for (const Case& c : cases) {
    if (c.type == DType::kDouble && !device_context().info().fp64) continue;
    const std::size_t t = tile_of(variant, 64, c.op, c.type);
    for (std::size_t n : {std::size_t{1}, t + 1, square(t) + 3}) {
      CAPTURE(op_name(c.op), dtype_name(c.type), n);
      const HostArray a = generate(c.type, n, seed + n);
      const auto flags = random_flags(n, 0.02, seed);
      require_verified(run_scan(variant, a, c.op, exclusive, segmented ? &flags : nullptr));
    }
  }
}

}  // namespace

// The matrix is split so that ctest can run the parts side by side.
TEST_CASE("every scan variant and type verifies sum and prod on one, two and three levels",
          "[scan]") {
  check_levels({Op::kSum, Op::kProd});
}

TEST_CASE("every scan variant and type verifies min and max on one, two and three levels",
          "[scan]") {
  check_levels({Op::kMin, Op::kMax});
}

TEST_CASE("exclusive scans verify for every op and type", "[scan]") { check_mode(true, false); }

TEST_CASE("segmented scans verify for every op and type", "[scan]") { check_mode(false, true); }

TEST_CASE("segmented exclusive scans verify for every op and type", "[scan]") {
  check_mode(true, true);
}

TEST_CASE("inclusive equals exclusive shifted by one, within segments too", "[scan]") {
  const std::string variant = GENERATE(from_range(scan_names()));
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(variant, seed);
  const std::size_t n = 20011;
  const auto flags = random_flags(n, 0.01, seed);
  // sum of int32 (int64 output) and min of int64: both write int64.
  for (const bool seg : {false, true}) {
    for (Op op : {Op::kSum, Op::kMin}) {
      CAPTURE(seg, op_name(op));
      const HostArray a = generate(op == Op::kSum ? DType::kInt32 : DType::kInt64, n, seed);
      const ScanRun inc = run_scan(variant, a, op, false, seg ? &flags : nullptr);
      const ScanRun exc = run_scan(variant, a, op, true, seg ? &flags : nullptr);
      require_verified(inc);
      require_verified(exc);
      const std::int64_t id = op == Op::kSum ? 0 : std::numeric_limits<std::int64_t>::max();
      for (std::size_t i = 0; i < n; ++i) {
        const bool start = i == 0 || (seg && flags[i]);
        const std::int64_t want = start ? id : at<std::int64_t>(inc.out, i - 1);
        const std::int64_t got = at<std::int64_t>(exc.out, i);
        if (got != want) FAIL("exclusive[" << i << "] = " << got << ", inclusive[i-1] = " << want);
      }
    }
  }
}

TEST_CASE("segment starts on tile edges, one-element segments, all flags and none", "[scan]") {
  const std::string variant = GENERATE(from_range(scan_names()));
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(variant, seed);
  const std::size_t t = tile_of(variant, 64);
  const std::size_t n = square(t) + 2 * t + 3;  // three levels (where not capped)
  const HostArray a = generate(DType::kInt32, n, seed);
  const HostArray f = generate(DType::kFloat, n, seed);
  const HostArray w = generate(DType::kInt64, n, seed);
  const HostArray u = generate(DType::kUInt32, n, seed);

  SECTION("starts at tile edges, one before and one after, and at level-1 tile edges") {
    std::vector<std::uint8_t> flags(n, 0);
    for (std::size_t i = t; i < n; i += t) flags[i] = 1;
    for (std::size_t i = 3 * t - 1; i + 2 < n; i += 5 * t) flags[i] = flags[i + 2] = 1;
    for (const bool exclusive : {false, true}) {
      require_verified(run_scan(variant, a, Op::kSum, exclusive, &flags));
      require_verified(run_scan(variant, f, Op::kSum, exclusive, &flags));
    }
    std::vector<std::uint8_t> far(n, 0);
    far[square(t)] = far[square(t) + 1] = 1;  // only past the first level-1 tile
    require_verified(run_scan(variant, a, Op::kSum, false, &far));
  }
  SECTION("every flag set: inclusive gives x, exclusive the identity") {
    const std::vector<std::uint8_t> all(n, 1);
    const ScanRun inc = run_scan(variant, a, Op::kSum, false, &all);
    const ScanRun exc = run_scan(variant, w, Op::kMin, true, &all);
    require_verified(inc);
    require_verified(exc);
    for (std::size_t i = 0; i < n; ++i) {
      if (at<std::int64_t>(inc.out, i) != a.as<std::int32_t>()[i])
        FAIL("inclusive[" << i << "] != x");
      if (at<std::int64_t>(exc.out, i) != INT64_MAX) FAIL("exclusive[" << i << "] != the identity");
    }
  }
  SECTION("no flag set (element 0 unflagged) equals the unsegmented scan") {
    const std::vector<std::uint8_t> none(n, 0);
    for (const bool exclusive : {false, true}) {
      const ScanRun seg = run_scan(variant, a, Op::kSum, exclusive, &none);
      const ScanRun plain = run_scan(variant, a, Op::kSum, exclusive, nullptr);
      require_verified(seg);
      require_verified(plain);
      REQUIRE(seg.out.bytes == plain.out.bytes);
    }
  }
  SECTION("one-element segments scattered among long ones, and dense random flags") {
    std::vector<std::uint8_t> flags = random_flags(n, 0.3, seed);
    flags[0] = 0;
    require_verified(run_scan(variant, u, Op::kProd, false, &flags));
    require_verified(run_scan(variant, f, Op::kSum, true, &flags));
    std::vector<std::uint8_t> single(n, 0);
    for (std::size_t i = 1; i + 1 < n; i += 17) single[i] = single[i + 1] = 1;
    require_verified(run_scan(variant, w, Op::kMin, true, &single));
  }
}

TEST_CASE("scans with --acc int32 wrap in 32 bits; the default widens", "[scan]") {
  const std::string variant = GENERATE(from_range(scan_names()));
  CAPTURE(variant);
  const std::size_t n = 10007;
  const auto big = make_array(DType::kInt32, std::vector<std::int32_t>(n, INT32_MAX));
  const ScanRun narrow = run_scan(variant, big, Op::kSum, false, nullptr, 64, "int32");
  require_verified(narrow);
  REQUIRE(narrow.out.type == DType::kInt32);
  REQUIRE(at<std::int32_t>(narrow.out, n - 1) ==
          static_cast<std::int32_t>(static_cast<std::uint32_t>(n) * 0x7fffffffu));
  const ScanRun wide = run_scan(variant, big, Op::kSum, false, nullptr, 64);
  require_verified(wide);
  REQUIRE(wide.out.type == DType::kInt64);
  REQUIRE(at<std::int64_t>(wide.out, n - 1) == static_cast<std::int64_t>(n) * INT32_MAX);
}

TEST_CASE("NaN propagates through min and max scans across tiles", "[scan]") {
  const std::string variant = GENERATE(from_range(scan_names()));
  CAPTURE(variant);
  const std::size_t n = 5003;
  HostArray a = generate(DType::kFloat, n, 4);
  a.as<float>()[1234] = std::numeric_limits<float>::quiet_NaN();
  for (Op op : {Op::kMin, Op::kMax}) {
    const ScanRun r = run_scan(variant, a, op, false, nullptr);
    require_verified(r);
    REQUIRE_FALSE(std::isnan(at<float>(r.out, 1233)));
    for (std::size_t i = 1234; i < n; ++i)
      if (!std::isnan(at<float>(r.out, i))) FAIL("element " << i << " is not NaN");
  }
}

TEST_CASE("scans take odd group sizes; n = 0; arg ops are refused", "[scan]") {
  const std::string variant = GENERATE(from_range(scan_names()));
  CAPTURE(variant);
  const HostArray a = generate(DType::kInt64, 3001, 6);
  const auto flags = random_flags(3001, 0.05, 6);
  for (std::size_t wg : {2, 3, 33, 100}) {
    CAPTURE(wg);
    require_verified(run_scan(variant, a, Op::kSum, false, &flags, wg));
  }
  try {
    run_scan(variant, a, Op::kSum, false, nullptr, std::size_t{1} << 20);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kUsage);
    CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("work-group size"));
  }
  const auto empty = make_array<std::int32_t>(DType::kInt32, {});
  const ScanRun z = run_scan(variant, empty, Op::kMin, true, nullptr);
  CHECK(z.rec.verified);
  CHECK(z.rec.launches == 0);
  CHECK(z.out.n == 0);
  const ScanRun arg = run_scan(variant, a, Op::kArgMin, false, nullptr);
  CHECK(arg.rec.skipped);
  CHECK_THAT(arg.rec.skip_reason, Catch::Matchers::ContainsSubstring("argmin has no prefix scan"));
}

TEST_CASE("an element no kernel writes keeps the sentinel and is reported", "[scan][kernels]") {
  namespace fs = std::filesystem;
  const test::TempDir tmp;  // removed at the end, pass or fail
  const fs::path dir = tmp.dir / "cl";
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, dir, fs::copy_options::recursive);
  // Each edit makes a kernel skip its store of element 77 (level 0 only: n = 1000 leaves fewer
  // than 77 tile totals). The tiled variants store through clr_scan_store; scan-lookback stores
  // whole vectors (the edit sends every tile down its scalar path); scan-fast through CLR_PUT
  // once its vector loop is switched off.
  const struct {
    const char* file;
    const char* from;
    const char* to;
  } edits[] = {
      {"clr_scan.h", "  const size_t g = get_group_id(0);\n",
       "  const size_t g = get_group_id(0);\n  if (base + k == 77) return;\n"},
      {"scan_lookback.cl", "    if (whole) {\n      ((__global avec*)",
       "    if (0) {\n      ((__global avec*)"},
      {"scan_lookback.cl", "if (e0 + k < m) y[base + e0 + k] = o.s[k];",
       "if (e0 + k < m && base + e0 + k != 77) y[base + e0 + k] = o.s[k];"},
      {"clr_cpu_scan.h", "#define VSCAN 8 ", "#define VSCAN 1 "},
      {"clr_cpu_scan.h", "#define CLR_PUT(i, v) __builtin_nontemporal_store((v), y + (i))",
       "#define CLR_PUT(i, v) ((i) == 77 ? 0 : (__builtin_nontemporal_store((v), y + (i)), 0))"},
      {"clr_cpu_scan.h", "#define CLR_PUT(i, v) (y[i] = (v))",
       "#define CLR_PUT(i, v) ((i) == 77 ? 0 : (y[i] = (v), 0))"}};
  for (const auto& e : edits) {
    std::string s = read_text_file((dir / e.file).string());
    const auto pos = s.find(e.from);
    INFO(e.file << ": " << e.from);
    REQUIRE(pos != std::string::npos);
    s.replace(pos, std::string(e.from).size(), e.to);
    std::ofstream(dir / e.file, std::ios::binary | std::ios::trunc) << s;
  }
  Context ctx(device_context().info(), dir.string());
  // scan-fast's start-up check would catch the edited kernel and pick another path: force it.
  const DeviceInfo& d = device_context().info();
  const test::TuningGuard force(ctx, "scan-fast-path",
                                !d.is_gpu     ? "cpu"
                                : d.is_nvidia ? "lookback"
                                              : "hierarchical");
  const std::string variant = GENERATE(from_range(scan_names()));
  CAPTURE(variant);
  for (DType type : {DType::kInt32, DType::kFloat}) {
    const HostArray a = generate(type, 1000, 8);
    const ScanRun r = run_scan(variant, a, Op::kSum, false, nullptr, 16, "", &ctx);
    CHECK_FALSE(r.rec.verified);
    REQUIRE(r.rec.scan.has_value());
    CHECK(r.rec.scan->first_wrong == 77);
    CHECK(r.rec.scan->wrong_count == 1);
    CHECK_THAT(r.rec.verify_note, Catch::Matchers::ContainsSubstring("y[77]"));
    CHECK_THAT(r.rec.verify_note, Catch::Matchers::ContainsSubstring("1 of 1000 elements wrong"));
  }
}

TEST_CASE("only the last timed run starts from the sentinel, and what it does not write is caught",
          "[scan][kernels]") {
  // The command line writes the sentinel before the last run only (the run it verifies). An
  // edited scan-lookback writes element 77 in its first launch (epoch 1) and never again: with
  // one run it verifies; with a warm-up and two timed runs the last run's element 77 must be
  // the sentinel, not the first run's value, and be reported.
  namespace fs = std::filesystem;
  const test::TempDir tmp;
  const fs::path dir = tmp.dir / "cl";
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, dir, fs::copy_options::recursive);
  const struct {
    const char* from;
    const char* to;
  } edits[] = {
      {"    if (whole) {\n      ((__global avec*)", "    if (0) {\n      ((__global avec*)"},
      {"if (e0 + k < m) y[base + e0 + k] = o.s[k];",
       "if (e0 + k < m && (base + e0 + k != 77 || epoch == 1u)) y[base + e0 + k] = o.s[k];"}};
  std::string s = read_text_file((dir / "scan_lookback.cl").string());
  for (const auto& e : edits) {
    const auto pos = s.find(e.from);
    INFO(e.from);
    REQUIRE(pos != std::string::npos);
    s.replace(pos, std::string(e.from).size(), e.to);
  }
  std::ofstream(dir / "scan_lookback.cl", std::ios::binary | std::ios::trunc) << s;
  Context ctx(device_context().info(), dir.string());
  const HostArray a = generate(DType::kInt32, 1000, 8);
  for (const std::uint64_t runs : {1u, 3u}) {
    CAPTURE(runs);
    RunConfig cfg;
    cfg.warmup = runs > 1 ? 1 : 0;
    cfg.repeat = runs > 1 ? 2 : 1;
    cfg.local_size = 16;
    ScanSession session(ctx, a, Op::kSum, cfg, ScanOptions{});
    const RunRecord r = session.run(*find_scan_variant("scan-lookback"), nullptr);
    REQUIRE_FALSE(r.skipped);
    REQUIRE(r.scan.has_value());
    if (runs == 1) {
      CHECK(r.verified);
    } else {
      CHECK_FALSE(r.verified);
      CHECK(r.scan->first_wrong == 77);
      CHECK(r.scan->wrong_count == 1);
    }
  }
}

TEST_CASE("the scan check catches an error just past the float bound", "[scan]") {
  const HostArray a = generate(DType::kFloat, 1000, 2);
  const ScanMode mode{Op::kSum, DType::kFloat, false};
  std::vector<unsigned char> y(1000 * 4);
  sequential_scan(a, mode, {}, y.data());
  ScanVerdict v = verify_scan(a, mode, {}, 1000, y.data());
  REQUIRE(v.ok);
  float bad;
  std::memcpy(&bad, y.data() + 500 * 4, 4);
  bad += 0.01f;  // far beyond (depth + 2) * u * sum|x| for a shallow depth
  std::memcpy(y.data() + 500 * 4, &bad, 4);
  v = verify_scan(a, mode, {}, 10, y.data());
  CHECK_FALSE(v.ok);
  CHECK(v.first_wrong == 500);
  CHECK(v.wrong == 1);
  // Flags restart the scan: the sequential loop of a segmented scan passes its own check, and
  // the unsegmented result fails it from the second segment on.
  std::vector<std::uint8_t> flags(1000, 0);
  flags[600] = 1;
  std::vector<unsigned char> s(1000 * 4);
  sequential_scan(a, mode, flags, s.data());
  CHECK(verify_scan(a, mode, flags, 1000, s.data()).ok);
  sequential_scan(a, mode, {}, y.data());
  v = verify_scan(a, mode, flags, 1000, y.data());
  CHECK(v.first_wrong == 600);
}

TEST_CASE("scan-lookback with lookback-limit 0 folds predecessors in the kernel, in one launch",
          "[scan][lookback]") {
  // A limit of 0: each group folds the three tiles before its own from the input (and any
  // unpublished one at once) instead of reading their descriptors; the results are the same.
  const test::TuningGuard limit(device_context(), "lookback-limit", "0");
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(seed);
  struct Case {
    Op op;
    DType type;
    bool exclusive, segmented;
  };
  for (const Case& c :
       {Case{Op::kSum, DType::kInt32, false, false}, Case{Op::kMin, DType::kFloat, true, false},
        Case{Op::kSum, DType::kInt64, true, true}, Case{Op::kProd, DType::kUInt32, false, true},
        Case{Op::kSum, DType::kFloat, true, true}, Case{Op::kMax, DType::kInt32, false, true}}) {
    CAPTURE(op_name(c.op), dtype_name(c.type), c.exclusive, c.segmented);
    const std::size_t n = 9 * tile_of("scan-lookback", 64, c.op, c.type) + 17;
    const HostArray a = generate(c.type, n, seed);
    const auto flags = random_flags(n, 0.001, seed);
    const ScanRun r =
        run_scan("scan-lookback", a, c.op, c.exclusive, c.segmented ? &flags : nullptr);
    require_verified(r);
    CHECK_THAT(r.rec.policy.path, Catch::Matchers::ContainsSubstring("limit 0"));
    CHECK(r.rec.launches == 1);
  }
  // Windows of 3 descriptors a lane: the folded tiles and the descriptors after them share a
  // window.
  {
    const test::TuningGuard span(device_context(), "lookback-span", "3");
    const std::size_t n = 20 * tile_of("scan-lookback", 16, Op::kSum, DType::kInt64) + 5;
    const HostArray a = generate(DType::kInt64, n, seed);
    const auto flags = random_flags(n, 0.002, seed);
    for (const bool seg : {false, true}) {
      CAPTURE(seg);
      require_verified(run_scan("scan-lookback", a, Op::kSum, seg, seg ? &flags : nullptr, 16));
    }
  }
  // One tile needs no look-back.
  const HostArray one = generate(DType::kInt32, 100, seed);
  const ScanRun r = run_scan("scan-lookback", one, Op::kSum, false, nullptr);
  require_verified(r);
  CHECK(r.rec.launches == 1);
}

TEST_CASE("scan-lookback runs in one pass with the default bound, many tiles, any group order",
          "[scan][lookback]") {
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(seed);
  const std::size_t t = tile_of("scan-lookback", 16, Op::kSum, DType::kInt32);
  const std::size_t n = 200 * t + t / 2;  // 201 tiles, the last half full
  const HostArray a = generate(DType::kInt32, n, seed);
  const auto flags = random_flags(n, 0.001, seed);
  for (const bool seg : {false, true}) {
    const ScanRun r = run_scan("scan-lookback", a, Op::kSum, seg, seg ? &flags : nullptr, 16);
    require_verified(r);
    CHECK(r.rec.launches == 1);
    CHECK(r.rec.policy.groups == 201);
    CHECK(r.rec.policy.vec_width == 2);  // int32 -> int64: 16-byte stores of the sums
  }
}

TEST_CASE("scan-lookback's wide look-back windows: each lane reads several descriptors a round",
          "[scan][lookback]") {
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(seed);
  const std::size_t t = tile_of("scan-lookback", 16, Op::kSum, DType::kInt32);
  const std::size_t n = 150 * t + 7;  // 151 tiles, the last of 7 elements
  const HostArray a = generate(DType::kInt32, n, seed);
  const HostArray d = generate(DType::kDouble, n, seed + 1);
  const auto flags = random_flags(n, 0.0005, seed);
  // Spans of 3 and 8 (windows that end inside a lane's run, and past tile 0), against span 1.
  for (const char* span : {"1", "3", "8"}) {
    CAPTURE(span);
    const test::TuningGuard g(device_context(), "lookback-span", span);
    for (const bool seg : {false, true}) {
      const ScanRun r = run_scan("scan-lookback", a, Op::kSum, seg, seg ? &flags : nullptr, 16);
      require_verified(r);
      CHECK((std::string(span) == "1") ==
            (r.rec.policy.path.find("look-back span") == std::string::npos));
      require_verified(run_scan("scan-lookback", d, Op::kMax, seg, seg ? &flags : nullptr, 16));
    }
  }
}

TEST_CASE("scan-fast picks its path per device and records it", "[scan][fast]") {
  const DeviceInfo& d = device_context().info();
  const HostArray a = generate(DType::kInt32, 100000, 3);
  const ScanRun r = run_scan("scan-fast", a, Op::kSum, false, nullptr, 0);
  require_verified(r);
  CAPTURE(d.name, r.rec.policy.str());
  if (d.is_gpu && d.is_nvidia) {
    CHECK(r.rec.policy.path.rfind("scan-lookback: look-back", 0) == 0);
    CHECK(r.rec.launches == 1);
  } else if (!d.is_gpu) {
    // The CPU-shaped look-back: one work-item per cache-sized tile, one launch. Tiles of 32768,
    // or, where that leaves fewer than 4 a compute unit, about 8 a unit of at least 8192.
    CHECK(r.rec.policy.path.rfind("cpu look-back: ", 0) == 0);
    CHECK(r.rec.policy.wg_size == 1);
    const std::size_t units = std::max(1u, d.compute_units);
    std::size_t tile = 32768;
    if (100000 < 4 * units * 32768)
      for (tile = 8192; tile < 32768 && tile * 8 * units < 100000;) tile *= 2;
    CHECK(r.rec.policy.groups == (100000 + tile - 1) / tile);
    CHECK(r.rec.launches == 1);
    // 2^22 elements are at least 4 tiles of 32768 a unit up to 32 units; the knob sets any tile.
    if (units <= 32) {
      const ScanRun big =
          run_scan("scan-fast", generate(DType::kInt32, 1u << 22, 5), Op::kSum, false, nullptr, 0);
      require_verified(big);
      CHECK(big.rec.policy.groups == (1u << 22) / 32768);
    }
    const test::TuningGuard knob(device_context(), "scan-tile", "32768");
    const ScanRun set = run_scan("scan-fast", a, Op::kSum, false, nullptr, 0);
    require_verified(set);
    CHECK(set.rec.policy.groups == (100000 + 32767) / 32768);
  } else {
    CHECK(r.rec.policy.path.rfind("scan-hierarchical: ", 0) == 0);
  }
}

TEST_CASE("scan-fast's CPU path with large chunks: superblock edges, segments, exclusive",
          "[scan][fast]") {
  if (device_context().info().is_gpu) SKIP("the CPU path is for CPUs");
  const test::TuningGuard force(device_context(), "scan-fast-path", "cpu");  // the two-pass path
  const test::TuningGuard chunk(device_context(), "scan-chunk",
                                "65536");  // the default, 2^20, would make this slow
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(seed);
  ScanProblem p;
  p.n = 1;
  const LaunchPolicy pol = find_scan_variant("scan-fast")->plan(device_context(), p, 0)->policy();
  const std::size_t sb = pol.wg_size * pol.groups * pol.items_per_thread;  // one superblock
  CHECK(pol.items_per_thread == 65536);
  const std::size_t n = 2 * sb + 1001;
  const HostArray a = generate(DType::kInt32, n, seed);
  std::vector<std::uint8_t> flags = random_flags(n, 0.0001, seed);
  flags[sb] = flags[sb + 1] = 1;  // starts on a superblock edge, a one-element segment
  for (const bool exclusive : {false, true}) {
    for (const bool seg : {false, true}) {
      CAPTURE(exclusive, seg);
      const ScanRun r = run_scan("scan-fast", a, Op::kSum, exclusive, seg ? &flags : nullptr, 0);
      require_verified(r);
      CHECK(r.rec.launches == 6);  // three superblocks, two passes each
    }
  }
}

TEST_CASE("scan-fast's CPU look-back path: tile edges, segments, exclusive, every type, folds",
          "[scan][fast]") {
  if (device_context().info().is_gpu) SKIP("the CPU path is for CPUs");
  const test::TuningGuard force(device_context(), "scan-fast-path", "cpu-lookback");
  const test::TuningGuard tile(device_context(), "scan-tile", "1024");
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(seed);
  const std::size_t n = 37 * 1024 + 333;  // 38 tiles, the last partial
  std::vector<std::uint8_t> flags = random_flags(n, 0.001, seed);
  flags[5 * 1024] = flags[7 * 1024 - 1] = flags[7 * 1024] = 1;  // on and beside tile edges
  for (const DType type : {DType::kInt32, DType::kInt64, DType::kFloat, DType::kDouble}) {
    if (type == DType::kDouble && !device_context().info().fp64) continue;
    const HostArray a = generate(type, n, seed);
    for (const bool exclusive : {false, true}) {
      for (const bool seg : {false, true}) {
        CAPTURE(dtype_name(type), exclusive, seg);
        const ScanRun r = run_scan("scan-fast", a, Op::kSum, exclusive, seg ? &flags : nullptr, 0);
        require_verified(r);
        CHECK(r.rec.launches == 1);
        CHECK(r.rec.policy.groups == 38);
        CHECK(r.rec.policy.path.rfind("cpu look-back: 38 tiles of 1024", 0) == 0);
      }
    }
  }
  // lookback-limit 0 (the test setting): each tile folds the three before it from the input
  // (one of them past a segment start, or tile 0) instead of reading their descriptors.
  const test::TuningGuard limit(device_context(), "lookback-limit", "0");
  for (const DType type : {DType::kInt32, DType::kInt64, DType::kFloat}) {
    const HostArray a = generate(type, n, seed);
    for (const bool exclusive : {false, true}) {
      for (const bool seg : {false, true}) {
        CAPTURE(dtype_name(type), exclusive, seg);
        const Op op = type == DType::kInt32 ? Op::kMax : Op::kSum;
        const ScanRun r = run_scan("scan-fast", a, op, exclusive, seg ? &flags : nullptr, 0);
        require_verified(r);
        CHECK(r.rec.launches == 1);
        CHECK(r.rec.policy.path.rfind("cpu look-back: 38 tiles of 1024", 0) == 0);
      }
    }
  }
}

TEST_CASE("scan-fast forced onto the look-back path, its predecessors folded in the kernel",
          "[scan][fast][lookback]") {
  const test::TuningGuard force(device_context(), "scan-fast-path", "lookback");
  const test::TuningGuard limit(device_context(), "lookback-limit", "0");
  const HostArray a = generate(DType::kInt32, 5000, 12);
  const auto flags = random_flags(5000, 0.01, 12);
  for (const bool seg : {false, true}) {
    CAPTURE(seg);
    const ScanRun r = run_scan("scan-fast", a, Op::kSum, seg, seg ? &flags : nullptr, 16);
    if (r.rec.skipped) SKIP(r.rec.skip_reason);
    require_verified(r);
    CHECK(r.rec.policy.path.rfind("scan-lookback: look-back", 0) == 0);
    CHECK_THAT(r.rec.policy.path, Catch::Matchers::ContainsSubstring("limit 0"));
    CHECK(r.rec.launches == 1);
  }
}
