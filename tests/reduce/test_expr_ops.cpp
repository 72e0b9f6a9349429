// test_expr_ops.cpp: the host's references of the engine's rows (reduce/expr_ops.hpp), without a
// device. norm2's reference is the norm to within its own rounding, also where a running sum of
// squares in long double drifts (a large element and many small ones; uniform floats, whose
// squares' low bits are not evenly spread), so a correct result verifies; and a result missing
// one element of typical size is outside the bound at every depth the engine reaches.
// logsumexp's row takes the fold's float exp exactly where it should, and its bound adds that
// exp's error then only.
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "io/data.hpp"
#include "reduce/expr_ops.hpp"

using namespace clreduce;

namespace {

HostArray floats(const std::vector<float>& v) {
  HostArray a;
  a.type = DType::kFloat;
  a.n = v.size();
  a.bytes.resize(v.size() * 4);
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

ExprOpReference norm2(const HostArray& a, DType w, std::uint64_t depth) {
  return expr_op_reference("norm2", {a}, {}, 0, w, depth);
}

// The norm of floats whose magnitudes are 0 or at least 2^-27, independently of the reference's
// scheme: each square exactly in units of 2^-100 (a float's square has 48 bits, its lowest at
// 2^-100 or above), summed in 128-bit integers, the root taken once in long double.
long double exact_norm(const std::vector<float>& v) {
  unsigned __int128 s = 0;
  bool in_range = true;
  for (float f : v) {
    const double x = std::fabs(static_cast<double>(f));
    const double m = std::ldexp(x, 50);  // an integer: x^2 * 2^100 = m^2
    in_range = in_range && (x == 0 || x >= std::ldexp(1.0, -27)) && x < 2.0 && m == std::floor(m);
    const auto k = static_cast<unsigned __int128>(m);
    s += k * k;
  }
  REQUIRE(in_range);
  const long double hi = static_cast<long double>(static_cast<std::uint64_t>(s >> 64)),
                    lo = static_cast<long double>(static_cast<std::uint64_t>(s));
  return std::ldexp(std::sqrt(std::ldexp(hi, 64) + lo), -50);
}

}  // namespace

TEST_CASE("norm2's reference is the norm within its rounding where a running sum of squares drifts",
          "[expr][norm2][bound]") {
  // 2^32 first, then 2^20 - 1 ones: each 1 is half an ulp of 2^64 in long double, so a running
  // sum keeps 2^64 (ties to even) and the norm 2^32, off by (n - 1) 2^-33 ~ 1.2e-4, past the
  // bound at any depth below 600.
  const std::size_t n = std::size_t{1} << 20;
  std::vector<float> v(n, 1.0f);
  v[0] = std::ldexp(1.0f, 32);
  const long double exact = 0x1p32L + static_cast<long double>(n - 1) * 0x1p-33L;  // to 2^-59
  for (DType w : {DType::kDouble, DType::kFloat}) {
    for (std::uint64_t depth : {16, 40, 80}) {
      CAPTURE(dtype_name(w), depth);
      const ExprOpReference r = norm2(floats(v), w, depth);
      const double u = w == DType::kFloat ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
      const double got = r.value.f;
      // The reference: the exact norm rounded once to the working type.
      CHECK(std::fabs(static_cast<long double>(got) - exact) <= u * exact);
      // A correct result (the exact norm, rounded) verifies.
      const double correct =
          w == DType::kFloat ? static_cast<float>(exact) : static_cast<double>(exact);
      CHECK(std::fabs(correct - got) <= r.bound);
    }
  }
}

TEST_CASE("norm2's bound admits the correct norm of uniform floats and rejects a dropped element",
          "[expr][norm2][bound]") {
  for (std::size_t n : {std::size_t{1} << 16, std::size_t{1} << 20}) {
    const HostArray a = generate(DType::kFloat, n, 7);
    const std::vector<float> v(a.as<float>(), a.as<float>() + n);
    const long double exact = exact_norm(v);
    std::size_t typical = 0;  // an element of typical size, |x| in [0.5, 0.6)
    while (std::fabs(v[typical]) < 0.5f || std::fabs(v[typical]) >= 0.6f) ++typical;
    std::vector<float> dropped = v;
    dropped.erase(dropped.begin() + static_cast<std::ptrdiff_t>(typical));
    const long double lost = exact_norm(dropped);
    for (std::uint64_t depth : {16, 40, 80, 200}) {
      CAPTURE(n, depth);
      const ExprOpReference r = norm2(a, DType::kDouble, depth);
      CHECK(std::fabs(static_cast<long double>(r.value.f) - exact) <= 0x1p-53L * exact);
      CHECK(std::fabs(static_cast<double>(exact) - r.value.f) <= r.bound);
      CHECK(std::fabs(static_cast<double>(lost) - r.value.f) > r.bound);
    }
  }
}

TEST_CASE("norm2's reference keeps NaN, inf, zero and squares past double's range",
          "[expr][norm2]") {
  const auto one = [](std::vector<double> v) {
    HostArray a;
    a.type = DType::kDouble;
    a.n = v.size();
    a.bytes.resize(v.size() * 8);
    std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
    return norm2(a, DType::kDouble, 8).value.f;
  };
  CHECK(std::isnan(one({1.0, NAN, INFINITY})));
  CHECK(one({1.0, -INFINITY}) == INFINITY);
  CHECK(one({}) == 0.0);
  CHECK(one({0.0, -0.0}) == 0.0);
  CHECK(one({3 * 0x1p1000, -4 * 0x1p1000}) == 5 * 0x1p1000);    // squares overflow double
  CHECK(one({3 * 0x1p-1000, 4 * 0x1p-1000}) == 5 * 0x1p-1000);  // squares underflow double
  CHECK(one({0x1p-1074, 0x1p-1074}) == 0x1p-1074);  // sqrt(2) 2^-1074, rounded to a subnormal
  CHECK(one({-5.0}) == 5.0);
}

TEST_CASE(
    "logsumexp takes the float exp for float and float16 arrays in double, and its bound adds "
    "that exp's error",
    "[expr][logsumexp][bound]") {
  ExprOpOptions o;
  CHECK(expr_op_spec("logsumexp", {DType::kFloat}, o).lse_expf);
  CHECK(expr_op_spec("logsumexp", {DType::kFloat16}, o).lse_expf);
  o.where = "x > 0";
  CHECK(expr_op_spec("logsumexp", {DType::kFloat}, o).lse_expf);
  CHECK_FALSE(expr_op_spec("logsumexp", {DType::kDouble}, o).lse_expf);
  CHECK_FALSE(expr_op_spec("logsumexp", {DType::kInt32}, o).lse_expf);
  CHECK_FALSE(expr_op_spec("mean", {DType::kFloat}, o).lse_expf);
  ExprOpOptions off = o;
  off.fp64 = false;  // working in float: the kernel's exp is float's anyway
  CHECK_FALSE(expr_op_spec("logsumexp", {DType::kFloat}, off).lse_expf);
  off = o;
  off.folds = false;  // no fold: the reduce's double exps
  CHECK_FALSE(expr_op_spec("logsumexp", {DType::kFloat}, off).lse_expf);
  Tuning t;
  t.lse_exp = "double";
  off = o;
  set_row_tuning(off, t);
  CHECK_FALSE(expr_op_spec("logsumexp", {DType::kFloat}, off).lse_expf);
  CHECK(expr_options(expr_op_spec("logsumexp", {DType::kFloat}, o)).find("-DCLR_LSE_EXPF=1") !=
        std::string::npos);

  // 2^20 elements: the float exp adds 1.01 (2^-24 (ln(n + 1) + 8) + 3 2^-23) + n 2^-126, about
  // 1.8e-6, to the double path's bound, about 4e-12 here (depth 200).
  const std::size_t n = std::size_t{1} << 20;
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1000) / 100.0f - 5.0f;
  const HostArray a = floats(v);
  const ExprSpec row = expr_op_spec("logsumexp", {DType::kFloat}, ExprOpOptions());
  ExprSpec dbl = row;
  dbl.lse_expf = false;
  const std::uint64_t depth = 200;
  const ExprOpReference with =
      expr_op_reference("logsumexp", {a}, {}, 0, DType::kDouble, depth, &row);
  const ExprOpReference without =
      expr_op_reference("logsumexp", {a}, {}, 0, DType::kDouble, depth, &dbl);
  const ExprOpReference none = expr_op_reference("logsumexp", {a}, {}, 0, DType::kDouble, depth);
  CHECK(with.value.f == without.value.f);
  CHECK(without.bound == none.bound);
  CHECK(without.bound < 1e-10);
  const double added = 1.01 * (std::ldexp(std::log(n + 1.0) + 8, -24) + 4 * std::ldexp(1.0, -23)) +
                       static_cast<double>(n) * std::ldexp(1.0, -126);
  CHECK(std::fabs(with.bound - without.bound - added) <= 1e-6 * added);
  CHECK(with.bound < 2e-6);
}
