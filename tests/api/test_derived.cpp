// test_derived.cpp: the public API's derived ops, user expressions, segments and axes, as a
// program meets them through <clreduce/clreduce.hpp> alone: each result against a reference
// computed here (integers exactly, floats in long double within a stated bound), the library's
// own verification when asked, host arrays and cl::Buffers alike, and the refusals.
#include "api_test_device.hpp"

#include <clreduce/clreduce.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using clreduce::ArrayRef;
using clreduce::Derived;
using clreduce::DType;
using clreduce::Op;
using clreduce::Segments;

namespace {

clreduce::Device& device() {
  static clreduce::Device dev(api_test_device_spec());
  return dev;
}

clreduce::Options checked() {
  clreduce::Options o;
  o.verify = true;
  return o;
}

// Values in [-1, 1) with a fixed pseudo-random sequence.
std::vector<float> floats(std::size_t n, unsigned seed) {
  std::vector<float> v(n);
  std::uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(static_cast<int>(s >> 8) % 2001 - 1000) / 1000.0f;
  }
  return v;
}

// |got - want| within rel * max(1, |want|).
bool near(double got, long double want, double rel) {
  return std::fabs(static_cast<long double>(got) - want) <=
         rel * std::max<long double>(1, std::fabs(want));
}

clreduce::Error error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const clreduce::Error& e) {
    return e;
  }
  FAIL("no clreduce::Error thrown");
  return clreduce::Error(clreduce::Errc::kInternal, "");
}

}  // namespace

TEST_CASE("derived ops over host arrays and buffers match long double references",
          "[api][derived]") {
  clreduce::Device& dev = device();
  const bool fp64 = dev.summary().fp64;
  // Float results are in double (fp64) or float: 1e-12 or 1e-5 relative to max(1, |ref|).
  const double rel = fp64 ? 1e-12 : 1e-5;
  const std::size_t n = 10007;
  const std::vector<float> x = floats(n, 1), y = floats(n, 2);
  long double dot = 0, sum = 0, ss = 0;
  for (std::size_t i = 0; i < n; ++i) {
    dot += static_cast<long double>(x[i]) * y[i];
    sum += x[i];
    ss += static_cast<long double>(x[i]) * x[i];
  }
  const long double mean = sum / n;
  long double m2 = 0, lse = 0;
  for (float v : x) {
    m2 += (v - mean) * (v - mean);
    lse += std::exp(static_cast<long double>(v) - 1);  // max of x is below 1
  }
  const clreduce::Result d = dev.reduce(Derived::kDot, {x, y}, n, checked());
  CHECK(d.verified);
  CHECK(d.name == "dot");
  CHECK(d.acc == (fp64 ? DType::kDouble : DType::kFloat));
  CHECK(near(d.value.f, dot, rel));
  CHECK(near(dev.reduce(Derived::kMean, {x}, n).value.f, mean, rel));
  clreduce::Options ddof1 = checked();
  ddof1.ddof = 1;
  const clreduce::Result var = dev.reduce(Derived::kVar, {x}, n, ddof1);
  CHECK(var.verified);
  CHECK(near(var.value.f, m2 / (n - 1), rel));
  CHECK(near(dev.reduce(Derived::kStd, {x}, n).value.f, std::sqrt(m2 / n), rel));
  CHECK(near(dev.reduce(Derived::kNorm2, {x}, n, checked()).value.f, std::sqrt(ss), rel));
  // logsumexp of float arrays in double: each element's term a float exp (lse-exp auto), within
  // 1.01 (2^-24 (ln(n + 1) + 8) + 3 2^-23), 1.4e-6 here; with lse-exp=double as the others.
  const clreduce::Result l = dev.reduce(Derived::kLogSumExp, {x}, n, checked());
  CHECK(l.verified);
  CHECK(std::fabs(static_cast<long double>(l.value.f) - (1 + std::log(lse))) <=
        (fp64 ? 1.5e-6 : rel * 10));
  clreduce::Tuning dexp;
  dexp.lse_exp = "double";
  clreduce::Device exact(
      [] {
        const char* s = std::getenv("CLREDUCE_TEST_DEVICE");
        return std::string(s && *s ? s : "0");
      }(),
      "", dexp);
  CHECK(near(exact.reduce(Derived::kLogSumExp, {x}, n, checked()).value.f, 1 + std::log(lse), rel));

  // count, any, all with a predicate, exactly; the same arrays as cl::Buffers.
  std::size_t above = 0;
  for (float v : x) above += v > 0.5f;
  cl::Buffer bx(dev.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4,
                const_cast<float*>(x.data()));
  clreduce::Options where = checked();
  where.where = "x > 0.5f";
  const clreduce::Result c = dev.reduce(Derived::kCount, {ArrayRef(DType::kFloat, bx)}, n, where);
  CHECK(c.verified);
  CHECK(c.acc == DType::kInt64);
  CHECK(c.value.i == static_cast<std::int64_t>(above));
  CHECK(dev.reduce(Derived::kAll, {ArrayRef(DType::kFloat, bx)}, n, where).value.i == 1);
  where.where = "x > 2";
  CHECK(dev.reduce(Derived::kAny, {ArrayRef(DType::kFloat, bx)}, n, where).value.i == 0);

  // Integer dot wraps modulo 2^64, exactly.
  const std::vector<std::int64_t> a = {std::numeric_limits<std::int64_t>::max(), 3, -7};
  const std::vector<std::int64_t> b = {2, 5, 11};
  const std::uint64_t want = static_cast<std::uint64_t>(a[0]) * 2u + 15u - 77u;
  const clreduce::Result id = dev.reduce(Derived::kDot, {a, b}, a.size(), checked());
  CHECK(id.verified);
  CHECK(static_cast<std::uint64_t>(id.value.i) == want);

  // Empty: mean is NaN, count 0, all 1.
  CHECK(std::isnan(dev.reduce(Derived::kMean, {x}, 0).value.f));
  CHECK(dev.reduce(Derived::kCount, {x}, 0).value.i == 0);
  CHECK(dev.reduce(Derived::kAll, {x}, 0).value.i == 1);
  // NaN and inf as NumPy: a NaN makes the mean NaN, inf the mean inf.
  std::vector<float> bad = {1, 2, std::numeric_limits<float>::infinity()};
  CHECK(std::isinf(dev.reduce(Derived::kMean, {bad}, 3).value.f));
  bad[1] = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(dev.reduce(Derived::kMean, {bad}, 3, checked()).value.f));

  CHECK(clreduce::parse_derived("logsumexp") == Derived::kLogSumExp);
  CHECK(clreduce::derived_name(Derived::kNorm2) == "norm2");
  CHECK(error_of([] { clreduce::parse_derived("median"); }).category() == clreduce::Errc::kUsage);
  const clreduce::Error two = error_of([&] { dev.reduce(Derived::kDot, {x}, n); });
  CHECK(two.category() == clreduce::Errc::kUsage);
}

TEST_CASE("user expressions: several arrays, post, where, laws and text refused", "[api][expr]") {
  clreduce::Device& dev = device();
  const std::vector<std::int32_t> x = {3, -1, 4, 1, -5, 9, 2, -6};
  const std::vector<std::int32_t> y = {2, 7, 1, 8, 2, 8, 1, 8};
  std::int64_t dot = 0, pos = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    dot += static_cast<std::int64_t>(x[i]) * y[i];
    if (x[i] > 0) pos += x[i];
  }
  clreduce::Expression e;
  e.map = "(long)x * y";
  e.reduce = "a + b";
  e.identity = "0";
  const clreduce::Result r = dev.reduce(e, {x, y}, x.size(), checked());
  CHECK(r.verified);
  CHECK(r.name == "expr");
  CHECK(r.acc == DType::kInt64);
  CHECK(r.value.i == dot);
  // min and max together would be two; a max with a post over n, and where.
  clreduce::Expression m;
  m.map = "x";
  m.reduce = "a + b";
  m.identity = "0";
  m.post = "(double)a / n";
  m.acc = "double";
  clreduce::Options o = checked();
  o.where = "x > 0";
  const clreduce::Result p = dev.reduce(m, {x}, x.size(), o);
  CHECK(p.verified);
  CHECK(p.value.type == DType::kDouble);
  CHECK(p.value.f == static_cast<double>(pos) / 8.0);
  // n = 0: post(identity, 0).
  clreduce::Expression c = e;
  c.map = "x";
  c.post = "a + 100";
  CHECK(dev.reduce(c, {x}, 0).value.i == 100);

  // The laws: a - b is not associative; 1 is not neutral for a + b.
  clreduce::Expression sub = e;
  sub.map = "x";
  sub.reduce = "a - b";
  const clreduce::Error law = error_of([&] { dev.reduce(sub, {x}, x.size()); });
  CHECK(law.category() == clreduce::Errc::kUsage);
  CHECK_THAT(std::string(law.what()), ContainsSubstring("associative"));
  clreduce::Expression one = e;
  one.map = "x";
  one.identity = "1";
  CHECK_THAT(std::string(error_of([&] { dev.reduce(one, {x}, x.size()); }).what()),
             ContainsSubstring("not neutral"));
  // Text that is not one expression, one that does not compile, too few arrays.
  clreduce::Expression semi = e;
  semi.map = "x; y";
  CHECK_THAT(std::string(error_of([&] {
                           dev.reduce(semi, {x, y}, x.size());
                         }).what()),
             ContainsSubstring("not one expression"));
  clreduce::Expression typo = e;
  typo.map = "x * q";
  const clreduce::Error build = error_of([&] { dev.reduce(typo, {x}, x.size()); });
  CHECK(build.category() == clreduce::Errc::kUsage);
  CHECK_THAT(std::string(build.what()), ContainsSubstring("does not compile"));
  CHECK_THAT(std::string(error_of([&] { dev.reduce(e, {x}, x.size()); }).what()),
             ContainsSubstring("name y"));
}

TEST_CASE("segments: offsets with empty segments, every built-in op, exact against the host",
          "[api][segments]") {
  clreduce::Device& dev = device();
  std::vector<std::int32_t> x(5000);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<std::int32_t>((i * 7919) % 201) - 100;
  // Segments of lengths 0, 1, 3, 0, 996 and 4000 (long: pieces and a fold).
  const std::vector<std::int64_t> off = {0, 0, 1, 4, 4, 1000, 5000};
  const clreduce::SegmentedResult s = dev.reduce_segments(
      Op::kSum, DType::kInt32, x.data(), x.size(), Segments::from_offsets(off), checked());
  CHECK(s.verified);
  REQUIRE(s.results() == 6);
  CHECK(s.shape == std::vector<std::uint64_t>{6});
  CHECK(s.acc == DType::kInt64);
  for (std::size_t q = 0; q < 6; ++q) {
    const std::int64_t want =
        std::accumulate(x.begin() + off[q], x.begin() + off[q + 1], std::int64_t{0});
    CHECK(s.values.as<std::int64_t>()[q] == want);
  }
  // argmax on a buffer, ties at the first index (every segment non-empty here).
  const std::vector<std::int64_t> full = {0, 1, 4, 1000, 5000};
  cl::Buffer bx(dev.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, x.size() * 4, x.data());
  const clreduce::SegmentedResult am = dev.reduce_segments(Op::kArgMax, DType::kInt32, bx, x.size(),
                                                           Segments::from_offsets(full), checked());
  CHECK(am.verified);
  REQUIRE(am.indices.size() == 4);
  for (std::size_t q = 0; q < 4; ++q) {
    const auto first = x.begin() + full[q];
    const auto at = std::max_element(first, x.begin() + full[q + 1]);
    CHECK(am.indices[q] == at - first);
    CHECK(am.values.as<std::int32_t>()[q] == *at);
  }
  // min of an empty segment has no identity; offsets out of order or range are refused.
  const clreduce::Error empty = error_of([&] {
    dev.reduce_segments(Op::kMin, DType::kInt32, x.data(), x.size(), Segments::from_offsets(off));
  });
  CHECK(empty.category() == clreduce::Errc::kUsage);
  CHECK_THAT(std::string(empty.what()), ContainsSubstring("segment 0 ([0, 0)) is empty"));
  CHECK_THAT(std::string(error_of([&] {
                           dev.reduce_segments(Op::kSum, DType::kInt32, x.data(), x.size(),
                                               Segments::from_offsets({0, 10, 5}));
                         }).what()),
             ContainsSubstring("not ascending"));
  CHECK_THAT(std::string(error_of([&] {
                           dev.reduce_segments(Op::kSum, DType::kInt32, x.data(), x.size(),
                                               Segments::from_offsets({0, 5001}));
                         }).what()),
             ContainsSubstring("out of range"));
}

TEST_CASE("axes: NumPy's shapes, keepdims, arg ops along an axis, derived ops and expressions",
          "[api][segments][axes]") {
  clreduce::Device& dev = device();
  // A (3, 4, 5) int32 array.
  const std::uint64_t A = 3, B = 4, C = 5;
  std::vector<std::int32_t> x(A * B * C);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>((i * 37) % 11) - 5;
  const auto at = [&](std::uint64_t i, std::uint64_t j, std::uint64_t k) {
    return x[(i * B + j) * C + k];
  };
  // Sum over axis 1 (a middle axis: strided lines), keepdims.
  const clreduce::SegmentedResult s =
      dev.reduce_segments(Op::kSum, DType::kInt32, x.data(), x.size(),
                          Segments::along_axes({A, B, C}, {-2}, true), checked());
  CHECK(s.verified);
  CHECK(s.shape == std::vector<std::uint64_t>{A, 1, C});
  for (std::uint64_t i = 0; i < A; ++i)
    for (std::uint64_t k = 0; k < C; ++k) {
      std::int64_t want = 0;
      for (std::uint64_t j = 0; j < B; ++j) want += at(i, j, k);
      CHECK(s.values.as<std::int64_t>()[i * C + k] == want);
    }
  // argmin along axis 0: the first index of ties (values repeat every 11).
  const clreduce::SegmentedResult am =
      dev.reduce_segments(Op::kArgMin, DType::kInt32, x.data(), x.size(),
                          Segments::along_axes({A, B, C}, {0}), checked());
  CHECK(am.verified);
  CHECK(am.shape == std::vector<std::uint64_t>{B, C});
  for (std::uint64_t j = 0; j < B; ++j)
    for (std::uint64_t k = 0; k < C; ++k) {
      std::int64_t best = 0;
      for (std::uint64_t i = 1; i < A; ++i)
        if (at(i, j, k) < at(static_cast<std::uint64_t>(best), j, k))
          best = static_cast<std::int64_t>(i);
      CHECK(am.indices[j * C + k] == best);
    }
  // Two axes (0, 2) of a mean: a derived op per line, post applied.
  const clreduce::SegmentedResult mean =
      dev.reduce_segments(Derived::kMean, {ArrayRef(DType::kInt32, x.data())}, x.size(),
                          Segments::along_axes({A, B, C}, {0, 2}), checked());
  CHECK(mean.verified);
  REQUIRE(mean.shape == std::vector<std::uint64_t>{B});
  for (std::uint64_t j = 0; j < B; ++j) {
    long double sum = 0;
    for (std::uint64_t i = 0; i < A; ++i)
      for (std::uint64_t k = 0; k < C; ++k) sum += at(i, j, k);
    const double got = mean.values.type == DType::kDouble ? mean.values.as<double>()[j]
                                                          : mean.values.as<float>()[j];
    CHECK(near(got, sum / (A * C), 1e-6));
  }
  // var with ddof along the last axis (contiguous segments), against a two-pass reference.
  clreduce::Options ddof = checked();
  ddof.ddof = 1;
  const clreduce::SegmentedResult var =
      dev.reduce_segments(Derived::kVar, {ArrayRef(DType::kInt32, x.data())}, x.size(),
                          Segments::along_axes({A * B, C}, {1}), ddof);
  CHECK(var.verified);
  for (std::uint64_t r = 0; r < A * B; ++r) {
    long double m = 0, m2 = 0;
    for (std::uint64_t k = 0; k < C; ++k) m += x[r * C + k];
    m /= C;
    for (std::uint64_t k = 0; k < C; ++k) m2 += (x[r * C + k] - m) * (x[r * C + k] - m);
    const double got =
        var.values.type == DType::kDouble ? var.values.as<double>()[r] : var.values.as<float>()[r];
    CHECK(near(got, m2 / (C - 1), 1e-5));
  }
  // A user expression per line: the largest |x| along axis 2.
  clreduce::Expression e;
  e.map = "abs(x)";
  e.reduce = "max(a, b)";
  e.identity = "INT_MIN";
  e.acc = "int32";
  const clreduce::SegmentedResult mx =
      dev.reduce_segments(e, {ArrayRef(DType::kInt32, x.data())}, x.size(),
                          Segments::along_axes({A, B, C}, {2}), checked());
  CHECK(mx.verified);
  for (std::uint64_t i = 0; i < A * B; ++i) {
    std::int32_t want = 0;
    for (std::uint64_t k = 0; k < C; ++k) want = std::max(want, std::abs(x[i * C + k]));
    CHECK(mx.values.as<std::int32_t>()[i] == want);
  }
  // Refusals: an axis out of range or twice, a shape that is not n's, argmax over two axes.
  CHECK_THAT(std::string(error_of([&] {
                           dev.reduce_segments(Op::kSum, DType::kInt32, x.data(), x.size(),
                                               Segments::along_axes({A, B, C}, {3}));
                         }).what()),
             ContainsSubstring("out of bounds"));
  CHECK_THAT(std::string(error_of([&] {
                           dev.reduce_segments(Op::kSum, DType::kInt32, x.data(), x.size(),
                                               Segments::along_axes({A, B, C}, {0, -3}));
                         }).what()),
             ContainsSubstring("twice"));
  CHECK(error_of([&] {
          dev.reduce_segments(Op::kSum, DType::kInt32, x.data(), x.size(),
                              Segments::along_axes({A, B}, {0}));
        }).category() == clreduce::Errc::kUsage);
  CHECK(error_of([&] {
          dev.reduce_segments(Op::kArgMax, DType::kInt32, x.data(), x.size(),
                              Segments::along_axes({A, B, C}, {0, 1}));
        }).category() == clreduce::Errc::kUsage);
}

TEST_CASE("var and std build their programs once: the shift is a kernel argument",
          "[api][derived][shift]") {
  clreduce::Device& dev = device();
  const bool fp64 = dev.summary().fp64;
  const double rel = fp64 ? 1e-12 : 1e-4;
  // Two arrays with large means and different first elements (the shift): the second call of
  // each op builds nothing, and both results meet the references.
  const std::size_t n = 4099;
  std::vector<float> x = floats(n, 3), y = floats(n, 4);
  for (float& v : x) v += 1000.0f;
  for (float& v : y) v -= 3000.5f;
  REQUIRE(x[0] != y[0]);
  const auto m2_of = [&](const std::vector<float>& v, std::size_t first, std::size_t len) {
    long double m = 0, m2 = 0;
    for (std::size_t i = first; i < first + len; ++i) m += v[i];
    m /= static_cast<long double>(len);
    for (std::size_t i = first; i < first + len; ++i) m2 += (v[i] - m) * (v[i] - m);
    return m2;
  };
  clreduce::Options ddof1 = checked();
  ddof1.ddof = 1;
  for (const Derived op : {Derived::kVar, Derived::kStd}) {
    const bool root = op == Derived::kStd;
    std::size_t call = 0;
    for (const std::vector<float>* v : {&x, &y}) {
      const clreduce::Result r = dev.reduce(op, {*v}, n, ddof1);
      CHECK(r.verified);
      const long double var = m2_of(*v, 0, n) / (n - 1);
      CHECK(near(r.value.f, root ? std::sqrt(var) : var, rel));
      if (call++ > 0) CHECK(r.builds == 0);
    }
  }
  // Segments (rows of a 2-D array) the same way.
  const std::uint64_t rows = 3, cols = n / rows;
  for (std::size_t call = 0; call < 2; ++call) {
    const std::vector<float>& v = call ? y : x;
    const clreduce::SegmentedResult s =
        dev.reduce_segments(Derived::kVar, {ArrayRef(DType::kFloat, v.data())}, rows * cols,
                            Segments::along_axes({rows, cols}, {1}), checked());
    CHECK(s.verified);
    REQUIRE(s.results() == rows);
    for (std::uint64_t r = 0; r < rows; ++r) {
      const double got =
          s.values.type == DType::kDouble ? s.values.as<double>()[r] : s.values.as<float>()[r];
      CHECK(near(got, m2_of(v, r * cols, cols) / cols, fp64 ? 1e-9 : 1e-3));
    }
    if (call > 0) CHECK(s.builds == 0);
  }
}

TEST_CASE("var and std of float arrays: a second pass where the shift is far from the mean",
          "[api][derived][shift]") {
  clreduce::Device& dev = device();
  if (!dev.summary().fp64) SKIP("the shifted sums are double's (no fp64 here)");
  // The shift is the first element, 10^6, which the predicate leaves out: the selected values
  // (in [-1, 1)) lie 10^6 of them from it, so the one pass's sums of squares hold 10^12 per
  // element against a spread of about 1/3: its condition (10^12 * 3 * 2^-53 * depth) is past
  // the one-pass bound, and a second pass shifted by the mean gives the result.
  const std::size_t n = 3001;
  std::vector<float> x = floats(n, 5);
  x[0] = 1e6f;
  long double s = 0, m2 = 0;
  std::size_t count = 0;
  for (float v : x)
    if (v < 1000) s += v, ++count;
  const long double mean = s / count;
  for (float v : x)
    if (v < 1000) m2 += (v - mean) * (v - mean);
  clreduce::Options o = checked();
  o.where = "x < 1000";
  for (const Derived op : {Derived::kVar, Derived::kStd}) {
    const clreduce::Result r = dev.reduce(op, {x}, n, o);
    CHECK(r.verified);
    CHECK(r.launches == 2);
    const long double var = m2 / count;
    CHECK(near(r.value.f, op == Derived::kStd ? std::sqrt(var) : var, 1e-12));
  }
  // Shifted by a selected element: one pass. Chan's combine (var-sums=off): one pass too, within
  // its bound (relative to the shifted sum of squares: 7e-12 of the variance was seen).
  x[0] = 0.25f;
  CHECK(dev.reduce(Derived::kVar, {x}, n, o).launches == 1);
  clreduce::Tuning chan;
  chan.var_sums = "off";
  clreduce::Device dev2(dev.summary().index, "", chan);
  x[0] = 1e6f;
  const clreduce::Result r = dev2.reduce(Derived::kVar, {x}, n, o);
  CHECK(r.verified);
  CHECK(r.launches == 1);
  CHECK(near(r.value.f, m2 / count, 1e-9));
}

TEST_CASE("the built-in ops on the engine's types: Device::reduce runs the engine's rows",
          "[api][derived][engine-types]") {
  clreduce::Device& dev = device();
  const std::size_t n = 5003;
  std::vector<std::int8_t> x(n);
  std::uint32_t s = 7;
  for (auto& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<std::int8_t>(static_cast<int>(s >> 24) % 100);
  }
  x[1234] = 127;  // the largest, once
  x[77] = -128;   // the least, once
  x[4000] = -128;
  std::int64_t sum = 0;
  for (auto v : x) sum += v;
  const auto run = [&](Op op, const clreduce::Options& o = checked()) {
    return dev.reduce(op, DType::kInt8, x.data(), n, o);
  };
  const clreduce::Result r = run(Op::kSum);
  CHECK(r.verified);
  CHECK(r.variant == "expr");
  CHECK(r.acc == DType::kInt64);
  CHECK(r.value.i == sum);
  const clreduce::Result mx = run(Op::kMax), mn = run(Op::kMin);
  CHECK((mx.verified && mn.verified));
  CHECK((mx.value.type == DType::kInt8 && mx.value.i == 127));
  CHECK(mn.value.i == -128);
  const clreduce::Result am = run(Op::kArgMin), ax = run(Op::kArgMax);
  CHECK((am.verified && ax.verified));
  CHECK(am.index() == 77);  // the first of two
  CHECK(ax.index() == 1234);

  // A buffer's range at an element offset (copied on the device: not at the base alignment)
  // and at 0: the index counts from first.
  cl::Buffer b(dev.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n, x.data());
  const clreduce::Result ar = dev.reduce(Op::kArgMax, DType::kInt8, b, 3, n - 3, checked());
  CHECK(ar.verified);
  CHECK(ar.index() == 1231);
  CHECK(dev.reduce(Op::kSum, DType::kInt8, b, n).value.i == sum);

  // float16 and bool: min exact, sums in the wider accumulator.
  const std::vector<std::uint16_t> h = {clreduce::double_to_half(1.5), clreduce::double_to_half(-2),
                                        clreduce::double_to_half(0.25)};
  const clreduce::Result hm = dev.reduce(Op::kMin, DType::kFloat16, h.data(), 3, checked());
  CHECK((hm.verified && hm.value.type == DType::kFloat16 && hm.value.f == -2.0));
  CHECK(dev.reduce(Op::kSum, DType::kFloat16, h.data(), 3).value.f == -0.25);
  const std::vector<std::uint8_t> t = {1, 0, 1, 1};
  CHECK(dev.reduce(Op::kSum, DType::kBool, t.data(), 4, checked()).value.i == 3);

  // No variant takes them; min of nothing has no identity.
  clreduce::Options fast;
  fast.variant = "fast";
  CHECK(error_of([&] { run(Op::kSum, fast); }).category() == clreduce::Errc::kUsage);
  CHECK(error_of([&] { dev.reduce(Op::kMin, DType::kInt8, x.data(), 0); }).category() ==
        clreduce::Errc::kUsage);
}
