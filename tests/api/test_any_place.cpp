// test_any_place.cpp: arrays of any size in any place through the public API: host arrays read
// in place on a CPU device at every element offset from a 128-byte boundary (the variants whose
// kernels read any start) or copied (the others, and memory not aligned to its element), arrays
// past a small max-chunk in chunks and streamed, and ranges of a device buffer at any element
// offset, blocking and through a Reduction plan.
#include "api_test_device.hpp"

#include <clreduce/clreduce.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
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

bool cpu() { return device().summary().type == "CPU"; }

template <class F> std::optional<clreduce::Errc> error_category(F&& f) {
  try {
    f();
  } catch (const clreduce::Error& e) {
    return e.category();
  }
  return std::nullopt;
}

// Sets knobs of the device's tuning for one scope, restoring them after.
class ScopedTuning {
 public:
  explicit ScopedTuning(clreduce::Tuning t) : saved_(device().tuning()) { device().tuning() = t; }
  ~ScopedTuning() { device().tuning() = saved_; }
  ScopedTuning(const ScopedTuning&) = delete;
  ScopedTuning& operator=(const ScopedTuning&) = delete;

 private:
  clreduce::Tuning saved_;
};

// Host memory that starts at a multiple of 4096 bytes, with `bytes` usable after any offset
// below 4096.
struct Aligned {
  explicit Aligned(std::size_t bytes) : raw(bytes + 8192) {
    const auto p = reinterpret_cast<std::uintptr_t>(raw.data());
    base = raw.data() + (4096 - p % 4096) % 4096;
  }
  std::vector<unsigned char> raw;
  unsigned char* base;
};

// Element i of a test array of T: small integers (exact float sums), a unique minimum.
template <class T> T element(std::size_t i) {
  return static_cast<T>(static_cast<int>((i * 7919) % 201) - 100) + (i == 1234 ? T(-1000) : T(0));
}

template <class T> struct Want {
  double sum = 0;
  T min = std::numeric_limits<T>::max();
  std::int64_t argmin = -1;
};

template <class T> Want<T> host_answer(const T* x, std::size_t n) {
  Want<T> w;
  for (std::size_t i = 0; i < n; ++i) {
    w.sum += static_cast<double>(x[i]);
    if (x[i] < w.min) {
      w.min = x[i];
      w.argmin = static_cast<std::int64_t>(i);
    }
  }
  return w;
}

double as_double(const clreduce::Value& v) {
  return clreduce::is_float(v.type)    ? v.f
         : clreduce::is_signed(v.type) ? static_cast<double>(v.i)
                                       : static_cast<double>(v.u);
}

// Reduces n elements of T at every element offset 0..15 from a 4096-byte boundary with
// `variant`: sum, min and argmin against the host's; in place on a CPU device where expected.
template <class T> void every_offset(const std::string& variant, bool any_start) {
  clreduce::Device& dev = device();
  const std::size_t n = 4099;  // vectors, a head and a tail
  Aligned mem((n + 16) * sizeof(T));
  for (std::size_t off = 0; off < 16; ++off) {
    T* x = reinterpret_cast<T*>(mem.base) + off;
    for (std::size_t i = 0; i < n; ++i) x[i] = element<T>(i);
    const Want<T> want = host_answer(x, n);
    clreduce::Options o;
    o.variant = variant;
    o.verify = true;
    CAPTURE(variant, clreduce::dtype_name(clreduce::dtype_of<T>()), off);
    const clreduce::Result s = dev.reduce(Op::kSum, clreduce::dtype_of<T>(), x, n, o);
    CAPTURE(s.layout, s.verdict);
    CHECK(as_double(s.value) == want.sum);
    CHECK(s.verified);
    const bool aligned = off * sizeof(T) % 128 == 0;
    if (cpu()) {
      if (any_start || aligned)
        CHECK(s.layout == "whole, in place");
      else
        CHECK(s.layout == "whole, copied");
    }
    if (variant == "exact") continue;  // sums only
    const clreduce::Result m = dev.reduce(Op::kMin, clreduce::dtype_of<T>(), x, n, o);
    CHECK(as_double(m.value) == static_cast<double>(want.min));
    const clreduce::Result a = dev.reduce(Op::kArgMin, clreduce::dtype_of<T>(), x, n, o);
    CHECK(a.index() == want.argmin);
    CHECK(a.verified);
  }
}

}  // namespace

TEST_CASE("any place: host arrays at element offsets 0..15 from 128 bytes, in place or copied",
          "[api][any-place]") {
  // fast and exact read any start in place; topdown's kernels may assume the base alignment,
  // so its arrays are used in place only at a multiple of 128 bytes and copied elsewhere.
  every_offset<float>("fast", true);
  every_offset<double>("fast", true);
  every_offset<std::int32_t>("fast", true);
  every_offset<std::int64_t>("fast", true);
  every_offset<float>("exact", true);
  every_offset<double>("exact", true);
  every_offset<float>("topdown", false);
  every_offset<double>("multi-element", false);
}

TEST_CASE("any place: memory not aligned to its element is copied, never read in place",
          "[api][any-place]") {
  clreduce::Device& dev = device();
  const std::size_t n = 3000;
  Aligned mem((n + 1) * sizeof(double));
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = element<double>(i);
  const Want<double> want = host_answer(x.data(), n);
  for (std::size_t byte : {1, 2, 4, 6}) {
    void* p = mem.base + byte;
    std::memcpy(p, x.data(), n * sizeof(double));
    for (const char* v : {"fast", "exact"}) {
      clreduce::Options o;
      o.variant = v;
      CAPTURE(byte, v);
      const clreduce::Result r = dev.reduce(Op::kSum, DType::kDouble, p, n, o);
      CHECK(r.value.f == want.sum);
      CHECK(r.layout == "whole, copied");
    }
    const clreduce::Result a = dev.reduce(Op::kArgMin, DType::kDouble, p, n);
    CHECK(a.index() == want.argmin);
  }
}

TEST_CASE("any place: a host array past max-chunk runs in chunks, in place and copied; streamed",
          "[api][any-place]") {
  clreduce::Device& dev = device();
  const std::size_t n = 100003;
  Aligned mem((n + 16) * sizeof(float));
  float* x = reinterpret_cast<float*>(mem.base) + 3;  // 12 bytes past 4096
  for (std::size_t i = 0; i < n; ++i) x[i] = element<float>(i);
  const Want<float> want = host_answer(x, n);
  clreduce::Tuning t = dev.tuning();
  t.max_chunk = 4096 * sizeof(float);  // 25 chunks of 4096 floats
  for (const char* in_place : {"auto", "off"}) {
    t.in_place = in_place;
    for (const char* stream : {"off", "on"}) {
      t.stream = stream;
      const ScopedTuning scoped(t);
      CAPTURE(in_place, stream);
      clreduce::Options o;
      o.verify = true;
      const clreduce::Result s = dev.reduce(Op::kSum, DType::kFloat, x, n, o);
      CAPTURE(s.layout, s.verdict);
      CHECK(s.value.f == want.sum);
      CHECK(s.verified);
      const bool here = cpu() && std::string(in_place) == "auto";  // in place rules out streaming
      CHECK_THAT(s.layout, ContainsSubstring("25 chunks of 4096"));
      CHECK((s.layout.find("in place") != std::string::npos) == here);
      CHECK((s.layout.find("streamed") != std::string::npos) ==
            (!here && std::string(stream) == "on"));
      const clreduce::Result a = dev.reduce(Op::kArgMin, DType::kFloat, x, n, o);
      CHECK(a.index() == want.argmin);
      CHECK(a.verified);
      // exact folds the chunks' exact states: still the correctly rounded sum.
      o.variant = "exact";
      const clreduce::Result e = dev.reduce(Op::kSum, DType::kFloat, x, n, o);
      CHECK(e.value.f == want.sum);
      CHECK(e.verified);
      // Scans carry each chunk's running value into the next.
      std::vector<std::int32_t> in(n);
      std::vector<std::int64_t> out, ref(n);
      std::int64_t run = 0;
      for (std::size_t i = 0; i < n; ++i) {
        in[i] = static_cast<std::int32_t>(element<float>(i));
        ref[i] = run += in[i];
      }
      clreduce::Options so;
      so.verify = true;
      const clreduce::Result sc = dev.scan(Op::kSum, in, out, so);
      CAPTURE(sc.layout, sc.verdict);
      CHECK(out == ref);
      CHECK(sc.verified);
      CHECK_THAT(sc.layout, ContainsSubstring("chunks of"));
    }
  }
}

TEST_CASE(
    "any place: derived ops and user expressions over host arrays past max-chunk run in chunks",
    "[api][any-place]") {
  clreduce::Device& dev = device();
  const std::size_t n = 100003;
  std::vector<double> x(n), y(n);
  long double dot = 0, sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<double>(element<float>(i));
    y[i] = static_cast<double>(element<float>(i + 7)) * 0.5;
    dot += static_cast<long double>(x[i]) * y[i];
    sum += x[i];
  }
  clreduce::Tuning t = dev.tuning();
  t.max_chunk = 4096 * sizeof(double);  // 25 chunks of 4096 doubles
  for (const char* stream : {"off", "on"}) {
    t.stream = stream;
    t.in_place = std::string(stream) == "on" ? "off" : "auto";
    const ScopedTuning scoped(t);
    CAPTURE(stream);
    clreduce::Options o;
    o.verify = true;
    const clreduce::Result d = dev.reduce(clreduce::Derived::kDot, {x, y}, n, o);
    CAPTURE(d.layout, d.verdict);
    CHECK_THAT(d.layout, ContainsSubstring("25 chunks of 4096"));
    CHECK(d.verified);
    CHECK(std::fabs(d.value.f - static_cast<double>(dot)) <=
          1e-9 * std::fabs(static_cast<double>(dot)));
    const clreduce::Result m = dev.reduce(clreduce::Derived::kMean, {x}, n, o);
    CHECK(m.verified);
    CHECK(std::fabs(m.value.f - static_cast<double>(sum / n)) <= 1e-12);
    clreduce::Expression e;
    e.map = "x*y";
    e.reduce = "a+b";
    e.identity = "0";
    e.post = "a/n";
    const clreduce::Result u = dev.reduce(e, {x, y}, n, o);
    CAPTURE(u.layout, u.verdict);
    CHECK_THAT(u.layout, ContainsSubstring("25 chunks of 4096"));
    CHECK(u.verified);
    CHECK(std::fabs(u.value.f - static_cast<double>(dot / n)) <=
          1e-9 * std::fabs(static_cast<double>(dot / n)));
  }
}

TEST_CASE("any place: host scans are read and written in place where 128-byte aligned",
          "[api][any-place]") {
  clreduce::Device& dev = device();
  const std::size_t n = 20000;
  Aligned in_mem(n * sizeof(float) + 64), out_mem(n * sizeof(float) + 64);
  for (std::size_t in_off : {0, 16}) {
    float* in = reinterpret_cast<float*>(in_mem.base + in_off);
    float* out = reinterpret_cast<float*>(out_mem.base);
    std::vector<float> ref(n);
    float run = 0;
    for (std::size_t i = 0; i < n; ++i) {
      in[i] = element<float>(i);
      ref[i] = run += in[i];  // small integers: exact in any order
    }
    clreduce::Options o;
    o.verify = true;
    const clreduce::Result r = dev.scan(Op::kSum, DType::kFloat, in, n, DType::kFloat, out, o);
    CAPTURE(in_off, r.layout, r.verdict);
    CHECK(std::equal(ref.begin(), ref.end(), out));
    CHECK(r.verified);
    if (cpu()) CHECK(r.layout == (in_off == 0 ? "whole, in place" : "whole, copied"));
  }
}

TEST_CASE("any place: ranges of a buffer at element offsets 1, 3, 1000, blocking and planned",
          "[api][any-place]") {
  clreduce::Device& dev = device();
  const std::size_t total = 8000, n = 3001;
  std::vector<float> host(total);
  for (std::size_t i = 0; i < total; ++i) host[i] = element<float>(i);
  cl::Buffer buf(dev.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, total * sizeof(float),
                 host.data());
  const std::size_t base_align = dev.device().getInfo<CL_DEVICE_MEM_BASE_ADDR_ALIGN>() / 8;
  for (std::size_t first : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{1000},
                            base_align / sizeof(float)}) {
    const Want<float> want = host_answer(host.data() + first, n);
    const bool aligned = first * sizeof(float) % base_align == 0;
    for (const char* v : {"fast", "exact", "topdown"}) {
      CAPTURE(first, v);
      clreduce::Options o;
      o.variant = v;
      o.verify = true;
      const clreduce::Result s = dev.reduce(Op::kSum, DType::kFloat, buf, first, n, o);
      CAPTURE(s.layout, s.verdict);
      CHECK(s.value.f == want.sum);
      CHECK(s.verified);
      CHECK(s.layout == (std::string(v) == "topdown" && !aligned ? "range copied" : ""));
      if (std::string(v) == "exact") continue;
      const clreduce::Result a = dev.reduce(Op::kArgMin, DType::kFloat, buf, first, n, o);
      CHECK(a.index() == want.argmin);  // from the range's start
      CHECK(a.verified);
    }
    // A plan reads the range where it lies: fast at any offset; topdown only at the alignment.
    cl::Buffer out(dev.context(), CL_MEM_READ_WRITE, 64);
    clreduce::Reduction fast(dev, Op::kArgMin, DType::kFloat, n);
    fast.enqueue(buf, first, n, out, 16).wait();
    std::int64_t index = -2;
    float value = 0;
    dev.queue().enqueueReadBuffer(out, CL_TRUE, 16, 4, &value);
    dev.queue().enqueueReadBuffer(out, CL_TRUE, 24, 8, &index);
    CHECK(value == want.min);
    CHECK(index == want.argmin);
    clreduce::PlanOptions po;
    po.variant = "topdown";
    clreduce::Reduction top(dev, Op::kSum, DType::kFloat, n, po);
    if (aligned) {
      top.enqueue(buf, first, n, out, 0).wait();
      dev.queue().enqueueReadBuffer(out, CL_TRUE, 0, 4, &value);
      CHECK(value == want.sum);
    } else {
      CHECK(error_category([&] { top.enqueue(buf, first, n, out); }) == clreduce::Errc::kUsage);
    }
  }
  // Past the buffer's end: a usage error naming the range, for both calls.
  CHECK(error_category([&] { dev.reduce(Op::kSum, DType::kFloat, buf, 5000, 3001); }) ==
        clreduce::Errc::kUsage);
  cl::Buffer out(dev.context(), CL_MEM_READ_WRITE, 16);
  clreduce::Reduction plan(dev, Op::kSum, DType::kFloat, n);
  CHECK(error_category([&] { plan.enqueue(buf, total - 10, 11, out); }) == clreduce::Errc::kUsage);
}

// The host's scan of x[first, first + n) with flags[first, first + n) (empty: none), as A.
template <class A, class T>
std::vector<A> host_scan(const std::vector<T>& x, const std::vector<unsigned char>& flags,
                         std::size_t first, std::size_t n, bool exclusive) {
  std::vector<A> want(n);
  A run = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!flags.empty() && flags[first + i]) run = 0;
    if (exclusive) want[i] = run;
    run += static_cast<A>(x[first + i]);
    if (!exclusive) want[i] = run;
  }
  return want;
}

// Scans of a buffer's range into another buffer's range, blocking and through a Scan plan, at
// element offsets 0, 1, 3, 1000 and the base alignment, in and out apart; every element of out
// outside its range keeps its sentinel. Floats hold small integers, so every sum is exact.
template <class T, class A> void check_scan_ranges(DType type) {
  clreduce::Device& dev = device();
  const std::size_t total = 6000, n = 3001;
  std::vector<T> x(total);
  std::vector<unsigned char> flags(total, 0);
  for (std::size_t i = 0; i < total; ++i) {
    x[i] = static_cast<T>(static_cast<int>((i * 7919) % 2001) - 1000);
    flags[i] = i % (1 + i % 41) == 0;
  }
  cl::Buffer in(dev.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, total * sizeof(T),
                x.data());
  cl::Buffer fl(dev.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, total, flags.data());
  cl::Buffer out(dev.context(), CL_MEM_READ_WRITE, total * sizeof(A));
  const std::size_t align = dev.device().getInfo<CL_DEVICE_MEM_BASE_ADDR_ALIGN>() / 8;
  const std::vector<std::size_t> offsets = {0, 1, 3, 1000, align / sizeof(T)};
  const A sentinel = static_cast<A>(-7);
  const auto reset = [&] {
    const std::vector<A> s(total, sentinel);
    dev.queue().enqueueWriteBuffer(out, CL_TRUE, 0, total * sizeof(A), s.data());
  };
  // out[out_first, out_first + n) is want, the rest the sentinel.
  const auto check_out = [&](std::size_t out_first, const std::vector<A>& want) {
    std::vector<A> got(total);
    dev.queue().enqueueReadBuffer(out, CL_TRUE, 0, total * sizeof(A), got.data());
    std::vector<A> expect(total, sentinel);
    std::copy(want.begin(), want.end(), expect.begin() + static_cast<std::ptrdiff_t>(out_first));
    CHECK(got == expect);
  };
  for (int mode = 0; mode < 3; ++mode) {  // inclusive, exclusive, segmented exclusive
    const bool exclusive = mode > 0, segmented = mode == 2;
    clreduce::PlanOptions po;
    po.exclusive = exclusive;
    po.segmented = segmented;
    po.any_offset = true;
    clreduce::Scan anywhere(dev, Op::kSum, type, n, po);
    po.any_offset = false;
    clreduce::Scan aligned_only(dev, Op::kSum, type, n, po);
    REQUIRE(anywhere.result_type() == clreduce::dtype_of<A>());
    for (std::size_t k = 0; k < offsets.size(); ++k) {
      const std::size_t first = offsets[k];
      for (const std::size_t out_first : {first, offsets[(k + 1) % offsets.size()]}) {
        CAPTURE(mode, first, out_first);
        const std::vector<A> want =
            host_scan<A>(x, segmented ? flags : std::vector<unsigned char>{}, first, n, exclusive);
        reset();
        (segmented ? anywhere.enqueue_segmented(in, first, n, fl, out, out_first)
                   : anywhere.enqueue(in, first, n, out, out_first))
            .wait();
        check_out(out_first, want);
        // Without any_offset: where it lies at the alignment, refused elsewhere, nothing written.
        reset();
        const bool at_align = first * sizeof(T) % align == 0 && (!segmented || first % align == 0) &&
                              out_first * sizeof(A) % align == 0;
        const auto plain = [&] {
          return segmented ? aligned_only.enqueue_segmented(in, first, n, fl, out, out_first)
                           : aligned_only.enqueue(in, first, n, out, out_first);
        };
        if (at_align) {
          plain().wait();
          check_out(out_first, want);
        } else {
          CHECK(error_category(plain) == clreduce::Errc::kUsage);
          check_out(out_first, std::vector<A>{});
        }
        // Blocking: flags from the host, the copies named in the layout, verified.
        clreduce::Options o;
        o.exclusive = exclusive;
        o.verify = true;
        if (segmented) o.segments.assign(flags.begin() + first, flags.begin() + first + n);
        reset();
        const clreduce::Result r = dev.scan(Op::kSum, type, in, first, n, out, out_first, o);
        CAPTURE(r.verdict, r.layout);
        CHECK(r.verified);
        CHECK(clreduce::value_as<A>(r.value) == want.back());
        const bool cin = first * sizeof(T) % align != 0, cout = out_first * sizeof(A) % align != 0;
        CHECK(r.layout == (cin && cout ? "input and output ranges copied"
                           : cin       ? "input range copied"
                           : cout      ? "output range copied"
                                       : ""));
        check_out(out_first, want);
      }
    }
    // Ranges past the end of in, out or flags: usage errors before anything is written.
    reset();
    const auto enq = [&](clreduce::Scan& s, std::size_t first, std::size_t out_first,
                         const cl::Buffer& f) {
      return [&, first, out_first] {
        segmented ? s.enqueue_segmented(in, first, n, f, out, out_first)
                  : s.enqueue(in, first, n, out, out_first);
      };
    };
    CHECK(error_category(enq(anywhere, total - n + 1, 0, fl)) == clreduce::Errc::kUsage);
    CHECK(error_category(enq(anywhere, 0, total - n + 1, fl)) == clreduce::Errc::kUsage);
    if (segmented) {  // n bytes of flags: the range [1, n + 1) passes their end
      cl::Buffer short_flags(dev.context(), CL_MEM_READ_WRITE, n);
      CHECK(error_category(enq(anywhere, 1, 0, short_flags)) == clreduce::Errc::kUsage);
    }
    clreduce::Options o;
    o.exclusive = exclusive;
    CHECK(error_category([&] { dev.scan(Op::kSum, type, in, total - n + 1, n, out, 0, o); }) ==
          clreduce::Errc::kUsage);
    CHECK(error_category([&] { dev.scan(Op::kSum, type, in, 0, n, out, total - n + 1, o); }) ==
          clreduce::Errc::kUsage);
    check_out(0, std::vector<A>{});
  }
}

TEST_CASE("any place: scans of buffer ranges at any element offsets in and out, planned and "
          "blocking",
          "[api][any-place][scan-ranges]") {
  SECTION("int32 into int64") { check_scan_ranges<std::int32_t, std::int64_t>(DType::kInt32); }
  SECTION("float") { check_scan_ranges<float, float>(DType::kFloat); }
}
