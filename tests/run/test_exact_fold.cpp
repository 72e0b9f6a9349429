// test_exact_fold.cpp: `exact` on an array split into pieces: chunks of one device (--max-chunk:
// chunks of 1 element, of 7, 7 chunks, one chunk), shares of two devices (the test device
// twice, --shares 1,3), and both at once. Each piece's plan leaves its exact state after its
// rounded result; the fold adds the states exactly and rounds once, so the result is bit for
// bit the host's correctly rounded sum (exact_sum) and the unsplit run's, on uniform data and
// on hard data whose pieces' rounded sums would fold to another value: cancellation across
// pieces, every exponent, ties at the final rounding decided by a later piece, overflow to
// infinity and back, inf and NaN in any piece, signed zeros. Also the host side alone: the
// states' exact addition and rounding against exact_sum, and ReduceFold's rules.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "clreduce/error.hpp"
#include "io/data.hpp"
#include "run/fold.hpp"
#include "run/runner.hpp"
#include "run/shares.hpp"
#include "test_helpers.hpp"
#include "verify/exact_sum.hpp"

using namespace clreduce;
using clreduce::test::device_context;
using clreduce::test::make_array;
using clreduce::test::run_cli;
using clreduce::test::TuningGuard;

namespace {

// The bits of a float or double result, NaNs all alike.
using clreduce::test::bits;

template <class T> HostArray array_of(const std::vector<T>& v) {
  return make_array(std::is_same_v<T, float> ? DType::kFloat : DType::kDouble, v);
}

HostArray part_of(const HostArray& a, std::size_t first, std::size_t n) {
  return view_of(a, first, n);
}

// A second context on the device under test: the other "device" of a two-device run.
Context& other_context() {
  static std::unique_ptr<Context> ctx =
      std::make_unique<Context>(select_device(list_devices(), clreduce::test::test_device_spec()),
                                CLREDUCE_SOURCE_KERNEL_DIR, false, tuning_from_env());
  return *ctx;
}

// One run of exact on a: chunks of `chunk` elements at most (0: whole), on one device or on
// the test device twice with shares `shares` (empty: one device).
RunRecord run_exact(const HostArray& a, std::size_t chunk, const std::vector<double>& shares = {}) {
  const std::string mc = chunk ? std::to_string(chunk * dtype_size(a.type)) : "";
  const TuningGuard g1(device_context(), "max-chunk", mc);
  const TuningGuard g2(other_context(), "max-chunk", mc);
  RunConfig cfg;
  cfg.warmup = 0;
  cfg.repeat = 1;
  cfg.share_weights = shares;
  const ReduceVariant& v = *find_reduce_variant("exact");
  if (shares.empty()) {
    ReduceSession s(device_context(), a, Op::kSum, cfg);
    return s.run(v);
  }
  ReduceSession s(std::vector<Context*>{&device_context(), &other_context()}, a, Op::kSum, cfg);
  return s.run(v);
}

// The layouts every array runs under: (chunk elements, shares).
struct Split {
  std::size_t chunk;
  std::vector<double> shares;
  std::string str() const {
    std::ostringstream o;
    o << "chunk " << chunk << (shares.empty() ? "" : ", two devices");
    for (double s : shares) o << " " << s;
    return o.str();
  }
};

// Runs a under every split (and unsplit), each bit for bit the host's exact sum, verified, in
// the chunks the split asks for.
void require_split_exact(const HostArray& a, const std::vector<Split>& splits) {
  const Value want = exact_sum(a);
  const RunRecord whole = run_exact(a, 0);
  INFO("n = " << a.n << ", exact " << want.str() << ", unsplit " << whole.result.str());
  REQUIRE_FALSE(whole.skipped);
  REQUIRE(bits(whole.result) == bits(want));
  for (const Split& s : splits) {
    const RunRecord r = run_exact(a, s.chunk, s.shares);
    INFO(s.str() << ": " << r.result.str() << " (" << r.layout << ") " << r.skip_reason << " "
                 << r.verify_note);
    REQUIRE_FALSE(r.skipped);
    CHECK(r.verified);
    REQUIRE(bits(r.result) == bits(want));
    REQUIRE(bits(r.result) == bits(whole.result));
    if (s.shares.empty() && s.chunk && a.n > s.chunk)
      CHECK(r.chunks == (a.n + s.chunk - 1) / s.chunk);
    for (const PartInfo& p : r.parts)
      CHECK(p.verified);  // each share its own correctly rounded sum
  }
}

// Chunks of 1 element, of 7 (a prime), and 7 chunks of n; two devices 1:3, alone and with
// chunks of 7 elements.
std::vector<Split> splits_for(std::size_t n) {
  return {{1, {}}, {7, {}}, {(n + 6) / 7, {}}, {0, {1, 3}}, {7, {1, 3}}};
}

template <class T> T ldexp_t(double m, int e) { return static_cast<T>(std::ldexp(m, e)); }

// Hard cases for pieces of up to 7 elements: each is laid out as given, so with chunks of 1
// element every element is its own piece, and with 7 each case's elements share one chunk or
// straddle two (the cases are padded to put the decisive element in a later chunk).
template <class T> std::vector<std::vector<T>> hard_cases() {
  using L = std::numeric_limits<T>;
  const T mx = L::max(), den = L::denorm_min(), mn = L::min(), inf = L::infinity(),
          nan = L::quiet_NaN();
  const T half = std::ldexp(T(1), -L::digits);                      // half an ulp of 1
  const T big = std::ldexp(T(1), L::max_exponent - L::digits - 1);  // half an ulp of max()
  const T z = T(0);
  return {
      {T(1e30), T(3.25), T(-1e30)},                   // cancellation across pieces
      {mx, den, -mx, mn, -den},                       // extremes cancelling
      {mx, mx, -mx},                                  // overflow in a piece, back in range
      {mx, z, z, z, z, z, z, z, mx, -mx, -mx},        // chunks of 7: inf + (-inf)'s halves
      {den, den, den, -mn},                           // subnormals
      {T(1), half, den},                              // a tie broken by a later piece
      {T(1), z, z, z, z, z, z, half, z, z, z, -den},  // ... from the next chunk, downwards
      {T(1) + 2 * half, half},                        // tie, odd: up
      {-T(1) - 2 * half, z, z, z, z, z, z, -half},    // negative tie across chunks
      {T(2) - 2 * half, half},                        // a tie into the next binade
      {std::ldexp(T(1), 100), T(1), -std::ldexp(T(1), 100), half / 2, half / 2},
      {mx, mx},                                   // overflow
      {-mx, -mx, mx, -mx},                        // negative overflow
      {mx, z, z, z, z, z, z, big},                // overflow by a tie, across chunks
      {mx, big, -den},                            // just below overflow
      {inf, T(1), -mx},                           // +inf first
      {T(1), z, z, z, z, z, z, z, -inf, mx, mx},  // -inf in a later chunk
      {inf, z, z, z, z, z, z, z, T(2), -inf},     // +inf and -inf in different chunks
      {T(2), z, z, z, z, z, z, z, z, nan, T(3)},  // NaN in a later chunk
      {-z, -z, -z, -z, -z, -z, -z, -z, -z},       // every piece -0: -0
      {-z, -z, -z, -z, -z, -z, -z, -z, z},        // +0 in the last piece only: +0
      {T(1), -T(1)},                              // an exact zero is +0
  };
}

template <class T> void hard_splits() {
  for (const std::vector<T>& c : hard_cases<T>()) {
    const HostArray a = array_of(c);
    CAPTURE(a.n);
    require_split_exact(a, {{1, {}}, {2, {}}, {7, {}}, {0, {1, 3}}, {1, {1, 1}}, {2, {3, 1}}});
  }
}

using clreduce::test::every_exponent;

}  // namespace

TEST_CASE("exact states: pieces' states added exactly round to exact_sum of the whole",
          "[exact][fold]") {
  auto check = [](const HostArray& a, std::size_t piece) {
    CAPTURE(a.n, piece);
    ExactState sum;
    for (std::size_t at = 0; at < a.n; at += piece)
      exact_add(sum, exact_state(part_of(a, at, std::min(piece, a.n - at))));
    REQUIRE(bits(exact_round(a.type, sum)) == bits(exact_sum(a)));
    REQUIRE(same_state(sum, exact_state(a)));
  };
  for (const auto& c : hard_cases<float>())
    for (std::size_t piece : {1, 2, 3, 7}) check(array_of(c), piece);
  for (const auto& c : hard_cases<double>())
    for (std::size_t piece : {1, 2, 3, 7}) check(array_of(c), piece);
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const HostArray f = array_of(every_exponent<float>(5003, seed, 254));
    const HostArray d = array_of(every_exponent<double>(5003, seed, 2046));
    const HostArray fin = array_of(every_exponent<double>(5003, seed, 2000));
    for (std::size_t piece : {1, 7, 1000}) {
      check(f, piece);
      check(d, piece);
      check(fin, piece);
    }
  }
  // Empty: +0; an exact zero is +0 too, even from -0 alone (NumPy's sum adds from +0).
  REQUIRE(bits(exact_round(DType::kFloat, ExactState())) == 0);
  ExactState neg_zero = exact_state(array_of(std::vector<double>{-0.0}));
  exact_add(neg_zero, exact_state(array_of(std::vector<double>{})));
  REQUIRE(bits(exact_round(DType::kDouble, neg_zero)) == 0);
}

TEST_CASE("exact states: limbs in any form (negative, past 2^32) are carried exactly",
          "[exact][fold]") {
  // -1 unit as limbs {2^32 - 1, -1} and as {-1}: the same state; 2^40 units spread unevenly.
  const std::int64_t a[] = {0xFFFFFFFF, -1};
  const std::int64_t b[] = {-1};
  REQUIRE(same_state(exact_state_of(a, 2, 0), exact_state_of(b, 1, 0)));
  const std::int64_t c[] = {std::int64_t{1} << 40, 0, 0};
  const std::int64_t d[] = {0, 256};
  REQUIRE(same_state(exact_state_of(c, 3, 0), exact_state_of(d, 2, 0)));
  // -2^-1074 as a double; a limb near int64's limits.
  REQUIRE(bits(exact_round(DType::kDouble, exact_state_of(b, 1, 0))) == 0x8000000000000001ull);
  const std::int64_t e[] = {std::numeric_limits<std::int64_t>::min() + 1, 0};
  const Value got = exact_round(DType::kDouble, exact_state_of(e, 2, 0));
  REQUIRE(got.f == -std::ldexp(9223372036854775807.0, -1074));
  // Flags no kernel writes (the sentinel of an unwritten result) are refused.
  try {
    exact_state_of(b, 1, 0xA5A5A5A5A5A5A5A5ull);
    FAIL("a sentinel taken for flags");
  } catch (const Error& err) {
    CHECK(err.category() == Errc::kInternal);
  }
}

TEST_CASE("ReduceFold of exact plans: states by bytes and by folds, no values", "[exact][fold]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  ReduceProblem p;
  p.op = Op::kSum;
  p.type = p.acc_type = DType::kDouble;
  p.n = 100;
  const auto plan = find_reduce_variant("exact")->plan(device_context(), p, 0);
  CHECK(plan->out_bytes() == 8 + 8 * (68 + 1));
  CHECK(ReduceFold::cannot_fold(*plan).empty());
  // Bytes laid out as the kernel leaves them: the rounded value, then limbs and flags.
  const std::vector<double> x = {1e300, 1.0, -1e300, 0x1p-60, -0.0};
  const std::size_t limbs = plan->out_bytes() / 8 - 2;
  auto bytes_of = [&](std::size_t i) {
    const ExactState s = exact_state(array_of(std::vector<double>{x[i]}));
    std::vector<unsigned char> out(plan->out_bytes(), 0);
    std::memcpy(out.data(), &x[i], 8);  // any value: the fold reads the state
    std::memcpy(out.data() + 8, s.limb, limbs * 8);
    const std::int64_t flags = s.flags;
    std::memcpy(out.data() + 8 + limbs * 8, &flags, 8);
    return out;
  };
  ReduceFold whole(p, plan->out_bytes(), true), first(p, plan->out_bytes(), true),
      second(p, plan->out_bytes(), true), none(p, plan->out_bytes(), true);
  for (std::size_t i = 0; i < x.size(); ++i) {
    whole.add(bytes_of(i).data(), i);
    (i < 2 ? first : second).add(bytes_of(i).data(), i);
  }
  const Value want = exact_sum(array_of(x));
  CHECK(bits(whole.result()) == bits(want));
  ReduceFold joined(p, plan->out_bytes(), true);
  joined.add(first, 0);
  joined.add(none, 2);
  joined.add(second, 2);
  CHECK(joined.pieces() == x.size());
  CHECK(bits(joined.result()) == bits(want));
  CHECK(bits(none.result()) == 0);
  CHECK_THROWS_AS(whole.add(want), Error);
  ReduceFold plain(p, 8, false);
  CHECK_THROWS_AS(joined.add(plain, 0), Error);
  // An unwritten piece (its sentinel) is an internal error, not a sum.
  std::vector<unsigned char> sentinel(plan->out_bytes(), 0xA5);
  CHECK_THROWS_AS(whole.add(sentinel.data(), 0), Error);
}

TEST_CASE("exact in chunks and on two devices: hard cases bit for bit", "[exact][chunks][shares]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  SECTION("float") { hard_splits<float>(); }
  SECTION("double") { hard_splits<double>(); }
}

TEST_CASE(
    "exact in chunks and on two devices: uniform, wide and whole-range data, hard cases "
    "hidden among them",
    "[exact][chunks][shares]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  for (DType t : {DType::kFloat, DType::kDouble}) {
    const bool f = t == DType::kFloat;
    CAPTURE(dtype_name(t));
    // Generated (uniform) data as the CLI makes it.
    for (std::size_t n : {std::size_t{1000}, std::size_t{20011}}) {
      std::vector<Split> s = splits_for(n);
      if (n > 1000) s.erase(s.begin());  // 20011 chunks of 1: covered by the smaller array
      require_split_exact(generate(t, n, 5), s);
    }
    // Every exponent (the sums overflow or not as the host says), and up to where they stay
    // finite: pieces whose own sums are infinite or huge and cancel between pieces.
    for (unsigned top : {f ? 254u : 2046u, f ? 228u : 2014u}) {
      const HostArray a = f ? array_of(every_exponent<float>(3001, top, top))
                            : array_of(every_exponent<double>(3001, top, top));
      require_split_exact(a, splits_for(a.n));
    }
    // Pairs x, -x of every exponent in reverse order in the second half, and the smallest
    // subnormal: each piece's sum is huge, the whole's is 2^-149 or 2^-1074.
    {
      std::vector<double> d = f ? std::vector<double>() : every_exponent<double>(1500, 9, 2046);
      std::vector<float> fl = f ? every_exponent<float>(1500, 9, 254) : std::vector<float>();
      if (f) {
        for (std::size_t i = 1500; i-- > 0;) fl.push_back(-fl[i]);
        fl.insert(fl.begin() + 1500, std::numeric_limits<float>::denorm_min());
      } else {
        for (std::size_t i = 1500; i-- > 0;) d.push_back(-d[i]);
        d.insert(d.begin() + 1500, std::numeric_limits<double>::denorm_min());
      }
      const HostArray a = f ? array_of(fl) : array_of(d);
      require_split_exact(a, splits_for(a.n));
    }
  }
}

TEST_CASE("exact with --max-chunk and --device twice: the CLI's rows", "[exact][chunks][shares]") {
  if (!device_context().info().fp64) SKIP("no fp64");
  const char* dev = std::getenv("CLREDUCE_TEST_DEVICE");
  const std::string one = dev && *dev ? dev : "0";
  for (const char* type : {"float", "double"}) {
    const std::string base = std::string("--variant exact --format json --repeat 1 --warmup 0 ") +
                             "--size 10007 --type " + type;
    const auto whole = run_cli(base);
    REQUIRE(whole.code == 0);
    auto field = [](const std::string& out, const std::string& key) {
      const std::string k = "\"" + key + "\":";
      const std::size_t at = out.find(k);
      if (at == std::string::npos) return std::string();
      std::size_t e = at + k.size();
      while (e < out.size() && out[e] != ',' && out[e] != '}') ++e;
      return out.substr(at + k.size(), e - at - k.size());
    };
    for (const std::string& split :
         {std::string("--max-chunk 28"), std::string("--max-chunk 4000"),
          "--device '" + one + "," + one + "' --shares 1,3",
          "--device '" + one + "," + one + "' --shares 1,3 --max-chunk 400"}) {
      CAPTURE(type, split);
      const auto r = run_cli(base + " " + split);
      CAPTURE(r.out);
      REQUIRE(r.code == 0);
      CHECK(field(r.out, "skipped") != "true");
      CHECK(field(r.out, "verified") == "true");
      CHECK(field(r.out, "result") == field(whole.out, "result"));
      CHECK(field(r.out, "expected") == field(whole.out, "expected"));
      CHECK(field(r.out, "err_ulp") == "0");
    }
  }
}
