// test_timing.cpp: the harness's one repetition loop and its statistics: warm-up calls untimed,
// at least one timed, 64-bit counters; medians and spreads.
#include <catch2/catch_test_macros.hpp>

#include <cstdint>
#include <type_traits>

#include "run/runner.hpp"
#include "run/timing.hpp"

using namespace clreduce;

TEST_CASE("the repetition loop runs warm-up calls untimed and keeps at least one timed",
          "[timing]") {
  static_assert(std::is_same_v<decltype(RunConfig{}.warmup), std::uint64_t>,
                "64-bit warm-up count");
  static_assert(std::is_same_v<decltype(RunConfig{}.repeat), std::uint64_t>, "64-bit repeat count");
  std::uint64_t calls = 0;
  const auto run = [&] { return Sample{static_cast<double>(++calls), 0.0, calls}; };
  std::vector<Sample> s = repeat_runs(3, 4, run);
  CHECK(calls == 7);
  REQUIRE(s.size() == 4);
  CHECK(s.front().kernel_ms == 4.0);  // the first timed call is the fourth
  CHECK(s.back().launches == 7);
  calls = 0;
  s = repeat_runs(0, 0, run);
  CHECK(calls == 1);
  CHECK(s.size() == 1);
}

TEST_CASE("medians and spreads", "[timing]") {
  CHECK(median({3.0}) == 3.0);
  CHECK(median({4.0, 1.0}) == 2.5);
  CHECK(median({5.0, 1.0, 3.0}) == 3.0);
  const Spread s = spread({2.0, 9.0, 1.0, 4.0});
  CHECK(s.median == 3.0);
  CHECK(s.min == 1.0);
  CHECK(s.max == 9.0);
  RunRecord rec;
  set_timings(rec, {Sample{2.0, 5.0, 3}, Sample{1.0, 7.0, 3}, Sample{6.0, 6.0, 4}});
  CHECK(rec.kernel_ms == 2.0);
  CHECK(rec.kernel_ms_min == 1.0);
  CHECK(rec.kernel_ms_max == 6.0);
  CHECK(rec.wall_ms == 6.0);
  CHECK(rec.launches == 4);
  const double t0 = now_ms();
  CHECK(now_ms() >= t0);
}
