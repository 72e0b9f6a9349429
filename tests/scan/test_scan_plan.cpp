// test_scan_plan.cpp: scan plans as a library user holds them: every scan variant on sub-ranges
// of one buffer at aligned but awkward offsets and lengths, with and without a carry-in,
// inclusive and exclusive, plain and segmented (the carry stops at the range's first segment
// start); a long scan chained chunk by chunk through the carry; the calls a plan refuses.
// Every element is compared exactly with a host loop that starts from the carry.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>

#include "clreduce/error.hpp"
#include "io/data.hpp"
#include "scan/scan_variant.hpp"
#include "test_helpers.hpp"

using namespace clreduce;
using Catch::Matchers::ContainsSubstring;
using clreduce::test::device_context;

namespace {

// The device under test, without creating the shared context.
DeviceInfo device_context_info() {
  return select_device(list_devices(), clreduce::test::test_device_spec());
}

std::vector<std::string> scan_names() {
  std::vector<std::string> v;
  for (const auto& r : scan_variants()) v.push_back(r->name());
  return v;
}

cl::Buffer upload(Context& ctx, const void* bytes, std::size_t size) {
  cl::Buffer b(ctx.context(), CL_MEM_READ_WRITE, std::max<std::size_t>(size, 1));
  if (size) ctx.queue().enqueueWriteBuffer(b, CL_TRUE, 0, size, bytes);
  return b;
}

// An (op, input type) pair host_scan knows: int32 sums into int64, int64 max, uint32 min.
struct Case {
  Op op;
  DType type;
};

// The host's scan of x[offset, offset + length) from `carry` (the identity when none): the seeds'
// loop, restarting at the identity at every flagged element; results as uint64 bit patterns of
// the output type (wrapping sums in 64 bits, as the device does).
std::vector<std::uint64_t> host_scan(const HostArray& x, const std::vector<std::uint8_t>& flags,
                                     const Case& c, bool exclusive, std::size_t offset,
                                     std::size_t length, std::optional<std::int64_t> carry) {
  std::vector<std::uint64_t> y(length);
  const auto op = [&](std::uint64_t a, std::uint64_t b) -> std::uint64_t {
    switch (c.op) {
      case Op::kSum: return a + b;
      case Op::kMax:
        return static_cast<std::uint64_t>(
            std::max(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b)));
      default: return std::min(a, b);  // uint32 values held in uint64
    }
  };
  const std::uint64_t identity = c.op == Op::kSum   ? 0
                                 : c.op == Op::kMax ? static_cast<std::uint64_t>(INT64_MIN)
                                                    : std::uint64_t{UINT32_MAX};
  std::uint64_t run = carry ? static_cast<std::uint64_t>(*carry) : identity;
  for (std::size_t k = 0; k < length; ++k) {
    const std::size_t i = offset + k;
    std::uint64_t v = 0;
    if (c.type == DType::kInt32)
      v = static_cast<std::uint64_t>(static_cast<std::int64_t>(x.as<std::int32_t>()[i]));
    if (c.type == DType::kInt64) v = static_cast<std::uint64_t>(x.as<std::int64_t>()[i]);
    if (c.type == DType::kUInt32) v = x.as<std::uint32_t>()[i];
    if (!flags.empty() && flags[i]) run = identity;
    if (exclusive) {
      y[k] = run;
      run = op(run, v);
    } else {
      run = op(run, v);
      y[k] = run;
    }
  }
  return y;
}

ScanProblem problem_of(const Case& c, std::size_t n, bool exclusive, bool segmented,
                       bool carry_in) {
  ScanProblem p;
  p.op = c.op;
  p.type = c.type;
  p.acc_type = acc_dtype(c.op, c.type);
  p.n = n;
  p.exclusive = exclusive;
  p.segmented = segmented;
  p.carry_in = carry_in;
  return p;
}

Value carry_value(DType acc, std::int64_t v) {
  Value c;
  c.type = acc;
  c.i = v;
  c.u = static_cast<std::uint64_t>(v);
  return c;
}

// Runs plan on [offset, offset + length) of in/flags into out (pre-filled with a sentinel), reads
// the range back and compares it with the host's scan; elements outside the range must keep
// the sentinel.
void check_range(Context& ctx, ScanPlan& plan, const HostArray& x,
                 const std::vector<std::uint8_t>& flags, const Case& c, std::size_t offset,
                 std::size_t length, std::optional<std::int64_t> carry) {
  const ScanProblem& p = plan.problem();
  const std::size_t out_size = p.acc_bytes();
  std::vector<unsigned char> y(x.n * out_size, 0xA5);
  const cl::Buffer in = upload(ctx, x.bytes.data(), x.bytes.size());
  const cl::Buffer f = upload(ctx, flags.data(), flags.size());
  const cl::Buffer out = upload(ctx, y.data(), y.size());
  std::vector<cl::Event> events;
  const Value cv = carry_value(p.acc_type, carry.value_or(0));
  plan.enqueue(in, f, out, offset, length, carry ? &cv : nullptr, events);
  ctx.queue().enqueueReadBuffer(out, CL_TRUE, 0, y.size(), y.data());
  const auto want = host_scan(x, p.segmented ? flags : std::vector<std::uint8_t>{}, c, p.exclusive,
                              offset, length, carry);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < x.n; ++i) {
    std::uint64_t got = 0;
    std::memcpy(&got, y.data() + i * out_size, out_size);
    const bool inside = i >= offset && i < offset + length;
    const std::uint64_t expect =
        inside ? (out_size == 4 ? want[i - offset] & 0xFFFFFFFFu : want[i - offset])
               : (out_size == 4 ? 0xA5A5A5A5u : 0xA5A5A5A5A5A5A5A5u);
    if (got != expect && wrong++ == 0)
      UNSCOPED_INFO("first wrong: y[" << i << "] = " << got << ", expected " << expect
                                      << (inside ? "" : " (outside the range)"));
  }
  INFO(plan.policy().str());
  REQUIRE(wrong == 0);
}

void check_sub_ranges() {
  const std::string variant = GENERATE(from_range(scan_names()));
  const bool exclusive = GENERATE(false, true);
  const bool segmented = GENERATE(false, true);
  // 4-byte elements into 8-byte (sum) and into 4-byte (min) outputs.
  const Case c = GENERATE(Case{Op::kSum, DType::kInt32}, Case{Op::kMin, DType::kUInt32});
  Context& ctx = device_context();
  const DType acc = acc_dtype(c.op, c.type);
  // Sub-buffers start at multiples of the base address alignment, in every array the range reads.
  const std::size_t smallest = segmented ? 1 : std::min(dtype_size(c.type), dtype_size(acc));
  const std::size_t step = std::max<std::size_t>(1, ctx.base_align() / smallest);
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(variant, op_name(c.op), dtype_name(c.type), exclusive, segmented, step, seed);
  const std::size_t longest = 20011;
  const std::size_t n = 9 * step + longest;
  const HostArray x = generate(c.type, n, seed);
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> flags(n);
  for (auto& f : flags) f = rng() % 400 == 0;
  flags[3 * step] = 1;  // one range starts on a segment start: the carry stops at once
  const ScanVariant& v = *find_scan_variant(variant);
  const auto plan = v.plan(ctx, problem_of(c, longest, exclusive, segmented, true), 64);
  const auto plain = v.plan(ctx, problem_of(c, longest, exclusive, segmented, false), 64);
  // Carries: a sum's running value, a min below most values.
  const std::int64_t carry = c.op == Op::kSum ? -123456789 : 50;
  struct Range {
    std::size_t offset, length;
  };
  for (const Range& r :
       {Range{0, 1}, Range{step, 1}, Range{step, 2}, Range{3 * step, 17}, Range{5 * step, 1000},
        Range{2 * step, 7919}, Range{7 * step, 4097}, Range{9 * step, longest}}) {
    CAPTURE(r.offset, r.length);
    check_range(ctx, *plan, x, flags, c, r.offset, r.length, carry);
    check_range(ctx, *plan, x, flags, c, r.offset, r.length, std::nullopt);
    check_range(ctx, *plain, x, flags, c, r.offset, r.length, std::nullopt);
  }
  // A plan made for exactly the range.
  const auto exact = v.plan(ctx, problem_of(c, 4097, exclusive, segmented, true), 64);
  check_range(ctx, *exact, x, flags, c, 7 * step, 4097, carry);
}

}  // namespace

TEST_CASE(
    "scan plans run on sub-ranges with a carry-in, inclusive and exclusive, plain and segmented",
    "[scan][plan]") {
  check_sub_ranges();
}

TEST_CASE("a scan chained chunk by chunk through the carry equals the whole scan", "[scan][plan]") {
  const std::string variant = GENERATE(from_range(scan_names()));
  const bool segmented = GENERATE(false, true);
  CAPTURE(variant, segmented);
  Context& ctx = device_context();
  const Case c{Op::kSum, DType::kInt32};
  const std::size_t chunk = 40 * ctx.base_align();  // a multiple of the alignment in every array
  const std::size_t n = 3 * chunk + 1001;           // the last chunk partial
  const HostArray x = generate(c.type, n, 77);
  std::vector<std::uint8_t> flags(n, 0);
  for (std::size_t i = 500; i < n; i += 3001) flags[i] = 1;
  const auto plan =
      find_scan_variant(variant)->plan(ctx, problem_of(c, chunk, false, segmented, true), 0);
  const cl::Buffer in = upload(ctx, x.bytes.data(), x.bytes.size());
  const cl::Buffer f = upload(ctx, flags.data(), flags.size());
  std::vector<std::int64_t> y(n, 0);
  const cl::Buffer out = upload(ctx, y.data(), n * 8);
  std::vector<cl::Event> events;
  std::optional<Value> carry;
  for (std::size_t lo = 0; lo < n; lo += chunk) {
    const std::size_t len = std::min(chunk, n - lo);
    plan->enqueue(in, f, out, lo, len, carry ? &*carry : nullptr, events);
    std::int64_t last = 0;
    ctx.queue().enqueueReadBuffer(out, CL_TRUE, (lo + len - 1) * 8, 8, &last);
    carry = carry_value(DType::kInt64, last);  // the inclusive scan's last element
  }
  ctx.queue().enqueueReadBuffer(out, CL_TRUE, 0, n * 8, y.data());
  const auto want =
      host_scan(x, segmented ? flags : std::vector<std::uint8_t>{}, c, false, 0, n, std::nullopt);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (static_cast<std::uint64_t>(y[i]) != want[i] && wrong++ == 0)
      UNSCOPED_INFO("first wrong: y[" << i << "] = " << y[i] << ", expected " << want[i]);
  REQUIRE(wrong == 0);
}

TEST_CASE("look-back plans with a carry-in on sub-ranges, predecessors read or folded",
          "[scan][plan][lookback]") {
  // scan-fast's look-back path (NVIDIA GPUs' choice) forced, as a library call plans it;
  // lookback-limit 0: each group folds the tiles before its own in the kernel (tile 0 with the
  // carry-in); the default: descriptors read.
  Context& ctx = device_context();
  const std::string limit = GENERATE(std::string("0"), std::string(""));
  const test::TuningGuard path(ctx, "scan-fast-path", "lookback");
  const test::TuningGuard bound(ctx, "lookback-limit", limit);
  const std::size_t step = std::max<std::size_t>(1, ctx.base_align());
  const std::size_t longest = 20011, n = 4 * step + longest;
  std::mt19937_64 rng(31);
  std::vector<std::uint8_t> flags(n);
  for (auto& f : flags) f = rng() % 400 == 0;
  flags[2 * step] = 1;  // one range starts on a segment start: the carry stops at once
  struct Form {
    Case c;
    bool exclusive, segmented;
  };
  for (const Form& f : {Form{{Op::kSum, DType::kInt32}, false, false},
                        Form{{Op::kSum, DType::kInt32}, true, false},
                        Form{{Op::kSum, DType::kInt32}, false, true},
                        Form{{Op::kSum, DType::kInt32}, true, true},
                        Form{{Op::kMin, DType::kUInt32}, true, true}}) {
    CAPTURE(limit, op_name(f.c.op), f.exclusive, f.segmented);
    const HostArray x = generate(f.c.type, n, 31);
    const auto plan =
        make_named_scan_plan(ctx, problem_of(f.c, longest, f.exclusive, f.segmented, true), "", 0);
    INFO(plan->policy().str());
    CHECK_THAT(plan->policy().path, ContainsSubstring("scan-lookback: look-back"));
    CHECK((plan->policy().path.find(", limit 0") != std::string::npos) == (limit == "0"));
    const std::int64_t carry = f.c.op == Op::kSum ? -123456789 : 50;
    check_range(ctx, *plan, x, flags, f.c, 0, longest, carry);
    check_range(ctx, *plan, x, flags, f.c, 2 * step, 7919, carry);
    check_range(ctx, *plan, x, flags, f.c, 3 * step, 4097, std::nullopt);
    check_range(ctx, *plan, x, flags, f.c, step, 1, carry);
  }
}

namespace {

// The tile of a look-back plan: scan-lookback's group times its elements per work-item, the CPU
// look-back's elements per work-item (one work-item a tile).
std::size_t lookback_tile(const ScanPlan& plan) {
  return plan.policy().wg_size * plan.policy().items_per_thread;
}

// Segment starts placed against the folds of lookback-limit 0 (each tile folds the three before
// it from the input, in the kernel), relative to a range of 12 tiles and a partial one: none in
// tiles 0-3 (tiles 1-3 fold tile 0, which takes the carry-in; tile 4 folds 3, 2 and 1 and reads
// tile 0's descriptor), one inside tile 5 (tiles 6-8 fold it as an inclusive prefix: the value
// since that start), tile 7's last element, tile 9's first (no look-back; tile 10 folds it whole).
std::vector<std::uint8_t> fold_flags(std::size_t size, std::size_t offset, std::size_t tile) {
  std::vector<std::uint8_t> f(size, 0);
  f[offset + 5 * tile + tile / 2 + 3] = 1;
  f[offset + 8 * tile - 1] = 1;
  f[offset + 9 * tile] = 1;
  return f;
}

// Runs plan on x[offset, offset + length) (flags over the same range when the plan is
// segmented) from `carry` (none: nullopt) and compares every element exactly with the host's
// loop, which restarts at the identity at each start; outside the range the output keeps its
// sentinel. op(a, b) is the plan's operator on A (wrapping for integers).
template <class T, class A, class Op2>
void check_exact(Context& ctx, ScanPlan& plan, const std::vector<T>& x,
                 const std::vector<std::uint8_t>& flags, std::size_t offset, std::size_t length,
                 std::optional<A> carry, A identity, Op2 op) {
  const ScanProblem& p = plan.problem();
  REQUIRE(p.acc_bytes() == sizeof(A));
  std::vector<A> y(x.size());
  std::memset(y.data(), 0xA5, y.size() * sizeof(A));
  const std::vector<A> sentinel = y;
  const cl::Buffer in = upload(ctx, x.data(), x.size() * sizeof(T));
  const cl::Buffer f = upload(ctx, flags.data(), flags.size());
  const cl::Buffer out = upload(ctx, y.data(), y.size() * sizeof(A));
  Value cv;
  cv.type = p.acc_type;
  if (carry) {
    if constexpr (std::is_floating_point_v<A>)
      cv.f = static_cast<double>(*carry);
    else if constexpr (std::is_signed_v<A>)
      cv.i = static_cast<std::int64_t>(*carry);
    else
      cv.u = static_cast<std::uint64_t>(*carry);
  }
  std::vector<cl::Event> events;
  plan.enqueue(in, f, out, offset, length, carry ? &cv : nullptr, events);
  ctx.queue().enqueueReadBuffer(out, CL_TRUE, 0, y.size() * sizeof(A), y.data());
  A run = carry.value_or(identity);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    A want = sentinel[i];
    if (i >= offset && i < offset + length) {
      if (p.segmented && flags[i]) run = identity;
      const A next = op(run, static_cast<A>(x[i]));
      want = p.exclusive ? run : next;
      run = next;
    }
    if (std::memcmp(&y[i], &want, sizeof(A)) != 0 && wrong++ == 0)
      UNSCOPED_INFO("first wrong: y[" << i << "] = " << +y[i] << ", expected " << +want << " (tile "
                                      << (i - offset) / lookback_tile(plan) << " of the range)");
  }
  INFO(plan.policy().str());
  REQUIRE(wrong == 0);
}

}  // namespace

TEST_CASE("look-back kernels fold stalled predecessors exactly: order, tile, segments, carry",
          "[scan][plan][lookback]") {
  // lookback-limit 0: every group folds the three tiles before its own from the input in the
  // kernel (the decoupled fallback) instead of reading their descriptors, deterministically.
  // A fold that combined out of order, read the wrong tile, missed a segment start in the tile
  // it folds or dropped the carry-in of tile 0 gives wrong elements here. Both look-back
  // kernels: scan-lookback (warp shuffles where the device has them: its own group size) and,
  // on CPUs, scan-fast's CPU look-back (tiles of 1024).
  Context& ctx = device_context();
  const test::TuningGuard bound(ctx, "lookback-limit", "0");
  const test::TuningGuard tile_len(ctx, "scan-tile", "1024");
  const std::string kernel = GENERATE(std::string("scan-lookback"), std::string("cpu-lookback"));
  if (kernel == "cpu-lookback" && ctx.info().is_gpu) SKIP("the CPU look-back is for CPUs");
  const test::TuningGuard path(ctx, "scan-fast-path",
                               kernel == "cpu-lookback" ? "cpu-lookback" : "");
  CAPTURE(kernel);
  const std::size_t step = std::max<std::size_t>(1, ctx.base_align());
  const auto make = [&](Op op, DType type, DType acc, bool exclusive, bool segmented) {
    ScanProblem p;
    p.op = op;
    p.type = type;
    p.acc_type = acc;
    p.n = 1;
    p.exclusive = exclusive;
    p.segmented = segmented;
    p.carry_in = true;
    const ScanVariant& v = *find_scan_variant(kernel == "cpu-lookback" ? "scan-fast" : kernel);
    if (!v.unsupported(ctx, p).empty()) SKIP(v.unsupported(ctx, p));
    const std::size_t local = kernel == "cpu-lookback" || ctx.info().is_gpu ? 0 : 16;
    const std::size_t tile = lookback_tile(*v.plan(ctx, p, local));
    p.n = 12 * tile + 333;
    std::unique_ptr<ScanPlan> plan = v.plan(ctx, p, local);
    REQUIRE(lookback_tile(*plan) == tile);
    REQUIRE_THAT(plan->policy().path,
                 ContainsSubstring(kernel == "cpu-lookback" ? "cpu look-back: 13 tiles"
                                                            : "look-back, 1 launch"));
    if (kernel == "scan-lookback") REQUIRE_THAT(plan->policy().path, ContainsSubstring("limit 0"));
    return plan;
  };
  std::mt19937_64 rng(77);
  for (const bool exclusive : {false, true}) {
    for (const bool segmented : {false, true}) {
      CAPTURE(exclusive, segmented);
      // int32 summed into int64, wrapping into int32, int64 max, float sums of small integers
      // (every partial sum exact, in any order).
      {
        const auto plan = make(Op::kSum, DType::kInt32, DType::kInt64, exclusive, segmented);
        const std::size_t t = lookback_tile(*plan), m = plan->problem().n;
        std::vector<std::int32_t> x(step + m);
        for (auto& v : x) v = static_cast<std::int32_t>(rng() % 2001) - 1000;
        const auto sum = [](std::int64_t a, std::int64_t b) { return a + b; };
        for (const std::size_t off : {std::size_t{0}, step}) {
          const auto flags = fold_flags(x.size(), off, t);
          check_exact<std::int32_t, std::int64_t>(ctx, *plan, x, flags, off, m - off,
                                                  std::int64_t{-123456789}, 0, sum);
          check_exact<std::int32_t, std::int64_t>(ctx, *plan, x, flags, off, m - off, std::nullopt,
                                                  0, sum);
        }
      }
      {
        const auto plan = make(Op::kSum, DType::kInt32, DType::kInt32, exclusive, segmented);
        const std::size_t t = lookback_tile(*plan), m = plan->problem().n;
        std::vector<std::int32_t> x(step + m);
        for (auto& v : x) v = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));
        const auto wrap = [](std::int32_t a, std::int32_t b) {
          return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) +
                                           static_cast<std::uint32_t>(b));
        };
        check_exact<std::int32_t, std::int32_t>(ctx, *plan, x, fold_flags(x.size(), step, t), step,
                                                m - step, std::int32_t{2000000000}, 0, wrap);
      }
      {
        const auto plan = make(Op::kMax, DType::kInt64, DType::kInt64, exclusive, segmented);
        const std::size_t t = lookback_tile(*plan), m = plan->problem().n;
        std::vector<std::int64_t> x(m);
        for (auto& v : x) v = static_cast<std::int64_t>(rng() % 1000000) - 2000000;
        // A carry above every element: it is the running max up to the first segment start,
        // through the tiles that fold tile 0.
        const auto mx = [](std::int64_t a, std::int64_t b) { return std::max(a, b); };
        check_exact<std::int64_t, std::int64_t>(ctx, *plan, x, fold_flags(m, 0, t), 0, m,
                                                std::int64_t{-5}, INT64_MIN, mx);
      }
      {
        const auto plan = make(Op::kSum, DType::kFloat, DType::kFloat, exclusive, segmented);
        const std::size_t t = lookback_tile(*plan), m = plan->problem().n;
        std::vector<float> x(m);
        for (auto& v : x) v = static_cast<float>(static_cast<int>(rng() % 7) - 3);
        const auto sum = [](float a, float b) { return a + b; };
        check_exact<float, float>(ctx, *plan, x, fold_flags(m, 0, t), 0, m, 1000.0f, 0.0f, sum);
      }
    }
  }
}

TEST_CASE("a scan plan refuses carries and ranges it cannot take", "[scan][plan]") {
  Context& ctx = device_context();
  const Case c{Op::kSum, DType::kInt32};
  const HostArray x = generate(c.type, 4096, 5);
  const cl::Buffer in = upload(ctx, x.bytes.data(), x.bytes.size());
  const std::vector<std::uint8_t> flags(4096, 0);
  const cl::Buffer f = upload(ctx, flags.data(), flags.size());
  const cl::Buffer out = upload(ctx, std::vector<std::int64_t>(4096).data(), 4096 * 8);
  const auto plain =
      find_scan_variant("scan-blelloch")->plan(ctx, problem_of(c, 1000, false, true, false), 0);
  const auto carried =
      find_scan_variant("scan-blelloch")->plan(ctx, problem_of(c, 1000, false, true, true), 0);
  const Value good = carry_value(DType::kInt64, 5), bad = carry_value(DType::kInt32, 5);
  std::vector<cl::Event> events;
  struct Bad {
    ScanPlan* plan;
    std::size_t offset, length;
    const Value* carry;
    const char* says;
  };
  for (const Bad& b : {Bad{plain.get(), 0, 100, &good, "made without one"},
                       Bad{carried.get(), 0, 100, &bad, "a carry of type int32"},
                       Bad{carried.get(), 0, 1001, nullptr, "cannot scan 1001"},
                       Bad{carried.get(), 0, 0, nullptr, "cannot scan 0"},
                       Bad{carried.get(), 4000, 200, nullptr, "pass the end"},
                       // 32 int32 elements are 128 bytes of input, but 32 flag bytes.
                       Bad{carried.get(), 32, 100, nullptr, "base address alignment"},
                       Bad{carried.get(), 3, 100, nullptr, "base address alignment"}}) {
    CAPTURE(b.offset, b.length, b.says);
    if (std::string(b.says) == "base address alignment" && (b.offset % ctx.base_align()) == 0)
      continue;
    try {
      b.plan->enqueue(in, f, out, b.offset, b.length, b.carry, events);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.category() == Errc::kUsage);
      CHECK_THAT(e.what(), ContainsSubstring(b.says));
    }
  }
  try {
    find_scan_variant("scan-fast")->plan(ctx, problem_of(c, 0, false, false, false), 0);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kUsage);
  }
}

// Small enough for Oclgrind: tests/oclgrind.sh runs this under it, so the carry-in pass
// (cl/scan_carry.cl) and plans on sub-buffers are checked like every kernel the CLI runs.
TEST_CASE("carry-in and sub-range plans on small arrays", "[.oclgrind]") {
  // A context of its own: the shared one lives until exit, past Oclgrind's own teardown.
  Context ctx(device_context_info(), CLREDUCE_SOURCE_KERNEL_DIR, false, tuning_from_env());
  const Case c{Op::kSum, DType::kInt32};
  const std::size_t step = std::max<std::size_t>(1, ctx.base_align());  // aligned for flags too
  const std::size_t n = step + 300;
  const HostArray x = generate(c.type, n, 9);
  std::vector<std::uint8_t> flags(n, 0);
  for (std::size_t i = step + 40; i < n; i += 70) flags[i] = 1;
  for (const bool segmented : {false, true}) {  // both forms of the pass; exclusive with flags
    CAPTURE(segmented);
    const auto plan = find_scan_variant("scan-hierarchical")
                          ->plan(ctx, problem_of(c, 300, segmented, segmented, true), 16);
    check_range(ctx, *plan, x, flags, c, step, 300, 1000);
  }
  // The look-back plan as a library call makes it (scan-fast's path forced), reading its
  // predecessors' descriptors and, with lookback-limit 0, folding them in the kernel (tile 0
  // with the carry-in): segmented and exclusive, with a carry-in, in groups of 16 (three tiles
  // of 128).
  ctx.tuning().scan_fast_path = "lookback";
  for (const long long limit : {-1LL, 0LL}) {
    CAPTURE(limit);
    ctx.tuning().lookback_limit = limit;
    const auto plan = make_named_scan_plan(ctx, problem_of(c, 300, true, true, true), "", 16);
    REQUIRE_THAT(plan->policy().path, ContainsSubstring("scan-lookback: look-back"));
    check_range(ctx, *plan, x, flags, c, step, 300, 1000);
  }
  // A reduction on a sub-buffer: every read stays inside the range.
  ReduceProblem p;
  p.op = Op::kArgMin;
  p.type = DType::kInt32;
  p.acc_type = DType::kInt32;
  p.n = 300;
  const auto plan = find_reduce_variant("topdown")->plan(ctx, p, 16);
  const cl::Buffer in = upload(ctx, x.bytes.data(), x.bytes.size());
  std::vector<unsigned char> r(16, 0xA5);
  const cl::Buffer out = upload(ctx, r.data(), r.size());
  std::vector<cl::Event> events;
  plan->enqueue(in, step, 300, out, events);
  ctx.queue().enqueueReadBuffer(out, CL_TRUE, 0, 16, r.data());
  std::int64_t index = -1;
  std::memcpy(&index, r.data() + 8, 8);
  std::int64_t want = 0;
  for (std::int64_t i = 1; i < 300; ++i)
    if (x.as<std::int32_t>()[step + static_cast<std::size_t>(i)] <
        x.as<std::int32_t>()[step + static_cast<std::size_t>(want)])
      want = i;
  CHECK(index == want);
}
