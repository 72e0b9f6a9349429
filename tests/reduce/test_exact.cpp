// test_exact.cpp: `exact` on the device, bit for bit against the host's correctly rounded sum:
// catastrophic cancellation, magnitudes from subnormal to the largest finite value in one array,
// ties at the final rounding (to even, both ways, and into the next binade), overflow to
// infinity, inf and NaN anywhere, signed zeros, n = 0 and 1; in both shapes, under several group
// sizes and group counts, on sizes around every boundary of the kernel; and the same bits
// whatever the launch.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "clreduce/error.hpp"
#include "io/data.hpp"
#include "run/fold.hpp"
#include "run/runner.hpp"
#include "test_helpers.hpp"
#include "verify/exact_sum.hpp"

using namespace clreduce;
using clreduce::test::device_context;
using clreduce::test::make_array;
using clreduce::test::TuningGuard;

namespace {

// One run of `exact`: shape "" (the device's), "gpu" or "cpu"; groups "" (the shape's) or a count.
RunRecord run_exact(const HostArray& a, std::size_t local = 0, const std::string& shape = "",
                    const std::string& groups = "") {
  const TuningGuard s(device_context(), "exact-shape", shape);
  const TuningGuard g(device_context(), "exact-groups", groups);
  RunConfig cfg;
  cfg.warmup = 0;
  cfg.repeat = 1;
  cfg.local_size = local;
  ReduceSession session(device_context(), a, Op::kSum, cfg);
  return session.run(*find_reduce_variant("exact"));
}

using clreduce::test::bits;

// Requires the run to be verified and bitwise equal to the host's exact sum (and to `want`,
// when given: a case whose answer is known by hand).
void require_exact(const RunRecord& r, const HostArray& a, const Value* want = nullptr) {
  const Value ref = exact_sum(a);
  INFO("result " << r.result.str() << ", exact " << ref.str() << ": " << r.verify_note << "; "
                 << r.policy.str() << "; n = " << a.n);
  REQUIRE_FALSE(r.skipped);
  REQUIRE(r.policy.correctly_rounded);
  REQUIRE(bits(r.result) == bits(ref));
  REQUIRE(r.verified);
  if (want) REQUIRE(bits(r.result) == bits(*want));
}

template <class T> HostArray array_of(const std::vector<T>& v) {
  return make_array(std::is_same_v<T, float> ? DType::kFloat : DType::kDouble, v);
}

template <class T> Value value_of(T x) {
  Value v;
  v.type = std::is_same_v<T, float> ? DType::kFloat : DType::kDouble;
  v.f = static_cast<double>(x);
  return v;
}

// n elements over the type's whole range of binades (subnormals and values near the largest
// finite included), signs mixed: every path of the kernel, the expansions overflowing often.
template <class T> std::vector<T> wide(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int lo = std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits;
  // Up to 2^104 (float) or 2^994 (double: past 2^960, where elements skip the expansions), so
  // that a million of them rarely overflow; the hard cases go up to the largest finite value.
  const int hi = std::numeric_limits<T>::max_exponent - (std::is_same_v<T, float> ? 24 : 30);
  std::vector<T> v(n);
  for (auto& x : v) {
    const T u = static_cast<T>(static_cast<double>(rng() >> 11) * 0x1p-53);
    const int e = rng() % 4 == 0
                      ? lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo))
                      : static_cast<int>(rng() % 41) - 20;
    x = std::ldexp(u, e) * (rng() & 1 ? T(1) : T(-1));
  }
  return v;
}

// `hard` placed among n - hard.size() elements that cancel in pairs (a wide range of magnitudes,
// shuffled), so the exact sum is hard's while every group and work-item sees big numbers.
template <class T>
std::vector<T> hidden(const std::vector<T>& hard, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v;
  const std::size_t pairs = (n - std::min(n, hard.size())) / 2;
  for (std::size_t i = 0; i < pairs; ++i) {
    const int e = static_cast<int>(rng() % 60) - 30;
    const T x = std::ldexp(static_cast<T>(static_cast<double>(rng() >> 11) * 0x1p-53), e);
    v.push_back(x);
    v.push_back(-x);
  }
  while (v.size() + hard.size() < n) v.push_back(T(0));
  std::shuffle(v.begin(), v.end(), rng);
  // The hard elements at the start, the end and spread between (the tail, several groups).
  for (std::size_t i = 0; i < hard.size(); ++i)
    v.insert(v.begin() + static_cast<std::ptrdiff_t>(
                             hard.size() == 1 ? v.size() / 2 : i * v.size() / (hard.size() - 1)),
             hard[i]);
  return v;
}

using clreduce::test::every_exponent;

// n >= 4 elements: pairs x, -x with every exponent up to top and 4 or 5 of the smallest
// subnormal, shuffled.
template <class T> std::vector<T> hidden_pairs(std::size_t n, std::uint64_t seed, unsigned top) {
  std::vector<T> v = every_exponent<T>((n - 4) / 2, seed, top);
  for (std::size_t i = 0, m = v.size(); i < m; ++i) v.push_back(-v[i]);
  while (v.size() < n) v.push_back(std::numeric_limits<T>::denorm_min());
  std::mt19937_64 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// The launches every hard case runs under: the device's shape at its own size, each shape
// forced, with small and odd group sizes, and spread over 7 groups.
struct Launch {
  std::string shape;
  std::size_t local;
  std::string groups;
};
const std::vector<Launch>& launches() {
  static const std::vector<Launch> l = {{"", 0, ""},     {"gpu", 0, ""},  {"gpu", 3, "7"},
                                        {"gpu", 16, ""}, {"cpu", 0, "7"}, {"cpu", 5, ""}};
  return l;
}

template <class T> void check_case(const std::vector<T>& hard, T want, const char* what) {
  const Value w = value_of(want);
  for (std::size_t n : {hard.size(), std::size_t{1000}, std::size_t{20011}}) {
    const HostArray a = array_of(n == hard.size() ? hard : hidden(hard, n, n));
    // The pairs make a zero sum +0; otherwise the answer is the hand-checked one.
    const bool signed_zero = want == T(0) && n != hard.size();
    for (const Launch& l : launches()) {
      CAPTURE(what, n, l.shape, l.local, l.groups);
      require_exact(run_exact(a, l.local, l.shape, l.groups), a, signed_zero ? nullptr : &w);
    }
  }
}

template <class T> void hard_cases() {
  using L = std::numeric_limits<T>;
  const T mx = L::max(), den = L::denorm_min(), mn = L::min(), inf = L::infinity(),
          nan = L::quiet_NaN();
  const T half = std::ldexp(T(1), -L::digits);                      // half an ulp of 1
  const T big = std::ldexp(T(1), L::max_exponent - L::digits - 1);  // half an ulp of max()
  check_case<T>({T(1e30), T(3.25), T(-1e30)}, T(3.25), "cancellation");
  check_case<T>({mx, den, -mx, mn, -den}, mn, "largest, smallest, cancelling");
  check_case<T>({mx, mx, -mx}, mx, "no intermediate overflow");
  check_case<T>({den, den, den, -mn}, 3 * den - mn, "subnormals");
  check_case<T>({T(1), half}, T(1), "tie, even: down");
  check_case<T>({T(1) + 2 * half, half}, T(1) + 4 * half, "tie, odd: up");
  check_case<T>({-T(1) - 2 * half, -half}, -T(1) - 4 * half, "negative tie, odd: up in magnitude");
  check_case<T>({T(1), half, den}, T(1) + 2 * half, "above the tie by 2^-149 / 2^-1074");
  check_case<T>({T(1), half, -den}, T(1), "below the tie by 2^-149 / 2^-1074");
  check_case<T>({T(2) - 2 * half, half}, T(2), "tie rounding into the next binade");
  check_case<T>({std::ldexp(T(1), 100), T(1), -std::ldexp(T(1), 100), half / 2, half / 2}, T(1),
                "a tie made of far-apart elements");
  check_case<T>({mx, mx}, inf, "overflow");
  check_case<T>({-mx, -mx, mx, -mx}, -inf, "negative overflow");
  check_case<T>({mx, big}, inf, "overflow by a tie");
  check_case<T>({mx, big, -den}, mx, "just below overflow");
  check_case<T>({inf, T(1), -mx}, inf, "+inf");
  check_case<T>({T(1), -inf, mx, mx}, -inf, "-inf beats a finite overflow");
  check_case<T>({inf, T(2), -inf}, nan, "+inf and -inf");
  check_case<T>({T(2), nan, T(3)}, nan, "NaN");
  check_case<T>({-T(0), -T(0), -T(0)}, T(0), "all -0: +0, as NumPy's sum");
  check_case<T>({-T(0), T(0), -T(0)}, T(0), "-0 and +0");
  check_case<T>({T(1), -T(1)}, T(0), "an exact zero is +0");
}

}  // namespace

TEST_CASE("exact: hard cases bit for bit, in both shapes, groups of 1 to 256, 1 to 7 groups",
          "[exact]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  SECTION("float") { hard_cases<float>(); }
  SECTION("double") { hard_cases<double>(); }
}

TEST_CASE("exact: n = 0 is +0, n = 1 is the element itself", "[exact]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  const RunRecord z = run_exact(array_of<float>({}));
  CHECK(bits(z.result) == 0);
  CHECK(z.verified);
  const float f[] = {-0.0f,
                     0.0f,
                     FLT_MAX,
                     -FLT_MIN,
                     std::numeric_limits<float>::denorm_min(),
                     1.5f,
                     -std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::quiet_NaN()};
  for (float x : f) {
    CAPTURE(x);
    const HostArray a = array_of<float>({x});
    for (const Launch& l : launches()) require_exact(run_exact(a, l.local, l.shape, l.groups), a);
  }
  const double d[] = {-0.0,      DBL_MAX,  -std::numeric_limits<double>::denorm_min(),
                      0x1p-1000, 0x1p1000, std::numeric_limits<double>::infinity()};
  for (double x : d) {
    CAPTURE(x);
    const HostArray a = array_of<double>({x});
    for (const Launch& l : launches()) require_exact(run_exact(a, l.local, l.shape, l.groups), a);
  }
}

TEST_CASE("exact: sizes around every boundary of both shapes, on data over the whole range",
          "[exact]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  const std::string shape = GENERATE(std::string("gpu"), std::string("cpu"));
  const DType type = GENERATE(DType::kFloat, DType::kDouble);
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(shape, dtype_name(type), seed);
  // Vectors of 8 (CPU) or 16 bytes (GPU): tails of every length; CPU: runs in 2 streams, blocks
  // of 64 steps (1024 elements in a run), a second group past 4096 vectors (32768 elements);
  // GPU: one vector per work-item of 256 fills a group (1024 floats, 512 doubles), 4 vectors in
  // flight, at most 4 groups per compute unit.
  std::vector<std::size_t> sizes = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65};
  for (std::size_t b : {511, 1023, 2047, 3071, 4095, 8191, 12287, 32767, 32775, 65535, 131071})
    for (std::size_t d : {0, 1, 2, 9}) sizes.push_back(b + d);
  sizes.push_back(1000003);
  for (std::size_t n : sizes) {
    CAPTURE(n);
    const HostArray a = type == DType::kFloat ? array_of(wide<float>(n, seed + n))
                                              : array_of(wide<double>(n, seed + n));
    require_exact(run_exact(a, 0, shape), a);
  }
}

TEST_CASE(
    "exact: each store of the GPU shape on data over the whole exponent range: flushes, "
    "merges, cancellation, specials",
    "[exact]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  using L = std::numeric_limits<float>;
  const std::string store =
      GENERATE(std::string("item"), std::string("expansions"), std::string("group"));
  const DType type = GENERATE(DType::kFloat, DType::kDouble);
  const TuningGuard st(device_context(), "exact-store", store);
  const bool f = type == DType::kFloat;
  const unsigned top = f ? 254 : 2046, finite_top = f ? 254 - 26 : 2046 - 32;
  // One work-item alone (its float bins flushed after 8192 elements: sizes around 8192 and
  // 16384 plus a loop step of 16), odd group sizes, and the shape's own.
  struct Case {
    std::size_t local;
    std::string groups;
    std::vector<std::size_t> sizes;
  };
  const std::vector<Case> cases = {{1, "1", {8191, 8192, 8193, 8207, 8208, 8209, 16401, 40000}},
                                   {3, "2", {1000, 20011}},
                                   {16, "3", {1000, 20011}},
                                   {0, "", {20011, 100003}}};
  // The path each store must take (a shape that fails its start-up check falls back to the
  // other, which would hide a broken store).
  const std::string path = store == "item"               ? (f ? "item bins" : "item limbs")
                           : store == "expansions" && !f ? "fpe2 + item limbs"
                                                         : "fpe2 ticket";
  {
    const HostArray a = f ? array_of(every_exponent<float>(100, 1, top))
                          : array_of(every_exponent<double>(100, 1, top));
    const RunRecord r = run_exact(a, 0, "gpu");
    INFO(r.policy.path);
    REQUIRE(r.policy.path.find("gpu-shape") == 0);
    REQUIRE(r.policy.path.find(path) != std::string::npos);
  }
  for (const Case& c : cases)
    for (std::size_t n : c.sizes) {
      CAPTURE(store, dtype_name(type), c.local, c.groups, n);
      auto arr = [&](auto v) { return array_of(v); };
      auto make = [&](unsigned t, std::uint64_t seed) {
        return f ? arr(every_exponent<float>(n, seed, t)) : arr(every_exponent<double>(n, seed, t));
      };
      // Every finite exponent: the sum overflows (or not) as the host says.
      const HostArray whole = make(top, n);
      require_exact(run_exact(whole, c.local, "gpu", c.groups), whole);
      // Exponents up to where the sum stays finite.
      const HostArray fin = make(finite_top, n + 1);
      require_exact(run_exact(fin, c.local, "gpu", c.groups), fin);
      // Pairs x, -x over every finite exponent around a few subnormals: only these are left.
      HostArray pairs =
          f ? arr(hidden_pairs<float>(n, n + 2, top)) : arr(hidden_pairs<double>(n, n + 2, top));
      require_exact(run_exact(pairs, c.local, "gpu", c.groups), pairs);
      if (n > 20011) continue;
      // inf, -inf and NaN among them; a +inf alone, then both (NaN).
      for (int k = 0; k < 3; ++k) {
        HostArray s = make(finite_top, n + 3 + k);
        auto put = [&](std::size_t i, double x) {
          if (f) {
            const float y = static_cast<float>(x);
            std::memcpy(s.bytes.data() + i * 4, &y, 4);
          } else {
            std::memcpy(s.bytes.data() + i * 8, &x, 8);
          }
        };
        put(n / 3, L::infinity());
        if (k >= 1) put(n - 1, -static_cast<double>(L::infinity()));
        if (k == 2) put(n / 2, std::numeric_limits<double>::quiet_NaN());
        require_exact(run_exact(s, c.local, "gpu", c.groups), s);
      }
      // All -0, then one +0 among them: +0 both (NumPy's sum adds from +0).
      HostArray z = f ? arr(std::vector<float>(n, -0.0f)) : arr(std::vector<double>(n, -0.0));
      require_exact(run_exact(z, c.local, "gpu", c.groups), z);
      std::memset(z.bytes.data() + (n / 2) * (f ? 4 : 8), 0, f ? 4 : 8);
      require_exact(run_exact(z, c.local, "gpu", c.groups), z);
    }
}

TEST_CASE("exact: the CPU shape's float blocks are kept only within their window of binades",
          "[exact]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  // One work-item (1 group of 1; 2048 floats: 2 streams of 128 vectors of 8, blocks of 64
  // steps). Lane 0 of stream 0 sees x[8 i]: 33 bigs (the running sum passes 2^(k+6)), one small
  // d binades lower with its last bit set, 30 -bigs in its first block, 3 more in the next.
  // d = 23 is inside the window (the block's plain double sum is exact and kept); at d = 24 a
  // plain sum would lose the small's last bit, one ulp of the exact result: the block must be
  // redone exactly.
  for (int d : {22, 23, 24, 25}) {
    CAPTURE(d);
    const float big = std::ldexp(2.0f - 0x1p-23f, 10), small = std::ldexp(1.0f + 0x1p-23f, 10 - d);
    std::vector<float> v(2048, 0.0f);
    for (std::size_t i = 0; i < 33; ++i) v[8 * i] = big;
    v[8 * 33] = small;
    for (std::size_t i = 34; i < 67; ++i) v[8 * i] = -big;
    const HostArray a = array_of(v);
    const Value want = value_of(small);
    require_exact(run_exact(a, 1, "cpu", "1"), a, &want);
  }
}

TEST_CASE("exact: data over 40 binades, an ill-conditioned sum (the CPU shape's middle path)",
          "[exact]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  // Pairs x, -x over 41 binades and a few small values: float blocks too wide for plain double
  // sums but within the expansions; for doubles, the cascade's common case.
  std::mt19937_64 rng(12);
  std::vector<float> f;
  std::vector<double> d;
  for (int i = 0; i < 50000; ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1p-53 * 2.0 - 1.0;
    const int e = static_cast<int>(rng() % 41) - 20;
    f.push_back(std::ldexp(static_cast<float>(u), e));
    d.push_back(std::ldexp(u, e));
  }
  for (std::size_t i = 0, m = f.size(); i < m; ++i) {
    f.push_back(-f[i]);
    d.push_back(-d[i]);
  }
  for (int i = 0; i < 100; ++i) {
    f.push_back(std::ldexp(static_cast<float>(rng() % 1000), -20));
    d.push_back(std::ldexp(static_cast<double>(rng() % 1000), -60));
  }
  std::shuffle(f.begin(), f.end(), rng);
  std::shuffle(d.begin(), d.end(), rng);
  for (const HostArray& a : {array_of(f), array_of(d)})
    for (const Launch& l : launches()) {
      CAPTURE(dtype_name(a.type), l.shape, l.local, l.groups);
      require_exact(run_exact(a, l.local, l.shape, l.groups), a);
    }
}

TEST_CASE("exact: the same bits whatever the shape, group size or group count", "[exact]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  for (DType type : {DType::kFloat, DType::kDouble}) {
    const HostArray a = type == DType::kFloat ? array_of(wide<float>(300007, 4))
                                              : array_of(wide<double>(300007, 4));
    const Value ref = exact_sum(a);
    for (const Launch& l : launches())
      for (const char* groups : {"", "1", "13"}) {
        CAPTURE(dtype_name(type), l.shape, l.local, groups);
        const RunRecord r = run_exact(a, l.local, l.shape, *groups ? groups : l.groups);
        REQUIRE(bits(r.result) == bits(ref));
      }
  }
}

TEST_CASE("exact: generated data; its error from the correctly rounded sum is 0", "[exact]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  for (DType type : {DType::kFloat, DType::kDouble}) {
    const HostArray a = generate(type, 1 << 20, 8);
    const RunRecord r = run_exact(a);
    require_exact(r, a);
    CHECK(r.has_error);
    CHECK(r.err_ulp == 0.0);
    CHECK(r.err_rel == 0.0);
  }
}

namespace {

// A device buffer holding bytes (a host write: Oclgrind counts it as initialising them).
cl::Buffer upload(Context& ctx, const std::vector<unsigned char>& bytes) {
  cl::Buffer b(ctx.context(), CL_MEM_READ_WRITE, bytes.size());
  ctx.queue().enqueueWriteBuffer(b, CL_TRUE, 0, bytes.size(), bytes.data());
  return b;
}

ReduceProblem sum_of(DType t, std::size_t n) {
  ReduceProblem p;
  p.op = Op::kSum;
  p.type = p.acc_type = t;
  p.n = n;
  return p;
}

// Runs plan on in[offset, offset + length) and returns the result read back; the exact state it
// left after it (out_bytes()) must round to the same bits.
Value run_range(Context& ctx, ReducePlan& plan, const cl::Buffer& in, std::size_t offset,
                std::size_t length) {
  std::vector<unsigned char> bytes(plan.out_bytes(), 0xA5);
  const cl::Buffer out = upload(ctx, bytes);
  std::vector<cl::Event> events;
  plan.enqueue(in, offset, length, out, events);
  ctx.queue().enqueueReadBuffer(out, CL_TRUE, 0, bytes.size(), bytes.data());
  const Value v = Value::from_bytes(plan.problem().acc_type, bytes.data());
  ReduceFold fold(plan.problem(), plan.out_bytes(), true);
  fold.add(bytes.data(), 0);
  CHECK(bits(fold.result()) == bits(v));
  return v;
}

HostArray slice(const HostArray& a, std::size_t offset, std::size_t length) {
  HostArray s;
  s.type = a.type;
  s.n = length;
  const std::size_t size = dtype_size(a.type);
  s.bytes.assign(a.bytes.begin() + static_cast<std::ptrdiff_t>(offset * size),
                 a.bytes.begin() + static_cast<std::ptrdiff_t>((offset + length) * size));
  return s;
}

}  // namespace

TEST_CASE("exact: plans on sub-ranges at awkward offsets, each chunk correctly rounded",
          "[exact][plan]") {
  Context& ctx = device_context();
  if (!ctx.info().fp64) SKIP("no fp64");
  const std::string shape = GENERATE(std::string("gpu"), std::string("cpu"));
  const DType type = GENERATE(DType::kFloat, DType::kDouble);
  const TuningGuard force(ctx, "exact-shape", shape);
  const std::size_t size = dtype_size(type);
  const std::size_t step = std::max<std::size_t>(1, ctx.base_align() / size);
  const std::size_t longest = 70001, total = 13 * step + longest;
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(shape, dtype_name(type), step, seed);
  const HostArray a = type == DType::kFloat ? array_of(wide<float>(total, seed))
                                            : array_of(wide<double>(total, seed));
  const cl::Buffer in = upload(ctx, a.bytes);
  const ReduceVariant& v = *find_reduce_variant("exact");
  // One plan for the longest range, run on shorter ones too; and a plan made for each length.
  const auto big = v.plan(ctx, sum_of(type, longest), 0);
  CHECK(big->policy().correctly_rounded);
  struct Range {
    std::size_t offset, length;
  };
  for (const Range& r :
       {Range{0, 1}, Range{step, 1}, Range{step, 2}, Range{3 * step, 17}, Range{5 * step, 255},
        Range{7 * step, 257}, Range{11 * step, 1023}, Range{2 * step, 7919},
        Range{13 * step, 65537}, Range{step, longest}, Range{13 * step, longest}}) {
    CAPTURE(r.offset, r.length);
    const Value want = exact_sum(slice(a, r.offset, r.length));
    REQUIRE(bits(run_range(ctx, *big, in, r.offset, r.length)) == bits(want));
    const auto own = v.plan(ctx, sum_of(type, r.length), 0);
    REQUIRE(bits(run_range(ctx, *own, in, r.offset, r.length)) == bits(want));
  }
}

TEST_CASE("exact: two plans interleaved on one queue keep their own superaccumulators",
          "[exact][plan]") {
  Context& ctx = device_context();
  if (!ctx.info().fp64) SKIP("no fp64");
  const HostArray a = array_of(wide<float>(100003, 31)), b = array_of(wide<double>(5001, 32));
  const cl::Buffer ina = upload(ctx, a.bytes), inb = upload(ctx, b.bytes);
  const ReduceVariant& v = *find_reduce_variant("exact");
  const auto pa = v.plan(ctx, sum_of(DType::kFloat, a.n), 0);
  const auto pb = v.plan(ctx, sum_of(DType::kDouble, b.n), 0);
  std::vector<unsigned char> ra(pa->out_bytes(), 0xA5), rb(pb->out_bytes(), 0xA5);
  const cl::Buffer outa = upload(ctx, ra), outb = upload(ctx, rb);
  std::vector<cl::Event> events;
  for (int round = 0; round < 2; ++round) {
    pa->enqueue(ina, outa, events);
    pb->enqueue(inb, outb, events);
  }
  ctx.queue().enqueueReadBuffer(outa, CL_TRUE, 0, 16, ra.data());
  ctx.queue().enqueueReadBuffer(outb, CL_TRUE, 0, 16, rb.data());
  // Its result alone does not fit: the plan leaves its exact state after it.
  const cl::Buffer small = upload(ctx, std::vector<unsigned char>(16, 0));
  try {
    pa->enqueue(ina, small, events);
    FAIL("an output of 16 bytes");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kUsage);
  }
  CHECK(bits(Value::from_bytes(DType::kFloat, ra.data())) == bits(exact_sum(a)));
  CHECK(bits(Value::from_bytes(DType::kDouble, rb.data())) == bits(exact_sum(b)));
  try {
    v.plan(
        ctx,
        [] {
          ReduceProblem p;
          p.op = Op::kMax;
          p.type = p.acc_type = DType::kFloat;
          p.n = 10;
          return p;
        }(),
        0);
    FAIL("a plan for max");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kUsage);
  }
}

// Small enough for Oclgrind (tests/oclgrind.sh runs it): exact's plans on ranges at the base
// alignment and at element offsets off any vector (the kernel takes the first element), in both
// shapes, with groups of 16 and 4.
TEST_CASE("exact: a plan on a range, small", "[.oclgrind]") {
  // A context of its own: the shared one lives until exit, past Oclgrind's own teardown.
  Context ctx(select_device(list_devices(), clreduce::test::test_device_spec()),
              CLREDUCE_SOURCE_KERNEL_DIR, false, tuning_from_env());
  if (!ctx.info().fp64) SKIP("no fp64");
  for (const char* shape : {"gpu", "cpu"}) {
    const TuningGuard force(ctx, "exact-shape", shape);
    const TuningGuard groups(ctx, "exact-groups", "3");
    for (DType type : {DType::kFloat, DType::kDouble}) {
      CAPTURE(shape, dtype_name(type));
      const std::size_t step = std::max<std::size_t>(1, ctx.base_align() / dtype_size(type));
      const HostArray a = type == DType::kFloat ? array_of(wide<float>(step + 300, 5))
                                                : array_of(wide<double>(step + 300, 5));
      const cl::Buffer in = upload(ctx, a.bytes);
      const auto plan = find_reduce_variant("exact")->plan(ctx, sum_of(type, 300),
                                                           std::string(shape) == "gpu" ? 16 : 4);
      for (const std::size_t first : {step, std::size_t{1}, std::size_t{3}})
        CHECK(bits(run_range(ctx, *plan, in, first, 300)) == bits(exact_sum(slice(a, first, 300))));
    }
  }
}

// Small enough for Oclgrind: data over the whole exponent range through each store of the GPU
// shape (one work-item alone past its float bins' first flush; 3 groups of 16) and the CPU
// shape's bins (groups of 4), bit for bit.
TEST_CASE("exact: the work-items' stores on data over the whole exponent range, small",
          "[.oclgrind]") {
  Context ctx(select_device(list_devices(), clreduce::test::test_device_spec()),
              CLREDUCE_SOURCE_KERNEL_DIR, false, tuning_from_env());
  if (!ctx.info().fp64) SKIP("no fp64");
  struct L {
    const char* shape;
    const char* store;
    std::size_t local;
    const char* groups;
    std::size_t n;
  };
  for (const L& l : {L{"gpu", "item", 1, "1", 8300}, L{"gpu", "item", 16, "3", 700},
                     L{"gpu", "expansions", 16, "3", 700}, L{"cpu", "item", 4, "3", 3000}})
    for (DType type : {DType::kFloat, DType::kDouble}) {
      if (l.local == 1 && type == DType::kDouble) continue;  // no flush: the 16-group run covers it
      CAPTURE(l.shape, l.store, l.local, dtype_name(type));
      const TuningGuard shape(ctx, "exact-shape", l.shape);
      const TuningGuard store(ctx, "exact-store", l.store);
      const TuningGuard groups(ctx, "exact-groups", l.groups);
      const HostArray a = type == DType::kFloat ? array_of(every_exponent<float>(l.n, 3, 228))
                                                : array_of(every_exponent<double>(l.n, 3, 2014));
      const cl::Buffer in = upload(ctx, a.bytes);
      const auto plan = find_reduce_variant("exact")->plan(ctx, sum_of(type, l.n), l.local);
      CHECK(plan->policy().path.find(l.shape) == 0);
      CHECK(bits(run_range(ctx, *plan, in, 0, l.n)) == bits(exact_sum(a)));
    }
}

TEST_CASE("exact: other ops and types are skipped with a reason", "[exact]") {
  const HostArray ints = generate(DType::kInt32, 100, 1);
  RunConfig cfg;
  cfg.warmup = 0;
  cfg.repeat = 1;
  ReduceSession s(device_context(), ints, Op::kSum, cfg);
  const RunRecord r = s.run(*find_reduce_variant("exact"));
  CHECK(r.skipped);
  CHECK(r.skip_reason.find("float and double only") != std::string::npos);
  const HostArray f = generate(DType::kFloat, 100, 1);
  ReduceSession m(device_context(), f, Op::kMax, cfg);
  CHECK(m.run(*find_reduce_variant("exact")).skipped);
}
