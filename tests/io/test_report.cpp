// test_report.cpp: how results look in JSON and in the table: the sign of zero, NaN and
// infinities, integers.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <limits>
#include <string>

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
