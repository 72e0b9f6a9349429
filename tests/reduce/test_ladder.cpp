// test_ladder.cpp: the reduction ladder (kernels 1-7) and the butterfly: capability probes and
// the paths they select; every op and every type on awkward sizes (the full op x type product,
// 288 kernel builds, under the hidden tag [.ladder-full]); several --local-size values around
// which sizes are chosen; every work-item's butterfly copy; refused sizes; the ladder table.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "clreduce/error.hpp"
#include "io/data.hpp"
#include "reduce/ladder.hpp"
#include "reduce/multipass.hpp"
#include "reduce/reduce_butterfly.hpp"
#include "run/runner.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/capabilities_detail.hpp"
#include "test_helpers.hpp"
#include "verify/reference.hpp"

using namespace clreduce;
using Catch::Matchers::ContainsSubstring;
using clreduce::test::device_context;
using clreduce::test::run_cli;

namespace {

const std::vector<std::string> kLadder = {"interleaved-divergent", "interleaved-strided",
                                          "sequential-addressing", "first-add-during-load",
                                          "unroll-last-warp",      "complete-unroll",
                                          "multi-element"};

// Every op and every type at least once (the combinations tests/oclgrind.sh uses).
struct OpType {
  Op op;
  DType type;
};
const std::vector<OpType> kOpTypes = {{Op::kSum, DType::kInt32},    {Op::kArgMin, DType::kFloat},
                                      {Op::kMax, DType::kDouble},   {Op::kProd, DType::kUInt64},
                                      {Op::kArgMax, DType::kInt64}, {Op::kMin, DType::kUInt32},
                                      {Op::kSum, DType::kFloat}};

RunRecord run_on(Context& ctx, const ReduceVariant& v, const HostArray& a, Op op,
                 std::size_t local = 0) {
  RunConfig cfg;
  cfg.warmup = 0;
  cfg.repeat = 1;
  cfg.local_size = local;
  ReduceSession s(ctx, a, op, cfg);
  return s.run(v);
}

void require_exact(const RunRecord& r, const HostArray& a, Op op) {
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

bool is_pocl_31(const DeviceInfo& d) {
  return d.platform_name.find("Portable Computing Language") != std::string::npos &&
         d.driver_version.rfind("3.1", 0) == 0;
}

}  // namespace

TEST_CASE("capability probes give sane answers, cached per context", "[caps]") {
  Context& ctx = device_context();
  const Capabilities& c = ctx.caps();
  CAPTURE(c.str(), c.detail);
  CHECK(&ctx.caps() == &c);  // probed once
  CHECK_THAT(c.str(), ContainsSubstring("nv_shfl="));
  CHECK_THAT(c.str(), ContainsSubstring("subgroups="));
  CHECK_THAT(c.str(), ContainsSubstring("wg_collectives="));
  if (!ctx.info().is_nvidia) CHECK_FALSE(c.nv_shfl);
  CHECK(c.subgroups == !c.subgroups_options.empty());
  CHECK(c.wg_collectives == !c.wg_collectives_options.empty());
  if (c.subgroups) CHECK_THAT(c.subgroups_options, ContainsSubstring("-cl-std="));
  if (is_pocl_31(ctx.info())) {
    // Debian 12's PoCL 3.1: OpenCL C 1.2, no sub-groups, no collectives, no asm.
    CHECK_FALSE(c.nv_shfl);
    CHECK_FALSE(c.subgroups);
    CHECK_FALSE(c.wg_collectives);
    CHECK_THAT(c.detail, ContainsSubstring("not an NVIDIA device"));
  }
  // Turned off by the disable-caps knob: every answer is no, with the reason, and nothing is
  // probed.
  const test::TuningGuard off(ctx, "disable-caps", "all");
  const Capabilities none = probe_capabilities(ctx);
  CHECK_FALSE(none.nv_shfl);
  CHECK_FALSE(none.subgroups);
  CHECK_FALSE(none.wg_collectives);
  CHECK_THAT(none.detail, ContainsSubstring("disabled by the disable-caps setting"));
}

namespace {

// What a correct device writes for probe_sub_groups, with sub-group membership given per local id.
std::vector<cl_uint> sub_group_answers(std::size_t wg, std::size_t groups,
                                       const std::vector<cl_uint>& id_of_lid) {
  std::vector<cl_uint> info(6 * wg * groups);
  cl_uint count = 0;
  for (cl_uint id : id_of_lid) count = std::max(count, id + 1);
  for (std::size_t g = 0; g < groups; ++g) {
    for (std::size_t l = 0; l < wg; ++l) {
      cl_uint size = 0, local = 0, sum = 0, scan = 0;
      for (std::size_t m = 0; m < wg; ++m) {
        if (id_of_lid[m] != id_of_lid[l]) continue;
        ++size;
        sum += 7u * static_cast<cl_uint>(m) + 1u;
        if (m <= l) scan += 7u * static_cast<cl_uint>(m) + 1u;
        if (m < l) ++local;
      }
      cl_uint* w = &info[6 * (g * wg + l)];
      w[0] = size, w[1] = id_of_lid[l], w[2] = local, w[3] = count, w[4] = sum, w[5] = scan;
    }
  }
  return info;
}

}  // namespace

TEST_CASE("the probes' numeric checks accept right answers and reject wrong ones", "[caps]") {
  using namespace probe_detail;
  std::vector<cl_uint> partners(128);
  for (std::size_t i = 0; i < partners.size(); ++i) partners[i] = static_cast<cl_uint>(i ^ 5);
  CHECK(check_nv_partners(partners).empty());
  partners[40] = 40;
  CHECK_FALSE(check_nv_partners(partners).empty());

  // Sub-groups of 16, one of the whole group, a non-uniform split (24, 24, 16) and sub-groups
  // that are not contiguous (lid % 4): all valid, as the tail assumes nothing about the mapping.
  const std::size_t wg = 64;
  std::vector<std::vector<cl_uint>> maps(4, std::vector<cl_uint>(wg));
  for (std::size_t l = 0; l < wg; ++l) {
    maps[0][l] = static_cast<cl_uint>(l / 16);
    maps[1][l] = 0;
    maps[2][l] = static_cast<cl_uint>(l / 24);
    maps[3][l] = static_cast<cl_uint>(l % 4);
  }
  for (const auto& m : maps) {
    auto info = sub_group_answers(wg, 2, m);
    CHECK(check_sub_group_info(info, wg).empty());
    info[6 * 70 + 4] += 1;  // one wrong reduction
    CHECK_FALSE(check_sub_group_info(info, wg).empty());
  }
  auto info = sub_group_answers(wg, 2, maps[0]);
  info[6 * 3 + 2] = 4;  // two work-items with local id 4 in one sub-group
  CHECK_FALSE(check_sub_group_info(info, wg).empty());

  std::vector<cl_long> wgc(5 * wg * 2);
  const auto wide = [](std::int64_t m) { return (3 * m - 50) * 4294967296LL + 1; };
  for (std::size_t i = 0; i < wg * 2; ++i) {
    const std::int64_t l = static_cast<std::int64_t>(i % wg);
    std::int64_t sum = 0, incl = 0;
    for (std::int64_t m = 0; m < static_cast<std::int64_t>(wg); ++m) {
      sum += 3 * m - 50;
      if (m <= l) incl += wide(m);
    }
    cl_long* w = &wgc[5 * i];
    w[0] = sum, w[1] = incl, w[2] = incl - wide(l), w[3] = wide(static_cast<std::int64_t>(wg) - 1),
    w[4] = -35;
  }
  CHECK(check_wg_collective_values(wgc, wg).empty());
  wgc[5 * 77 + 2] += 1;
  CHECK_FALSE(check_wg_collective_values(wgc, wg).empty());

  // The tail check end to end, on the path every device has.
  std::string why;
  CHECK(probe_tail_fold(device_context(), 0, "", &why));
  CHECK(why.empty());
  if (!device_context().info().is_nvidia) {  // inline PTX does not build here: a clean no
    CHECK_FALSE(probe_tail_fold(device_context(), 2, "", &why));
    CHECK_THAT(why, ContainsSubstring("build failed"));
  }
}

TEST_CASE("the tail path follows the probes, and the fallbacks are the ones taken",
          "[caps][ladder]") {
  Capabilities c;
  CHECK(choose_tail(c, 256) == TailPath::kBarrier);
  c.subgroups = true;
  CHECK(choose_tail(c, 48) == TailPath::kSubGroup);
  c.nv_shfl = true;
  CHECK(choose_tail(c, 256) == TailPath::kShfl);
  CHECK(choose_tail(c, 48) == TailPath::kSubGroup);  // shfl.sync needs whole warps
  c.subgroups = false;
  CHECK(choose_tail(c, 48) == TailPath::kBarrier);
  CHECK(choose_tail(c, 32) == TailPath::kShfl);

  // On this device: the path each tail kernel reports is the one its capabilities allow.
  Context& ctx = device_context();
  const HostArray a = generate(DType::kInt32, 5000, 3);
  for (const char* name : {"unroll-last-warp", "complete-unroll", "multi-element"}) {
    for (std::size_t wg : {0, 48}) {
      CAPTURE(name, wg);
      const RunRecord r = run_on(ctx, *find_reduce_variant(name), a, Op::kSum, wg);
      require_exact(r, a, Op::kSum);
      CHECK(r.policy.path == tail_path_name(choose_tail(ctx.caps(), r.policy.wg_size)));
      if (is_pocl_31(ctx.info())) CHECK(r.policy.path == "barrier");
    }
  }
  // With the fast paths turned off, a fresh context takes barriers, and still verifies.
  Tuning off;
  set_tuning(off, "disable-caps", "all", "test");
  Context plain(ctx.info(), ctx.kernel_dir(), false, off);
  for (const char* name : {"unroll-last-warp", "complete-unroll", "multi-element"}) {
    CAPTURE(name);
    const RunRecord r = run_on(plain, *find_reduce_variant(name), a, Op::kArgMax);
    require_exact(r, a, Op::kArgMax);
    CHECK(r.policy.path == "barrier");
  }
}

namespace {

const std::vector<std::string> kNewVariants = {"interleaved-divergent", "interleaved-strided",
                                               "sequential-addressing", "first-add-during-load",
                                               "unroll-last-warp",      "complete-unroll",
                                               "multi-element",         "butterfly"};

// Every op and every type, each accumulator shape (int32 -> int64 and uint32 -> uint64 widening,
// 8-byte ints, float, double, the 16-byte arg struct with 32- and 64-bit values); float x every
// op, int64 arg ops and the widening pairs are also what test_reduce.cpp's NaN, tie and overflow
// tests build, so most of these kernels are built once for both.
const std::vector<OpType> kMatrix = {
    {Op::kSum, DType::kFloat},  {Op::kProd, DType::kFloat},    {Op::kMin, DType::kFloat},
    {Op::kMax, DType::kFloat},  {Op::kArgMin, DType::kFloat},  {Op::kArgMax, DType::kFloat},
    {Op::kSum, DType::kInt64},  {Op::kArgMin, DType::kInt64},  {Op::kArgMax, DType::kInt64},
    {Op::kSum, DType::kInt32},  {Op::kArgMax, DType::kInt32},  {Op::kProd, DType::kUInt32},
    {Op::kMin, DType::kUInt32}, {Op::kMax, DType::kUInt64},    {Op::kProd, DType::kUInt64},
    {Op::kSum, DType::kDouble}, {Op::kArgMin, DType::kDouble}, {Op::kMax, DType::kDouble}};

// Sizes around the default group sizes (256 for the ladder on a CPU, 64 for the butterfly; 256
// on a GPU) and their multiples, odd sizes, primes and about 10^6.
void check_awkward_sizes(const std::string& variant, Op op, DType type) {
  if (type == DType::kDouble && !device_context().info().fp64) SKIP("no fp64");
  const std::uint64_t seed = std::random_device{}();
  for (std::size_t n : {1,   2,   3,   15,  16,  17,  63,   64,   65,   127,   128,    129,
                        255, 256, 257, 511, 512, 513, 1023, 1025, 7919, 65537, 1000003}) {
    CAPTURE(variant, op_name(op), dtype_name(type), n, seed);
    const HostArray a = generate(type, n, seed + n);
    require_exact(run_on(device_context(), *find_reduce_variant(variant), a, op), a, op);
  }
}

}  // namespace

TEST_CASE("ladder kernels and the butterfly: every op and every type on awkward sizes",
          "[ladder]") {
  const std::string variant = GENERATE(from_range(kNewVariants));
  const OpType ot = GENERATE(from_range(kMatrix));
  check_awkward_sizes(variant, ot.op, ot.type);
}

TEST_CASE("ladder kernels and the butterfly: the full op x type product", "[.ladder-full]") {
  const std::string variant = GENERATE(from_range(kNewVariants));
  const Op op = GENERATE(from_range(all_ops()));
  const DType type = GENERATE(from_range(all_dtypes()));
  check_awkward_sizes(variant, op, type);
}

TEST_CASE("ladder kernels and the butterfly verify at sizes around any group size", "[ladder]") {
  const std::string variant = GENERATE(from_range(kNewVariants));
  const bool butterfly = variant == "butterfly";
  // Group sizes 3 (not a power of two, and many passes), 32 (one warp: the shfl.sync tail on
  // NVIDIA) and 48 (neither a power of two nor a multiple of 32: the sub-group or barrier tail);
  // the butterfly takes powers of two: 1, 4, 32. Each size gets some of the op/type pairs, so
  // every op and type is covered while the number of kernel builds stays small.
  struct Case {
    std::size_t wg;
    std::vector<OpType> ots;
  };
  const std::vector<OpType> a = {{Op::kSum, DType::kInt32},
                                 {Op::kArgMin, DType::kFloat},
                                 {Op::kMax, DType::kDouble},
                                 {Op::kProd, DType::kUInt64}};
  const std::vector<OpType> b = {
      {Op::kArgMax, DType::kInt64}, {Op::kMin, DType::kUInt32}, {Op::kSum, DType::kFloat}};
  const std::vector<OpType> c = {
      {Op::kArgMax, DType::kDouble}, {Op::kSum, DType::kUInt32}, {Op::kProd, DType::kFloat}};
  const std::vector<Case> cases = butterfly ? std::vector<Case>{{1, a}, {4, b}, {32, c}}
                                            : std::vector<Case>{{3, a}, {32, b}, {48, c}};
  const std::uint64_t seed = std::random_device{}();
  for (const Case& cs : cases) {
    const std::size_t wg = cs.wg;
    for (const OpType& ot : cs.ots) {
      if (ot.type == DType::kDouble && !device_context().info().fp64) continue;
      for (std::size_t n : {wg - 1, wg, wg + 1, 2 * wg - 1, 2 * wg, 2 * wg + 1, 3 * wg + 2,
                            wg * wg * 2 + 3, std::size_t{7919}}) {
        if (n == 0) continue;
        CAPTURE(variant, op_name(ot.op), dtype_name(ot.type), wg, n, seed);
        const HostArray x = generate(ot.type, n, seed + n);
        require_exact(run_on(device_context(), *find_reduce_variant(variant), x, ot.op, wg), x,
                      ot.op);
      }
    }
  }
}

TEST_CASE("every work-item of the butterfly holds the total", "[ladder][butterfly]") {
  const auto* b = dynamic_cast<const ButterflyVariant*>(find_reduce_variant("butterfly"));
  REQUIRE(b != nullptr);
  Context& ctx = device_context();
  for (std::size_t k = 0; k < kOpTypes.size(); ++k) {
    const OpType& ot = kOpTypes[k];
    if (ot.type == DType::kDouble && !ctx.info().fp64) continue;
    const std::size_t wg = k % 2 ? 16 : 0;          // 0: the variant's choice
    for (std::size_t n : {1, 100, 1000, 100003}) {  // one group (one launch), then several
      CAPTURE(op_name(ot.op), dtype_name(ot.type), wg, n);
      HostArray a = generate(ot.type, n, 17 + n);
      if (is_float(ot.type) && n > 10 && ot.op == Op::kArgMin) a.as<float>()[n / 3] = NAN;
      const RunRecord r = run_on(ctx, *b, a, ot.op, wg);
      require_exact(r, a, ot.op);
      // The same launch again, from a plan that keeps every work-item's copy.
      ReduceProblem p;
      p.op = ot.op;
      p.type = ot.type;
      p.n = n;
      p.acc_type = r.acc;
      const auto plan = b->plan_keeping_copies(ctx, p, wg);
      REQUIRE(plan->policy().str() == r.policy.str());
      cl::Buffer in(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, a.bytes.size(),
                    a.bytes.data());
      cl::Buffer out(ctx.context(), CL_MEM_READ_WRITE, 16);
      std::vector<cl::Event> events;
      plan->enqueue(in, out, events);
      const std::vector<unsigned char> copies = plan->read_copies();
      const std::size_t count = r.policy.groups * r.policy.wg_size;
      REQUIRE(copies.size() == count * p.acc_bytes());
      for (std::size_t i = 0; i < count; ++i) {
        CAPTURE(i, r.policy.str());
        const unsigned char* c = copies.data() + i * p.acc_bytes();
        const Value v = Value::from_bytes(r.acc, c);
        if (is_float(r.acc)) {
          REQUIRE((v.f == r.result.f || (std::isnan(v.f) && std::isnan(r.result.f))));
        } else {
          REQUIRE(v.i == r.result.i);
          REQUIRE(v.u == r.result.u);
        }
        if (is_arg_op(ot.op)) {
          std::int64_t idx;
          std::memcpy(&idx, c + 8, 8);
          REQUIRE(idx == r.result.index);
        }
      }
    }
  }
}

TEST_CASE("group sizes the ladder kernels cannot take are errors, not wrong answers", "[ladder]") {
  Context& ctx = device_context();
  const HostArray a = generate(DType::kInt32, 1000, 5);
  struct Case {
    const char* variant;
    std::size_t wg;
    const char* says;
  };
  for (const Case& c :
       {Case{"butterfly", 100, "power-of-two"}, Case{"butterfly", 48, "power-of-two"},
        Case{"interleaved-divergent", 1, "at least 2"},
        Case{"sequential-addressing", 1, "at least 2"},
        Case{"complete-unroll", 8192, "at most 4096"}, Case{"multi-element", 8192, "at most 4096"},
        Case{"unroll-last-warp", std::size_t{1} << 20, "work-group size"},
        Case{"butterfly", std::size_t{1} << 20, "work-group size"}}) {
    CAPTURE(c.variant, c.wg);
    try {
      run_on(ctx, *find_reduce_variant(c.variant), a, Op::kSum, c.wg);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.category() == Errc::kUsage);
      CHECK_THAT(e.what(), ContainsSubstring(c.says));
    }
  }
  // A group of one is fine where each work-item loads two elements.
  for (const char* v : {"first-add-during-load", "unroll-last-warp", "complete-unroll",
                        "multi-element", "butterfly"}) {
    CAPTURE(v);
    require_exact(run_on(ctx, *find_reduce_variant(v), a, Op::kSum, 1), a, Op::kSum);
  }
  const auto r = run_cli("--variant butterfly --local-size 100 --size 1000");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("power-of-two"));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
}

TEST_CASE("the ladder variant prints the seeds' table, and JSON lines with speedups",
          "[ladder][cli]") {
  REQUIRE(ladder_variants().size() == 7);
  for (std::size_t k = 0; k < kLadder.size(); ++k) {
    CHECK(ladder_variants()[k]->name() == kLadder[k]);
    CHECK(ladder_number(kLadder[k]) == static_cast<int>(k + 1));
  }
  CHECK(ladder_number("topdown") == 0);
  auto r = run_cli("--variant ladder --size 100000 --repeat 2");
  CHECK(r.code == 0);
  for (const char* col : {"kernel", "time ms", "GB/s", "step", "cumulative", "verified"})
    CHECK_THAT(r.out, ContainsSubstring(col));
  for (std::size_t k = 0; k < kLadder.size(); ++k)
    CHECK_THAT(r.out, ContainsSubstring(" " + std::to_string(k + 1) + "  " + kLadder[k]));
  // Device line, header, 7 rows, and on a busy machine the footnote explaining a '~' (noisy) time.
  const bool footnote = r.out.find("\n~ noisy:") != std::string::npos;
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == (footnote ? 10 : 9));
  CHECK_THAT(r.out, ContainsSubstring("1.00x"));
  CHECK_THAT(r.out, !ContainsSubstring(" NO "));
  r = run_cli("--variant ladder --op argmax --type float --size 5000 --format json --repeat 1");
  CHECK(r.code == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 7);
  for (int k = 1; k <= 7; ++k)
    CHECK_THAT(r.out, ContainsSubstring("\"kernel\":" + std::to_string(k) + ","));
  CHECK_THAT(r.out, ContainsSubstring("\"step_speedup\":null,\"cumulative_speedup\":1}"));
  CHECK_THAT(r.out, ContainsSubstring("\"verified\":true"));
  CHECK_THAT(r.out, !ContainsSubstring("\"verified\":false"));
  r = run_cli("--variant ladder,topdown --size 10");
  CHECK(r.code == 2);
}

TEST_CASE("the variant list names the path each device-dependent variant takes", "[ladder][cli]") {
  auto r = run_cli("--list-variants");
  CHECK(r.code == 0);
  for (const auto& v : kLadder) CHECK_THAT(r.out, ContainsSubstring(v));
  CHECK_THAT(r.out, ContainsSubstring("butterfly"));
  CHECK_THAT(r.out, ContainsSubstring("# device "));
  CHECK_THAT(r.out, ContainsSubstring(device_context().caps().str()));
  const std::string path = tail_path_name(choose_tail(device_context().caps(), 256));
  for (const char* v : {"unroll-last-warp", "complete-unroll", "multi-element"}) {
    const std::size_t at = r.out.find(std::string(v) + " ");
    REQUIRE(at != std::string::npos);
    CHECK_THAT(r.out.substr(at, r.out.find('\n', at) - at), ContainsSubstring(": " + path + "]"));
  }
  // No OpenCL platform: the plain list still answers.
  const test::TempDir empty;  // no vendor files: removed at the end, pass or skip
  const std::string env = "OCL_ICD_VENDORS=" + empty.dir.string();
  if (run_cli("--list-devices", env).code != 3) SKIP("this ICD loader ignores OCL_ICD_VENDORS");
  r = run_cli("--list-variants", env);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("multi-element"));
  CHECK_THAT(r.out, !ContainsSubstring("[device"));
}
