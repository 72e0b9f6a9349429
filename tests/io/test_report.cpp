// test_report.cpp: how results look in JSON and in the table: the sign of zero, NaN and
// infinities, integers; columns that line up for every result; rates and ratios that are
// undefined or not quoted (no elements, noisy timings, the sequential loop's included); the
// several-device footnote.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "io/report.hpp"

using namespace clreduce;
using Catch::Matchers::ContainsSubstring;

namespace {

Value float_value(DType t, double f) {
  Value v;
  v.type = t;
  v.f = f;
  return v;
}

}  // namespace

TEST_CASE("JSON keeps float results floats, the sign of zero, and NaN and inf as strings",
          "[report]") {
  for (DType t : {DType::kFloat, DType::kDouble}) {
    CAPTURE(dtype_name(t));
    CHECK(json_value(float_value(t, -0.0)) == "-0.0");
    CHECK(json_value(float_value(t, 0.0)) == "0.0");
    CHECK(json_value(float_value(t, 1.0)) == "1.0");
    CHECK(json_value(float_value(t, -3.0)) == "-3.0");
    CHECK(json_value(float_value(t, 0.5)) == "0.5");
    CHECK(json_value(float_value(t, std::nan(""))) == "\"nan\"");
    CHECK(json_value(float_value(t, HUGE_VAL)) == "\"inf\"");
    CHECK(json_value(float_value(t, -HUGE_VAL)) == "\"-inf\"");
  }
  CHECK(json_value(float_value(DType::kFloat, static_cast<double>(1e30f))) == "1.00000002e+30");
  CHECK(json_value(float_value(DType::kDouble, 1e300)) == "1.0000000000000001e+300");
  Value i;
  i.type = DType::kInt64;
  i.i = -5;
  CHECK(json_value(i) == "-5");
  Value u;
  u.type = DType::kUInt32;
  u.u = 7;
  CHECK(json_value(u) == "7");
}

TEST_CASE("a -0.0 result is -0 in the table and -0.0 in JSON", "[report]") {
  RunRecord r;
  r.variant = "fast";
  r.op = Op::kMin;
  r.type = r.acc = DType::kFloat;
  r.n = 2;
  r.result = r.expected = float_value(DType::kFloat, -0.0);
  r.verified = true;
  CHECK_THAT(to_json(r), ContainsSubstring("\"result\":-0.0,\"expected\":-0.0,\"verified\":true"));
  CHECK_THAT(table_row(r), ContainsSubstring("fast                   -0 "));
}

namespace {

// The header's and a row's lines agree when the row is as long as the header and its verdict
// starts under the header's "verified".
void check_aligned(const std::string& header, const std::string& row) {
  CAPTURE(header, row);
  CHECK(row.size() == header.size());
  const std::size_t at = header.find("verified");
  REQUIRE(at != std::string::npos);
  CHECK(row.substr(at, 4) == "yes ");
}

RunRecord verified_row(Op op, DType acc, const Value& v, std::uint64_t n) {
  RunRecord r;
  r.variant = "interleaved-divergent";
  r.op = op;
  r.type = r.acc = acc;
  r.n = n;
  r.result = r.expected = v;
  r.verified = true;
  r.kernel_ms = r.kernel_ms_min = r.kernel_ms_max = 1.5;
  r.wall_ms = 2.5;
  r.gbps = 3.5;
  r.seq_ms = r.seq_ms_min = r.seq_ms_max = 4.5;
  r.speedup = 3.0;
  r.launches = 3;
  return r;
}

}  // namespace

TEST_CASE("the result column fits every result of every op and type, arg indices included",
          "[report]") {
  // Each type's longest printed values.
  std::vector<Value> values;
  const auto add = [&](DType t, double f, std::int64_t i, std::uint64_t u) {
    Value v;
    v.type = t;
    v.f = f;
    v.i = i;
    v.u = u;
    values.push_back(v);
  };
  add(DType::kInt32, 0, std::numeric_limits<std::int32_t>::min(), 0);
  add(DType::kUInt32, 0, 0, std::numeric_limits<std::uint32_t>::max());
  add(DType::kInt64, 0, std::numeric_limits<std::int64_t>::min(), 0);
  add(DType::kUInt64, 0, 0, std::numeric_limits<std::uint64_t>::max());
  for (double f : {-static_cast<double>(std::numeric_limits<float>::min()),
                   -static_cast<double>(std::numeric_limits<float>::max()),
                   -static_cast<double>(std::numeric_limits<float>::denorm_min()),
                   -static_cast<double>(0.000123456789f), -std::numeric_limits<double>::infinity()})
    add(DType::kFloat, f, 0, 0);
  for (double f :
       {-std::numeric_limits<double>::min(), -std::numeric_limits<double>::max(),
        -std::numeric_limits<double>::denorm_min(), -0.00012345678901234567, std::nan("")})
    add(DType::kDouble, f, 0, 0);
  for (Op op : {Op::kSum, Op::kProd, Op::kMin, Op::kMax, Op::kArgMin, Op::kArgMax})
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{1} << 40})
      for (Value v : values) {
        CAPTURE(op_name(op), dtype_name(v.type), n, v.str());
        if (is_arg_op(op)) v.index = static_cast<std::int64_t>(n - 1);
        const std::size_t width = result_width(op, v.type, n);
        CHECK(width >= kResultWidth);
        for (bool ratios : {false, true})
          for (bool accuracy : {false, true}) {
            RunRecord r = verified_row(op, v.type, v, n);
            if (ratios) r.ratios.emplace_back("vs_omp", 1.25);
            check_aligned(table_header(ratios, accuracy, width),
                          table_row(r, ratios, accuracy, width));
          }
      }
  // The narrowest tables keep the usual width.
  CHECK(result_width(Op::kSum, DType::kInt64, 1u << 24) == kResultWidth);
  CHECK(result_width(Op::kArgMax, DType::kDouble, 1000) == 24 + 2 + 3);
}

TEST_CASE("a rate or ratio with no elements is '-' in the table and null in JSON", "[report]") {
  RunRecord r = verified_row(Op::kSum, DType::kInt64, Value{}, 0);
  r.kernel_ms = r.kernel_ms_min = r.kernel_ms_max = 0.0;
  r.gbps = r.speedup = 0.0;
  r.seq_ms = 0.00003;
  r.ratios.emplace_back("vs_omp", 1.5);
  const std::string header = table_header(true, false);
  const std::string row = table_row(r, true, false);
  check_aligned(header, row);
  const auto cell = [&](const std::string& label, std::size_t width) {
    const std::size_t end = header.find(label) + label.size();
    std::string c = row.substr(end - width, width);
    return c.substr(c.find_first_not_of(' '));
  };
  CHECK(cell("GB/s", 9) == "-");
  CHECK(cell("speedup", 9) == "-");
  CHECK(cell("vs omp", 9) == "-");
  const std::string json = to_json(r);
  CHECK_THAT(json, ContainsSubstring("\"gbps\":null"));
  CHECK_THAT(json, ContainsSubstring("\"speedup\":null"));
  CHECK_THAT(json, ContainsSubstring("\"vs_omp\":null"));
  // A peer's tiny time over no elements is no ratio either.
  r.speedup = 1.5;
  r.gbps = 2.0;
  CHECK_THAT(to_json(r), ContainsSubstring("\"gbps\":null"));
  CHECK_THAT(to_json(r), ContainsSubstring("\"speedup\":null"));
  r.n = 10;
  CHECK_THAT(to_json(r), ContainsSubstring("\"gbps\":2,"));
  CHECK_THAT(to_json(r), ContainsSubstring("\"speedup\":1.5,"));
}

TEST_CASE("the sequential loop's noise is marked, and no speedup is quoted against it",
          "[report]") {
  RunRecord r = verified_row(Op::kSum, DType::kInt64, Value{}, 1000);
  r.seq_ms = 3.0;
  r.seq_ms_min = 2.3;
  r.seq_ms_max = 15.0;
  r.seq_noisy = true;
  const std::string header = table_header();
  std::string row = table_row(r);
  check_aligned(header, row);
  CHECK_THAT(row, ContainsSubstring("3.0000~"));
  CHECK_THAT(row, ContainsSubstring(" noisy "));
  std::string json = to_json(r);
  CHECK_THAT(json, ContainsSubstring("\"speedup\":null"));
  CHECK_THAT(json, ContainsSubstring("\"seq_ms_min\":2.3,\"seq_ms_max\":15,\"seq_noisy\":true"));
  // The kernel's own noise withholds the speedup too.
  r.seq_noisy = false;
  r.noisy = true;
  row = table_row(r);
  check_aligned(header, row);
  CHECK_THAT(row, ContainsSubstring("1.5000~"));
  CHECK_THAT(row, ContainsSubstring(" noisy "));
  CHECK_THAT(to_json(r), ContainsSubstring("\"speedup\":null"));
  r.noisy = false;
  row = table_row(r);
  CHECK_THAT(row, ContainsSubstring(" 3.00 "));
  CHECK_THAT(row, !ContainsSubstring("~"));
  json = to_json(r);
  CHECK_THAT(json, ContainsSubstring("\"speedup\":3,"));
  CHECK_THAT(json, ContainsSubstring("\"seq_noisy\":false"));
  // The rule: the slowest run more than 4x the fastest.
  CHECK(noisy_spread(2.3, 15.0));
  CHECK_FALSE(noisy_spread(2.3, 9.2));
  CHECK_FALSE(noisy_spread(0.0, 1.0));  // one run or no time: no spread to judge
  // The footnote names the ratios it withholds, and the ladder's exception.
  CHECK_THAT(noisy_footnote(false), ContainsSubstring("speedup and vs omp are not quoted"));
  CHECK_THAT(noisy_footnote(true), ContainsSubstring("speedups beside it are printed"));
}

TEST_CASE("several devices' combined kernel ms is each run's slowest part; ranks' the slowest",
          "[report]") {
  RunRecord r = verified_row(Op::kSum, DType::kInt64, Value{}, 200);
  r.kernel_ms = 5.0;  // each run's slowest part, median over runs: more than either part's median
  for (int d = 0; d < 2; ++d) {
    PartInfo p;
    p.device = "dev";
    p.device_index = d;
    p.first = static_cast<std::uint64_t>(d) * 100;
    p.n = 100;
    p.kernel_ms = 3.0 + d;
    p.wall_ms = 4.0 + d;
    p.gbps = 1.0;
    p.verified = true;
    r.parts.push_back(p);
  }
  std::string parts = table_parts(r);
  CHECK_THAT(parts, ContainsSubstring("(kernel ms above: each run's slowest part, median over the "
                                      "runs; combine "));
  CHECK_THAT(parts, !ContainsSubstring("above: the slowest part"));
  // An empty part has no rate.
  r.parts[0].n = 0;
  r.parts[0].kernel_ms = r.parts[0].gbps = 0.0;
  parts = table_parts(r);
  CHECK_THAT(parts.substr(0, parts.find('\n')), ContainsSubstring("   -   "));
  CHECK_THAT(to_json(r), ContainsSubstring("\"n\":0,\"kernel_ms\":0,\"wall_ms\":4,\"gbps\":null"));
  r.ranks = 2;
  for (PartInfo& p : r.parts) p.rank = p.device_index;
  CHECK_THAT(table_parts(r),
             ContainsSubstring("(kernel ms and wall ms above: each the slowest rank's; combine "));
}

TEST_CASE("a run's float tolerance is in JSON as bound, with or without the sums' errors",
          "[report]") {
  RunRecord r = verified_row(Op::kSum, DType::kInt64, Value{}, 1000);
  CHECK_THAT(to_json(r), !ContainsSubstring("\"bound\""));
  r.bound = 0.25;  // an engine row's: no err_ulp, err_rel
  CHECK_THAT(to_json(r), ContainsSubstring("\"bound\":0.25"));
  CHECK_THAT(to_json(r), !ContainsSubstring("\"err_ulp\""));
  r.has_error = true;
  const std::string json = to_json(r);
  CHECK_THAT(json, ContainsSubstring("\"err_ulp\""));
  CHECK(json.find("\"bound\"") == json.rfind("\"bound\""));  // once
}
