// test_reference.cpp: the host reference and the verifier on hand-checked arrays: NumPy's
// widening and wrap-around, NaN and tie rules, the float bound, n = 0.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "clreduce/error.hpp"
#include "core/checked.hpp"
#include "io/data.hpp"
#include "io/size_arg.hpp"
#include "run/chunks.hpp"
#include "run/shares.hpp"
#include "test_helpers.hpp"
#include "verify/reference.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace clreduce;
using clreduce::test::make_array;

TEST_CASE("int32 sum and prod widen to int64, int64 wraps", "[reference]") {
  const auto big = make_array<std::int32_t>(DType::kInt32, {INT32_MAX, INT32_MAX, 2});
  Value s = reference_reduce(big, Op::kSum);
  CHECK(s.type == DType::kInt64);
  CHECK(s.i == 2LL * INT32_MAX + 2);
  CHECK(reference_reduce(big, Op::kProd).i == 2LL * INT32_MAX * INT32_MAX);
  const auto wrap = make_array<std::int64_t>(DType::kInt64, {INT64_MAX, 1});
  CHECK(reference_reduce(wrap, Op::kSum).i == INT64_MIN);
  const auto uwrap = make_array<std::uint32_t>(DType::kUInt32, {UINT32_MAX, UINT32_MAX});
  CHECK(reference_reduce(uwrap, Op::kProd).u == 0xFFFFFFFE00000001ull);
  const auto u64 = make_array<std::uint64_t>(DType::kUInt64, {UINT64_MAX, 2});
  CHECK(reference_reduce(u64, Op::kSum).u == 1u);
}

TEST_CASE("min, max and arg ops: first index of ties, NaN propagates", "[reference]") {
  const auto ties = make_array<std::int32_t>(DType::kInt32, {5, 1, 9, 1, 9});
  CHECK(reference_reduce(ties, Op::kArgMin).index == 1);
  CHECK(reference_reduce(ties, Op::kArgMax).index == 2);
  CHECK(reference_reduce(ties, Op::kMin).i == 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto f = make_array<float>(DType::kFloat, {3.f, -1.f, nan, -7.f, nan});
  CHECK(std::isnan(reference_reduce(f, Op::kMin).f));
  CHECK(std::isnan(reference_reduce(f, Op::kMax).f));
  CHECK(reference_reduce(f, Op::kArgMin).index == 2);
  CHECK(reference_reduce(f, Op::kArgMax).index == 2);
  CHECK(std::isnan(reference_reduce(f, Op::kSum).f));
  const auto first_nan = make_array<double>(DType::kDouble, {nan, 1.0});
  CHECK(reference_reduce(first_nan, Op::kArgMax).index == 0);
}

TEST_CASE("n = 0: identity for sum and prod, an error for the others", "[reference]") {
  const auto empty = make_array<float>(DType::kFloat, {});
  CHECK(reference_reduce(empty, Op::kSum).f == 0.0);
  CHECK(reference_reduce(empty, Op::kProd).f == 1.0);
  for (Op op : {Op::kMin, Op::kMax, Op::kArgMin, Op::kArgMax}) {
    try {
      reference_reduce(empty, op);
      FAIL("no error for n = 0");
    } catch (const Error& e) {
      CHECK(e.category() == Errc::kUsage);
    }
  }
}

TEST_CASE("the float bound accepts rounding and rejects a lost element", "[reference]") {
  const HostArray a = generate(DType::kFloat, 100000, 7);
  const Value ref = reference_reduce(a, Op::kSum);
  const Value seq = sequential_reduce(a, Op::kSum);
  const long double s = abs_sum(a);
  CHECK(verify(seq, ref, Op::kSum, a.n, s).ok);  // the sequential loop itself is within (n+2)u
  Value lost = ref;
  std::size_t big = 0;
  while (std::fabs(a.as<float>()[big]) < 0.9f) ++big;
  lost.f -= static_cast<double>(a.as<float>()[big]);  // one element of |x| >= 0.9 dropped
  CHECK_FALSE(verify(lost, ref, Op::kSum, 40, s).ok);
  Value nan = ref;
  nan.f = std::nan("");
  CHECK_FALSE(verify(nan, ref, Op::kSum, 40, s).ok);
}

TEST_CASE("generated data is deterministic and in its documented range", "[data]") {
  const HostArray a = generate(DType::kInt32, 10000, 42), b = generate(DType::kInt32, 10000, 42);
  CHECK(a.bytes == b.bytes);
  CHECK(generate(DType::kInt32, 10000, 43).bytes != a.bytes);
  for (std::size_t i = 0; i < a.n; ++i) {
    REQUIRE(a.as<std::int32_t>()[i] >= -1000);
    REQUIRE(a.as<std::int32_t>()[i] <= 1000);
  }
  const HostArray f = generate(DType::kDouble, 10000, 1);
  for (std::size_t i = 0; i < f.n; ++i) {
    REQUIRE(f.as<double>()[i] >= -1.0);
    REQUIRE(f.as<double>()[i] < 1.0);
  }
}

TEST_CASE("byte counts past 2^64 are refused, never wrapped to a small allocation", "[size]") {
  // 2^62 int32s and 2^61 doubles are 2^64 bytes: once 0, then n elements written into them.
  for (const auto& [t, n] : {std::pair<DType, std::size_t>{DType::kInt32, std::size_t{1} << 62},
                             {DType::kDouble, std::size_t{1} << 61},
                             {DType::kInt64, SIZE_MAX}}) {
    CAPTURE(dtype_name(t), n);
    try {
      generate(t, n, 1);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.category() == Errc::kUnsupported);
      CHECK_THAT(std::string(e.what()), ContainsSubstring("more than 2^64-1 bytes"));
    }
  }
  CHECK(checked_bytes((std::uint64_t{1} << 61) - 1, 8, "x") == UINT64_MAX - 7);
  CHECK_THROWS_AS(checked_bytes(std::uint64_t{1} << 61, 8, "x"), Error);
  CHECK(sat_mul(std::uint64_t{1} << 62, 4) == UINT64_MAX);
  CHECK(sat_mul(std::uint64_t{1} << 61, 4) == std::uint64_t{1} << 63);
  CHECK(sat_add(UINT64_MAX - 1, 2) == UINT64_MAX);
  // Rounded up to whole pages, the last 4095 sizes would wrap to nothing.
  Bytes b;
  CHECK_THROWS_AS(b.allocate_uninit(SIZE_MAX - 5), std::bad_alloc);
  CHECK(b.size() == 0);
  // Chunk counts near 2^64 (n + chunk - 1 once wrapped to a handful of chunks).
  DeviceInfo d;
  d.type = "GPU";
  d.max_alloc = d.global_mem = std::uint64_t{1} << 32;
  const Tuning knobs;
  const ChunkLayout L = choose_layout(d, knobs, SIZE_MAX, ElementBytes{4});
  REQUIRE(L.chunk > 0);
  CHECK(L.chunks == SIZE_MAX / L.chunk + 1);
  CHECK(L.begin(L.chunks - 1) + L.length(L.chunks - 1) == SIZE_MAX);
  // A view past an array's end is refused, not made of wrapped offsets.
  const HostArray a = generate(DType::kInt32, 10, 1);
  CHECK_THROWS_AS(view_of(a, 5, SIZE_MAX - 2), Error);
  CHECK(view_of(a, 4, 6).bytes.size() == 24);
}

TEST_CASE("sizes parse as N, 2^K, NeK and 2^K+M / 2^K-M, and nothing else", "[cli]") {
  CHECK(parse_size("2^29+1") == (std::size_t{1} << 29) + 1);
  CHECK(parse_size("2^31+5") == (std::size_t{1} << 31) + 5);
  CHECK(parse_size("2^10-1") == 1023);
  CHECK(parse_size("1e3+7") == 1007);
  CHECK(parse_size("2^3-8") == 0);
  CHECK(parse_size("0") == 0);
  CHECK(parse_size("1000003") == 1000003);
  CHECK(parse_size("2^20") == (1u << 20));
  CHECK(parse_size("1e6") == 1000000);
  for (const char* bad :
       {"", "-5", "abc", "3^4", "1e99", "2^99", "1.5", "12x", "99999999999999999999", "5+1",
        "2^3-9", "2^64+1", "2^+1", "2^2+", "2^4--1", "2^4+-1", "2^63+2^63", "1e+3"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_size(bad), Error);
  }
}

TEST_CASE("sizes are exact in every form up to 2^64-1, and no form hangs or wraps", "[cli][size]") {
  constexpr std::uint64_t kMax = UINT64_MAX;
  // The largest count, written every way the forms allow.
  for (const char* s : {"18446744073709551615", "2^64-1", "00018446744073709551615",
                        "1844674407370955161e1+5", "1e19+8446744073709551615"}) {
    CAPTURE(s);
    CHECK(parse_size(s) == kMax);
  }
  CHECK(parse_size("2^63") == std::uint64_t{1} << 63);
  CHECK(parse_size("1e19") == 10000000000000000000ull);
  CHECK(parse_size("2^64-18446744073709551616") == 0);
  CHECK(parse_size("0e0") == 0);
  CHECK(parse_size("7E2") == 700);
  // A zero mantissa under a huge exponent is 0 at once (it once looped 10^16 times).
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(parse_size("0e9999999999999999") == 0);
  CHECK(parse_size("0e99999999999999999999999999999999999999") == 0);
  CHECK(parse_size("0e9999999999999999+5") == 5);
  // Past 2^64-1, however it is written and however large the exponent, and every malformed
  // form: refused at once.
  const std::vector<std::string> past = {"18446744073709551616",
                                         "2^64",
                                         "1e20",
                                         "2^99999999999",
                                         "2^99999999999999999999999",
                                         "1e9999999999999999",
                                         "2^64+0",
                                         "18446744073709551615e1",
                                         "1e19+8446744073709551616",
                                         "2^200-1",
                                         "2^128-340282366920938463463374607431768211455"};
  std::vector<std::string> bads = {"1e-5",  "1.5e0", "1e5.0",   "+5",   "+",    "-",    "",
                                   " 5",    "5 ",    "5\n",     "0x10", "2^",   "^2",   "e5",
                                   "5e",    "2^3^2", "2^-1",    "1e+5", "2^4+", "2^4-", "2^4+ 1",
                                   "1e3e2", "1,000", "\u200b5", "2 ^ 4"};
  bads.insert(bads.end(), past.begin(), past.end());
  for (const std::string& bad : bads) {
    CAPTURE(bad);
    std::uint64_t v = 12345;
    CHECK_FALSE(parse_size_value(bad, v));
    CHECK(v == 12345);
    CHECK_THROWS_AS(parse_size(bad), Error);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
}

TEST_CASE("the reference of a large array, folded in parallel blocks, is the sequential loop's",
          "[reference]") {
  const std::size_t n = (std::size_t{1} << 24) + 5;  // 5 blocks, the last of 5 elements
  for (DType t : {DType::kInt32, DType::kFloat, DType::kUInt64}) {
    HostArray a = generate(t, n, 7);
    if (t == DType::kFloat) {  // ties of the extremes across blocks, then a NaN in a later block
      float* x = reinterpret_cast<float*>(a.bytes.data());
      x[n - 2] = x[3] = 1e30f;
      x[(std::size_t{1} << 22) + 9] = -1e30f;
      x[n - 1] = -1e30f;
    }
    for (Op op : {Op::kSum, Op::kProd, Op::kMin, Op::kMax, Op::kArgMin, Op::kArgMax}) {
      if (t == DType::kFloat && (op == Op::kSum || op == Op::kProd)) continue;  // exact, not a loop
      CAPTURE(dtype_name(t), op_name(op));
      const Value ref = reference_reduce(a, op), seq = sequential_reduce(a, op);
      CHECK(ref.type == seq.type);
      CHECK(ref.i == seq.i);
      CHECK(ref.u == seq.u);
      CHECK((ref.f == seq.f || (std::isnan(ref.f) && std::isnan(seq.f))));
      CHECK(ref.index == seq.index);
    }
    if (t == DType::kFloat) {
      reinterpret_cast<float*>(a.bytes.data())[(std::size_t{3} << 22) + 1] = std::nanf("");
      for (Op op : {Op::kMin, Op::kArgMax}) {
        const Value ref = reference_reduce(a, op), seq = sequential_reduce(a, op);
        CHECK(std::isnan(ref.f));
        CHECK(ref.index == seq.index);
      }
    }
  }
}
