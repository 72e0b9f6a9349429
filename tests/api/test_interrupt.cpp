// test_interrupt.cpp: the interrupt check (clreduce::set_interrupt_check). A check that says stop
// ends a long chunked reduction, scan or user expression with Errc::kInterrupted (between chunks
// or in a wait), every layout the chunk driver has (in place, copied, streamed); the Device then
// gives the right answers again. A check that never says stop changes no result.
#include "api_test_device.hpp"

#include <clreduce/clreduce.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using clreduce::DType;
using clreduce::Op;

namespace {

clreduce::Device& device() {
  static clreduce::Device dev(api_test_device_spec());
  return dev;
}

// The check under test: counts its calls and says stop from call number `stop_at` on (0: never).
std::atomic<int> g_asked{0};
std::atomic<int> g_stop_at{0};
bool counting_check() {
  const int asked = ++g_asked;
  return g_stop_at.load() > 0 && asked >= g_stop_at.load();
}

// Sets counting_check for one scope, stopping from its `stop_at`th call; removes it after.
class ScopedCheck {
 public:
  explicit ScopedCheck(int stop_at) {
    g_asked = 0;
    g_stop_at = stop_at;
    clreduce::set_interrupt_check(counting_check);
  }
  ~ScopedCheck() { clreduce::set_interrupt_check(nullptr); }
  ScopedCheck(const ScopedCheck&) = delete;
  ScopedCheck& operator=(const ScopedCheck&) = delete;
};

// Sets the device's tuning for one scope, restoring it after.
class ScopedTuning {
 public:
  explicit ScopedTuning(clreduce::Tuning t) : saved_(device().tuning()) { device().tuning() = t; }
  ~ScopedTuning() { device().tuning() = saved_; }
  ScopedTuning(const ScopedTuning&) = delete;
  ScopedTuning& operator=(const ScopedTuning&) = delete;

 private:
  clreduce::Tuning saved_;
};

// The Error f throws, if any.
template <class F> std::optional<clreduce::Error> error_of(F&& f) {
  try {
    f();
  } catch (const clreduce::Error& e) {
    return e;
  }
  return std::nullopt;
}

// 2^22 small integers (exact sums) with a unique minimum at kArgMin, their sum and prefix sums.
constexpr std::size_t kArgMin = 3000001;
struct Data {
  std::vector<std::int32_t> x;
  std::int64_t sum = 0;
  std::vector<std::int64_t> prefix;
  Data() : x(std::size_t{1} << 22), prefix(x.size()) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<std::int32_t>((i * 7919) % 201) - 100 - (i == kArgMin ? 1000 : 0);
      prefix[i] = sum += x[i];
    }
  }
};

const Data& data() {
  static const Data d;
  return d;
}

// Chunks of 1024 elements (4096 of them), in place on a CPU device (in_place "auto"), copied
// ("off") or streamed (stream "on").
clreduce::Tuning chunked(const char* in_place, const char* stream) {
  clreduce::Tuning t = device().tuning();
  t.max_chunk = 1024 * sizeof(std::int32_t);
  t.in_place = in_place;
  t.stream = stream;
  return t;
}

const char* const kLayouts[][2] = {{"auto", "off"}, {"off", "off"}, {"off", "on"}};

}  // namespace

TEST_CASE("interrupt: a check that says stop ends a chunked reduction; the Device goes on",
          "[api][interrupt]") {
  clreduce::Device& dev = device();
  const Data& d = data();
  for (const auto& layout : kLayouts) {
    const ScopedTuning scoped(chunked(layout[0], layout[1]));
    CAPTURE(layout[0], layout[1]);
    // Asked once the call has lasted 5 ms, then every 20 ms: stop at the second ask.
    {
      const ScopedCheck check(2);
      const auto e = error_of([&] { dev.reduce(Op::kSum, d.x); });
      REQUIRE(e);
      CHECK(e->category() == clreduce::Errc::kInterrupted);
      CHECK_THAT(e->what(), ContainsSubstring("interrupted"));
      CHECK(std::string(clreduce::errc_name(e->category())) == "interrupted");
      CHECK(g_asked == 2);  // never asked again once it said stop
    }
    const clreduce::Result r = dev.reduce(Op::kSum, d.x);
    CAPTURE(r.layout);
    CHECK_THAT(r.layout, ContainsSubstring("4096 chunks of 1024"));
    CHECK(r.value.i == d.sum);
    const clreduce::Result m = dev.reduce(Op::kArgMin, d.x);
    CHECK(m.index() == static_cast<std::int64_t>(kArgMin));
  }
}

TEST_CASE("interrupt: a check that says stop ends a chunked scan and a user expression",
          "[api][interrupt]") {
  clreduce::Device& dev = device();
  const Data& d = data();
  clreduce::Expression sum_of;  // a user reduction through the engine's chunks
  sum_of.map = "x";
  sum_of.reduce = "a + b";
  sum_of.identity = "0";
  sum_of.acc = "int64";
  for (const auto& layout : kLayouts) {
    const ScopedTuning scoped(chunked(layout[0], layout[1]));
    CAPTURE(layout[0], layout[1]);
    // A sentinel in the output: the last chunk's results never come (the scan stopped early).
    constexpr std::int64_t kSentinel = -7;
    std::vector<std::int64_t> out(d.x.size(), kSentinel);
    {
      const ScopedCheck check(2);
      const auto e = error_of([&] { dev.scan(Op::kSum, d.x, out); });
      REQUIRE(e);
      CHECK(e->category() == clreduce::Errc::kInterrupted);
      CHECK(g_asked == 2);
      CHECK(out.back() == kSentinel);
    }
    {
      const ScopedCheck check(2);
      const auto e = error_of([&] { dev.reduce(sum_of, {clreduce::ArrayRef(d.x)}, d.x.size()); });
      REQUIRE(e);
      CHECK(e->category() == clreduce::Errc::kInterrupted);
    }
    const clreduce::Result s = dev.scan(Op::kSum, d.x, out);
    CAPTURE(s.layout);
    CHECK_THAT(s.layout, ContainsSubstring("chunks of"));
    CHECK(out == d.prefix);
    const clreduce::Result u = dev.reduce(sum_of, {clreduce::ArrayRef(d.x)}, d.x.size());
    CHECK(u.value.i == d.sum);
  }
}

TEST_CASE("interrupt: a check that never says stop is asked and changes no result",
          "[api][interrupt]") {
  clreduce::Device& dev = device();
  const Data& d = data();
  for (const auto& layout : kLayouts) {
    const ScopedTuning scoped(chunked(layout[0], layout[1]));
    CAPTURE(layout[0], layout[1]);
    const ScopedCheck check(0);
    // The chunk loops keep a few chunks in flight while a check is set: the same answers.
    const clreduce::Result r = dev.reduce(Op::kSum, d.x);
    CHECK(r.value.i == d.sum);
    const clreduce::Result m = dev.reduce(Op::kArgMin, d.x);
    CHECK(m.index() == static_cast<std::int64_t>(kArgMin));
    std::vector<std::int64_t> out;
    dev.scan(Op::kSum, d.x, out);
    CHECK(out == d.prefix);
    clreduce::Options o;
    o.verify = true;
    const clreduce::Result v =
        dev.reduce(clreduce::Derived::kMean, {clreduce::ArrayRef(d.x)}, d.x.size(), o);
    CHECK(v.verified);
    CHECK(g_asked > 0);
  }
}
