// test_reduce.cpp: every reduction variant x op x type on sizes around the work-group size,
// powers of two +-1, primes and about 10^6, against the host reference; the NaN, tie and
// overflow rules on the device; kernels edited at run time; build failures.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "clreduce/error.hpp"
#include "io/data.hpp"
#include "reduce/expr.hpp"
#include "reduce/ladder.hpp"
#include "reduce/variant.hpp"
#include "run/runner.hpp"
#include "test_helpers.hpp"
#include "verify/reference.hpp"

using namespace clreduce;
using clreduce::test::device_context;
using clreduce::test::make_array;

namespace {

// Every variant but `exact`, which sums float and double only and has its own tests
// (test_exact.cpp).
std::vector<std::string> variant_names() {
  std::vector<std::string> v;
  for (const auto& r : reduce_variants())
    if (r->name() != "exact") v.push_back(r->name());
  return v;
}

// The variants of the full op x type matrix below: all but the ladder kernels and the butterfly,
// whose 8 x 36 kernel builds would take minutes under PoCL; test_ladder.cpp gives each of them
// every op and every type (and the full product under the hidden tag [.ladder-full]).
std::vector<std::string> matrix_variant_names() {
  std::vector<std::string> v;
  for (const auto& name : variant_names())
    if (ladder_number(name) == 0 && name != "butterfly") v.push_back(name);
  return v;
}

RunRecord run_one(const std::string& variant, const HostArray& a, Op op, std::size_t local = 0,
                  const std::string& acc = "") {
  RunConfig cfg;
  cfg.warmup = 0;
  cfg.repeat = 1;
  cfg.local_size = local;
  cfg.acc = acc;
  ReduceSession s(device_context(), a, op, cfg);
  return s.run(*find_reduce_variant(variant));
}

// Checks a record: not skipped, verified, and (for exact types) equal to the reference.
void require_match(const RunRecord& r, const HostArray& a, Op op) {
  INFO("result " << r.result.str() << " @" << r.result.index << ", expected " << r.expected.str()
                 << " @" << r.expected.index << ": " << r.verify_note << "; " << r.policy.str());
  REQUIRE_FALSE(r.skipped);
  REQUIRE(r.verified);
  const Value ref = reference_reduce(a, op);
  if (!is_float(ref.type)) {
    REQUIRE(r.result.i == ref.i);
    REQUIRE(r.result.u == ref.u);
  }
  if (is_arg_op(op)) REQUIRE(r.result.index == ref.index);
}

}  // namespace

TEST_CASE("every variant, op and type verifies on awkward sizes", "[reduce]") {
  const std::string variant = GENERATE(from_range(matrix_variant_names()));
  const Op op = GENERATE(from_range(all_ops()));
  const DType type = GENERATE(from_range(all_dtypes()));
  if (type == DType::kDouble && !device_context().info().fp64) SKIP("no fp64");
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(variant, op_name(op), dtype_name(type), seed);
  for (std::size_t n :
       {1, 2, 3, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1023, 1025, 7919, 65537, 1000003}) {
    CAPTURE(n);
    const HostArray a = generate(type, n, seed + n);
    require_match(run_one(variant, a, op), a, op);
  }
}

TEST_CASE("n = 0 gives the identity for sum and prod and an error for the others", "[reduce]") {
  const std::string variant = GENERATE(from_range(variant_names()));
  const auto empty = make_array<std::int32_t>(DType::kInt32, {});
  CHECK(run_one(variant, empty, Op::kSum).result.i == 0);
  CHECK(run_one(variant, empty, Op::kProd).result.i == 1);
  CHECK(run_one(variant, empty, Op::kSum).verified);
  CHECK_THROWS_AS(run_one(variant, empty, Op::kMin), Error);
  CHECK_THROWS_AS(run_one(variant, empty, Op::kArgMax), Error);
}

TEST_CASE("NaN propagates and arg ops return the first NaN, across work-groups", "[reduce]") {
  const std::string variant = GENERATE(from_range(variant_names()));
  CAPTURE(variant);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t n : {5, 300, 70001}) {
    CAPTURE(n);
    HostArray a = generate(DType::kFloat, n, 3);
    a.as<float>()[n - 1] = nan;
    if (n > 10) a.as<float>()[n / 2] = nan;
    for (Op op : all_ops()) {
      CAPTURE(op_name(op));
      const RunRecord r = run_one(variant, a, op);
      require_match(r, a, op);
      if (!is_arg_op(op)) REQUIRE(std::isnan(r.result.f));
      if (is_arg_op(op))
        REQUIRE(r.result.index == static_cast<std::int64_t>(n > 10 ? n / 2 : n - 1));
    }
  }
}

TEST_CASE("arg ops return the first index among ties spread over work-groups", "[reduce]") {
  const std::string variant = GENERATE(from_range(variant_names()));
  CAPTURE(variant);
  for (std::size_t n : {7, 257, 100003}) {
    std::vector<std::int64_t> v(n, 5);
    v[n - 1] = -3;
    v[n / 3] = -3;
    v[n / 2] = 9;
    v[n - 2] = 9;
    const auto a = make_array(DType::kInt64, v);
    CAPTURE(n);
    CHECK(run_one(variant, a, Op::kArgMin).result.index == static_cast<std::int64_t>(n / 3));
    CHECK(run_one(variant, a, Op::kArgMax).result.index == static_cast<std::int64_t>(n / 2));
    const auto c = make_array(DType::kInt64, std::vector<std::int64_t>(n, 4));
    CHECK(run_one(variant, c, Op::kArgMin).result.index == 0);
    CHECK(run_one(variant, c, Op::kArgMax).result.index == 0);
  }
}

TEST_CASE("integer sums widen and wrap exactly as NumPy's do", "[reduce]") {
  const std::string variant = GENERATE(from_range(variant_names()));
  CAPTURE(variant);
  const std::size_t n = 100001;
  const auto big = make_array(DType::kInt32, std::vector<std::int32_t>(n, INT32_MAX));
  RunRecord r = run_one(variant, big, Op::kSum);
  CHECK(r.result.i == static_cast<std::int64_t>(n) * INT32_MAX);  // no 32-bit overflow
  const auto wide = make_array(DType::kInt64, std::vector<std::int64_t>(n, INT64_MAX / 1000));
  r = run_one(variant, wide, Op::kSum);  // wraps several times
  const std::uint64_t expect = static_cast<std::uint64_t>(INT64_MAX / 1000) * n;
  CHECK(r.result.i == static_cast<std::int64_t>(expect));
  const auto u = make_array(DType::kUInt32, std::vector<std::uint32_t>(n, 3));
  r = run_one(variant, u, Op::kProd);  // 3^n mod 2^64
  std::uint64_t p = 1;
  for (std::size_t i = 0; i < n; ++i) p *= 3;
  CHECK(r.result.u == p);
  // full-range int32: a 32-bit accumulator would be caught here
  std::mt19937 rng(11);
  std::vector<std::int32_t> full(n);
  for (auto& x : full) x = static_cast<std::int32_t>(rng());
  const auto f = make_array(DType::kInt32, full);
  require_match(run_one(variant, f, Op::kSum), f, Op::kSum);
}

TEST_CASE("32-bit accumulators (--acc int32, uint32): sums and products wrap in every variant",
          "[reduce]") {
  const std::string variant = GENERATE(from_range(variant_names()));
  CAPTURE(variant);
  std::mt19937 rng(17);
  for (std::size_t n : {1, 33, 4099, 100003}) {
    std::vector<std::int32_t> v(n);
    for (auto& x : v) x = static_cast<std::int32_t>(rng());  // full range: sums wrap often
    std::vector<std::uint32_t> u(n);
    for (auto& x : u) x = static_cast<std::uint32_t>(rng()) | 1u;  // odd: products stay nonzero
    const auto a = make_array(DType::kInt32, v);
    const auto b = make_array(DType::kUInt32, u);
    for (Op op : {Op::kSum, Op::kProd}) {
      CAPTURE(n, op_name(op));
      RunRecord r = run_one(variant, a, op, 0, "int32");
      REQUIRE(r.verified);
      CHECK(r.acc == DType::kInt32);
      CHECK(r.result.i == reference_reduce(a, op, DType::kInt32).i);
      r = run_one(variant, b, op, 0, "uint32");
      REQUIRE(r.verified);
      CHECK(r.result.u == reference_reduce(b, op, DType::kUInt32).u);
      CHECK(r.result.u <= UINT32_MAX);
    }
  }
}

TEST_CASE("a local size override sets the group size, and a size the device refuses is an error",
          "[reduce]") {
  const std::string variant =
      GENERATE(std::string("bottomup"), std::string("topdown"), std::string("fast"));
  const HostArray a = generate(DType::kInt32, 1000, 5);
  for (std::size_t wg : {1, 3, 16, 100}) {
    CAPTURE(variant, wg);
    require_match(run_one(variant, a, Op::kSum, wg), a, Op::kSum);
  }
  try {
    run_one(variant, a, Op::kSum, 1u << 20);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kUsage);
    CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("work-group size"));
  }
}

namespace {}  // namespace

TEST_CASE("fast verifies in each shape, forced, with its own and with many groups",
          "[reduce][fast]") {
  // The device picks one shape; the fast-shape knob forces either, and fast-groups
  // spreads small arrays over several groups.
  // (shape, groups): the device's own shape with its own groups is in the matrix above, and
  // topdown's scheme in the fallback test below.
  const auto [shape, groups] =
      GENERATE(table<std::string, std::string>({{"gpu", ""}, {"cpu", "7"}}));
  const Op op = GENERATE(from_range(all_ops()));
  const DType type = GENERATE(from_range(all_dtypes()));
  if (type == DType::kDouble && !device_context().info().fp64) SKIP("no fp64");
  // The CPU shape's kernels for every type are in the matrix above; here its many groups, on
  // one type of each kind (the code paths differ by kind, not by width within a kind).
  if (shape == "cpu" && type != DType::kInt32 && type != DType::kFloat && type != DType::kUInt64)
    return;
  const test::TuningGuard force(device_context(), "fast-shape", shape);
  const test::TuningGuard spread(device_context(), "fast-groups", groups);
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(shape, groups, op_name(op), dtype_name(type), seed);
  for (std::size_t n : {1, 2, 3, 4, 5, 17, 31, 33, 255, 4097, 100003}) {
    CAPTURE(n);
    HostArray a = generate(type, n, seed + n);
    const RunRecord r = run_one("fast", a, op);
    CAPTURE(r.policy.str());
    REQUIRE(r.policy.path.rfind(shape + "-shape", 0) == 0);
    if (!groups.empty()) REQUIRE(r.policy.groups == std::stoul(groups));
    require_match(r, a, op);
    if ((op == Op::kSum || op == Op::kProd) && (type == DType::kInt32 || type == DType::kUInt32)) {
      const RunRecord r32 = run_one("fast", a, op, 0, dtype_name(type));  // --acc int32 / uint32
      REQUIRE(r32.verified);
      REQUIRE(r32.result.i == reference_reduce(a, op, type).i);
      REQUIRE(r32.result.u == reference_reduce(a, op, type).u);
    }
    if (is_float(type) && n > 3) {  // two NaNs, in the body and in the tail: the first wins
      if (type == DType::kFloat) {
        a.as<float>()[n / 2 + 1] = a.as<float>()[n - 1] = std::numeric_limits<float>::quiet_NaN();
      } else {
        a.as<double>()[n / 2 + 1] = a.as<double>()[n - 1] =
            std::numeric_limits<double>::quiet_NaN();
      }
      const RunRecord rn = run_one("fast", a, op);
      require_match(rn, a, op);
      if (is_arg_op(op)) REQUIRE(rn.result.index == static_cast<std::int64_t>(n / 2 + 1));
      if (op == Op::kMin || op == Op::kMax || op == Op::kSum) REQUIRE(std::isnan(rn.result.f));
    }
  }
}

TEST_CASE("fast's CPU shape screens arg-op blocks exactly: ties, NaNs and late extremes",
          "[reduce][fast]") {
  // Arg ops on the CPU shape skip a block of vectors whose lanes cannot beat the lane-wise
  // extremes so far: few distinct values (ties in every lane, the first must win), extremes
  // and NaNs placed late, in blocks after the lanes have settled, and runs that fall.
  // In order, and as 4 streams side by side (fast-arg-streams), each screened on its own.
  const std::string streams = GENERATE("off", "on");
  CAPTURE(streams);
  const test::TuningGuard force(device_context(), "fast-shape", "cpu");
  const test::TuningGuard spread(device_context(), "fast-groups", "2");
  const test::TuningGuard order(device_context(), "fast-arg-streams", streams);
  std::mt19937 rng(29);
  for (std::size_t n : {777, 5003, 40009, 100003}) {
    for (int pattern = 0; pattern < 4; ++pattern) {
      CAPTURE(n, pattern);
      std::vector<std::int32_t> vi(n);
      std::vector<float> vf(n);
      for (std::size_t i = 0; i < n; ++i) {
        const int v = pattern == 3 ? static_cast<int>(n - i) / 3 : static_cast<int>(rng() % 8);
        vi[i] = v;
        vf[i] = static_cast<float>(v);
      }
      if (pattern >= 1) {  // a new extreme (twice) late in the array
        const std::size_t at = n / 2 + rng() % (n / 2);
        vi[at] = vi[n - 1] = -9;
        vf[at] = vf[n - 1] = -9.0f;
        vi[at - 1] = vi[n - 2] = 99;
        vf[at - 1] = vf[n - 2] = 99.0f;
      }
      if (pattern == 2) {  // NaNs after a lane's extreme, the first wins
        vf[n / 3 + rng() % (n / 3)] = std::numeric_limits<float>::quiet_NaN();
        vf[n - 3] = std::numeric_limits<float>::quiet_NaN();
      }
      const auto ai = make_array(DType::kInt32, vi);
      const auto af = make_array(DType::kFloat, vf);
      for (Op op : {Op::kArgMin, Op::kArgMax}) {
        CAPTURE(op_name(op));
        const RunRecord ri = run_one("fast", ai, op);
        REQUIRE(ri.policy.path.rfind("cpu-shape", 0) == 0);
        CHECK((ri.policy.path.find("screened in 4 streams") != std::string::npos) ==
              (streams == std::string("on")));
        require_match(ri, ai, op);
        require_match(run_one("fast", af, op), af, op);
      }
    }
  }
}

TEST_CASE("fast's CPU shape screens arg ops in streams where the array is past the cache",
          "[reduce][fast]") {
  // fast-arg-streams auto: in order below the device's global memory cache, in 4 streams from
  // its size on (float: cache / 4 elements).
  const std::uint64_t cache = device_context().info().global_cache;
  if (cache == 0 || cache > (std::uint64_t{1} << 28))
    SKIP("no cache size, or one too large to fill here");
  const test::TuningGuard force(device_context(), "fast-shape", "cpu");
  for (const std::size_t n :
       {static_cast<std::size_t>(cache / 8), static_cast<std::size_t>(cache / 4)}) {
    CAPTURE(n, cache);
    const HostArray a = generate(DType::kFloat, n, 7);
    const RunRecord r = run_one("fast", a, Op::kArgMax);
    require_match(r, a, Op::kArgMax);
    CHECK((r.policy.path.find("screened in 4 streams") != std::string::npos) == (n * 4 >= cache));
  }
}

TEST_CASE("fast gives the same bits run after run on one device", "[reduce][fast]") {
  // Fixed shapes and fixed orders (lanes, work-items, the last group's loop over partials): no
  // atomics decide the order of float additions. 10 runs, each its own session and launch.
  for (DType type : {DType::kFloat, DType::kDouble}) {
    if (type == DType::kDouble && !device_context().info().fp64) continue;
    const HostArray a = generate(type, 3000017, 21);
    std::uint64_t first = 0;
    for (int run = 0; run < 10; ++run) {
      const RunRecord r = run_one("fast", a, Op::kSum);
      REQUIRE(r.verified);
      std::uint64_t b = 0;
      if (type == DType::kFloat) {
        const float f = static_cast<float>(r.result.f);
        std::memcpy(&b, &f, sizeof f);
      } else {
        std::memcpy(&b, &r.result.f, sizeof b);
      }
      CAPTURE(dtype_name(type), run, r.result.str());
      if (run == 0) first = b;
      REQUIRE(b == first);
    }
  }
}

namespace {

// A copy of the source tree's kernels in d (removed with d at the end of the test, pass or fail).
std::filesystem::path copy_kernels(const test::TempDir& d) {
  namespace fs = std::filesystem;
  const fs::path dir = d.dir / "cl";
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, dir, fs::copy_options::recursive);
  return dir;
}

void replace_in_file(const std::filesystem::path& p, const std::string& from,
                     const std::string& to) {
  std::string s = read_text_file(p.string());
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  s.replace(at, from.size(), to);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << s;
}

}  // namespace

TEST_CASE("an edited kernel takes effect at the next run, with no rebuild and no stale cache",
          "[kernels]") {
  const test::TempDir d;
  const auto dir = copy_kernels(d);
  Context ctx(device_context().info(), dir.string());
  const HostArray a = generate(DType::kInt32, 5000, 9);
  RunConfig cfg;
  cfg.warmup = 0;
  cfg.repeat = 1;
  ReduceSession s(ctx, a, Op::kSum, cfg);
  RunRecord before = s.run(*find_reduce_variant("topdown"));
  REQUIRE(before.verified);
  // topdown's result is written by the ticket epilogue it includes: a header edit counts too.
  replace_in_file(dir / "clr_ticket.h", "out[0] = a;", "out[0] = clr_op(a, (acc_t)1000);");
  RunRecord after = s.run(*find_reduce_variant("topdown"));
  CHECK_FALSE(after.verified);
  CHECK(after.result.i == before.result.i + 1000);
}

TEST_CASE(
    "fast falls back to the other shape, then to topdown's scheme, when a check's numbers are "
    "wrong; a reduce_fast.cl that does not build is a build error",
    "[kernels][fast]") {
  const test::TempDir d;
  const auto dir = copy_kernels(d);
  const test::TuningGuard no_force(device_context(), "fast-shape", "auto");
  const HostArray a = generate(DType::kInt32, 100003, 4);
  RunConfig cfg;
  cfg.warmup = 0;
  cfg.repeat = 1;
  const bool gpu = device_context().info().is_gpu;
  // Break the device's own shape (each work-item skips its first vector): the other is used.
  replace_in_file(dir / "reduce_fast.cl", gpu ? "vidx_t v = gid;" : "vidx_t v = gid * per;",
                  gpu ? "vidx_t v = gid + 1;" : "vidx_t v = gid * per + 1;");
  {
    Context ctx(device_context().info(), dir.string());
    ReduceSession s(ctx, a, Op::kSum, cfg);
    const RunRecord r = s.run(*find_reduce_variant("fast"));
    CAPTURE(r.policy.str());
    CHECK(r.policy.path.rfind(gpu ? "cpu-shape" : "gpu-shape", 0) == 0);
    CHECK_THAT(r.policy.path, Catch::Matchers::ContainsSubstring(gpu ? "gpu-shape check gave"
                                                                     : "cpu-shape check gave"));
    CHECK(r.verified);
  }
  // Break the other shape too: topdown's scheme, still correct.
  replace_in_file(dir / "reduce_fast.cl", gpu ? "vidx_t v = gid * per;" : "vidx_t v = gid;",
                  gpu ? "vidx_t v = gid * per + 1;" : "vidx_t v = gid + 1;");
  {
    Context ctx(device_context().info(), dir.string());
    ReduceSession s(ctx, a, Op::kSum, cfg);
    const RunRecord r = s.run(*find_reduce_variant("fast"));
    CAPTURE(r.policy.str());
    CHECK(r.policy.path.rfind("topdown-scheme", 0) == 0);
    CHECK_THAT(r.policy.path, Catch::Matchers::ContainsSubstring("gpu-shape check gave"));
    CHECK_THAT(r.policy.path, Catch::Matchers::ContainsSubstring("cpu-shape check gave"));
    CHECK(r.verified);
    CHECK(r.result.i == reference_reduce(a, Op::kSum).i);
  }
  // A file that does not build is the user's to fix, never a reason to run another kernel.
  replace_in_file(dir / "reduce_fast.cl", "acc_t a = clr_identity();",
                  "acc_t a = clr_identity() +;");
  {
    Context ctx(device_context().info(), dir.string());
    ReduceSession s(ctx, a, Op::kSum, cfg);
    try {
      s.run(*find_reduce_variant("fast"));
      FAIL("no build error");
    } catch (const Error& e) {
      CHECK(e.category() == Errc::kBuild);
      CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("reduce_fast.cl"));
    }
  }
}

TEST_CASE("a kernel that fails to build names the device, file, options and line", "[kernels]") {
  const test::TempDir d;
  const auto dir = copy_kernels(d);
  replace_in_file(dir / "reduce_topdown.cl", "acc_t a = clr_identity();",
                  "acc_t a = clr_identity() +;");
  Context ctx(device_context().info(), dir.string());
  const HostArray a = generate(DType::kInt32, 100, 9);
  ReduceSession s(ctx, a, Op::kSum, RunConfig{});
  try {
    s.run(*find_reduce_variant("topdown"));
    FAIL("no build error");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kBuild);
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Matchers::ContainsSubstring("reduce_topdown.cl"));
    CHECK_THAT(msg, Catch::Matchers::ContainsSubstring("-DCLR_TYPE=0"));
    CHECK_THAT(msg, Catch::Matchers::ContainsSubstring(device_context().info().name));
    CHECK_THAT(msg, Catch::Matchers::ContainsSubstring("reduce_topdown.cl:22"));  // the edited line
  }
}

TEST_CASE("build logs without #line support are mapped back to the user's file", "[kernels]") {
  // NVIDIA's compiler reports positions in the spliced source as <kernel>:L:C.
  const std::string log = "<kernel>:239:29: error: expected expression\n<kernel>:5:1: note: x\n";
  const std::string mapped = remap_log(log, "reduce_topdown.cl", 210, 217);
  CHECK_THAT(mapped, Catch::Matchers::ContainsSubstring("reduce_topdown.cl:22:29: error"));
  CHECK_THAT(mapped, Catch::Matchers::ContainsSubstring("clreduce.h:4:1: note"));

  // A generated tail after the file (a user expression under its own #line directives, as
  // expr_function() writes it) maps where those directives place it, so the expression is
  // named with its own column, as on compilers that honour #line.
  const std::string tail = expr_function("--map", "acc_t f(acc_t x)", "x*q");
  const std::string tail_log =
      "<kernel>:304:3: error: use of undeclared identifier 'q'\n<kernel>:306:3: note: here\n"
      "<kernel>:239:29: error: expected expression\n";
  const std::string in_tail = remap_log(tail_log, "reduce_topdown.cl", 210, 217, tail, 300);
  CAPTURE(tail, in_tail);
  CHECK_THAT(in_tail, Catch::Matchers::ContainsSubstring(
                          "--map:1:3: error: use of undeclared identifier 'q'"));
  CHECK_THAT(in_tail, Catch::Matchers::ContainsSubstring("--map wrapper:3:3: note"));
  CHECK_THAT(in_tail, Catch::Matchers::ContainsSubstring("reduce_topdown.cl:22:29: error"));
  try {
    rethrow_expr_build(Error(Errc::kBuild, "kernel build failed: " + in_tail), {{"--map", "x*q"}});
    FAIL("not rethrown");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kUsage);
    CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring(
                             "does not compile: column 3: use of undeclared identifier 'q'"));
  }
}
