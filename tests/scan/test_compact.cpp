// test_compact.cpp: stream compaction's engine (scan/compact.hpp): the generated comparison
// exact at the edges of each type, and small select and partition runs against the host (the
// case tests/oclgrind.sh runs under Oclgrind, so cl/compact.cl is checked there).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "io/data.hpp"
#include "scan/compact.hpp"
#include "test_helpers.hpp"

using namespace clreduce;

namespace {

// Compacts x[0, n) for each length and both modes on ctx, in groups of 16, and compares
// everything with the host: the kept elements in order, the rest after them (partition), the
// count at an odd byte offset.
void check_compaction(Context& ctx, const std::vector<std::int32_t>& x, const CompactWhere& w,
                      bool (*keep)(std::int32_t)) {
  const std::size_t max_n = x.size();
  cl::Buffer in(ctx.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, max_n * 4,
                const_cast<std::int32_t*>(x.data()));
  const cl::Buffer out = ctx.zeroed_buffer(max_n * 4), count = ctx.zeroed_buffer(16);
  for (const bool partition : {false, true}) {
    Compactor c(ctx, DType::kInt32, max_n, w, partition, 16);
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{37}, max_n}) {
      CAPTURE(partition, n);
      std::vector<std::int32_t> want, rest;
      for (std::size_t i = 0; i < n; ++i) (keep(x[i]) ? want : rest).push_back(x[i]);
      const std::uint64_t kept = want.size();
      if (partition) want.insert(want.end(), rest.begin(), rest.end());
      std::vector<cl::Event> events;
      c.enqueue(in, n, out, count, 5, events);
      std::vector<unsigned char> cb(16);
      ctx.read(count, 16, cb.data(), "the count");
      std::uint64_t got_kept;
      std::memcpy(&got_kept, cb.data() + 5, 8);
      CHECK(got_kept == kept);
      std::vector<std::int32_t> got(want.size());
      if (!got.empty()) ctx.read(out, got.size() * 4, got.data(), "the selection");
      CHECK(got == want);
    }
  }
}

}  // namespace

TEST_CASE("compaction: a comparison is exact in the element's type", "[scan][compact]") {
  const auto tail = [](DType t, CompareOp c, double v) {
    CompactWhere w;
    w.cmp = c;
    w.value = v;
    return compact_where_tail(t, w);
  };
  using C = CompareOp;
  // Integers: x > 0.5 is x > 0, x >= 0.5 is x >= 1; values past the type are constants.
  CHECK_THAT(tail(DType::kInt32, C::kGreater, 0.5), Catch::Matchers::ContainsSubstring("x > ((int)0L)"));
  CHECK_THAT(tail(DType::kInt32, C::kGreaterEqual, 0.5), Catch::Matchers::ContainsSubstring("x >= ((int)1L)"));
  CHECK_THAT(tail(DType::kInt32, C::kLess, -1e10),
             Catch::Matchers::ContainsSubstring("x < ((int)-2147483648L)"));  // never true
  CHECK_THAT(tail(DType::kUInt32, C::kGreater, -3), Catch::Matchers::ContainsSubstring("return 1;"));
  CHECK_THAT(tail(DType::kInt64, C::kLessEqual, -1e19), Catch::Matchers::ContainsSubstring("return 0;"));
  CHECK_THAT(tail(DType::kUInt64, C::kGreater, 1e20), Catch::Matchers::ContainsSubstring("x > (18446744073709551615UL)"));
  CHECK_THAT(tail(DType::kInt32, C::kEqual, 2.5), Catch::Matchers::ContainsSubstring("return 0;"));
  CHECK_THAT(tail(DType::kInt32, C::kNotEqual, 2.5), Catch::Matchers::ContainsSubstring("return 1;"));
  // Floats: 0.1 lies between two floats; x > 0.1 compares with the one below, x >= with the
  // one above; NaN passes != alone.
  CHECK_THAT(tail(DType::kFloat, C::kGreater, 0.1), Catch::Matchers::ContainsSubstring("x > (0x1.999998p-4f)"));
  CHECK_THAT(tail(DType::kFloat, C::kGreaterEqual, 0.1), Catch::Matchers::ContainsSubstring("x >= (0x1.99999ap-4f)"));
  CHECK_THAT(tail(DType::kFloat, C::kLess, 1e300), Catch::Matchers::ContainsSubstring("x < (INFINITY)"));
  CHECK_THAT(tail(DType::kFloat, C::kEqual, std::nan("")), Catch::Matchers::ContainsSubstring("return 0;"));
  CHECK_THAT(tail(DType::kDouble, C::kNotEqual, std::nan("")), Catch::Matchers::ContainsSubstring("return 1;"));
}

TEST_CASE("compaction: select and partition against the host", "[scan][compact]") {
  std::vector<std::int32_t> x(4099);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>((i * 7919) % 2001) - 1000;
  CompactWhere w;
  w.cmp = CompareOp::kGreater;
  w.value = 0.5;
  check_compaction(test::device_context(), x, w, [](std::int32_t v) { return v > 0; });
  w.expr = "(x & 3) == 1";
  check_compaction(test::device_context(), x, w, [](std::int32_t v) { return (v & 3) == 1; });
}

// Small enough for Oclgrind (tests/oclgrind.sh runs it): 300 elements in groups of 16.
TEST_CASE("compaction: small select and partition", "[.oclgrind]") {
  // A context of its own: the shared one lives until exit, past Oclgrind's own teardown.
  Context ctx(select_device(list_devices(), test::test_device_spec()), CLREDUCE_SOURCE_KERNEL_DIR,
              false, tuning_from_env());
  std::vector<std::int32_t> x(300);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>((i * 37) % 101) - 50;
  CompactWhere w;
  w.expr = "x > 3";
  check_compaction(ctx, x, w, [](std::int32_t v) { return v > 3; });
}
