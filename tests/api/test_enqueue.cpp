// test_enqueue.cpp: the calls that only enqueue (Reduction, Scan, Compaction), as a user's
// program meets them: results in device buffers at offsets, wait lists honoured (a user event
// gating a call), a program's out-of-order queue, one plan reused for many n with n > max_n
// refused, and compaction and partition against the host's answer.
#include "api_test_device.hpp"

#include <clreduce/clreduce.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using clreduce::Cmp;
using clreduce::Compaction;
using clreduce::DType;
using clreduce::Op;

namespace {

clreduce::Device& device() {
  static clreduce::Device dev(api_test_device_spec());
  return dev;
}

template <class F> std::string error_text(F&& f) {
  try {
    f();
  } catch (const clreduce::Error& e) {
    return e.what();
  }
  return "";
}

template <class F> std::optional<clreduce::Errc> error_category(F&& f) {
  try {
    f();
  } catch (const clreduce::Error& e) {
    return e.category();
  }
  return std::nullopt;
}

template <class T> cl::Buffer upload(clreduce::Device& dev, const std::vector<T>& v) {
  cl::Buffer b(dev.context(), CL_MEM_READ_WRITE, std::max<std::size_t>(v.size(), 1) * sizeof(T));
  if (!v.empty()) dev.queue().enqueueWriteBuffer(b, CL_TRUE, 0, v.size() * sizeof(T), v.data());
  return b;
}

template <class T>
std::vector<T> download(cl::CommandQueue& q, const cl::Buffer& b, std::size_t n) {
  std::vector<T> v(n);
  if (n) q.enqueueReadBuffer(b, CL_TRUE, 0, n * sizeof(T), v.data());
  return v;
}

std::vector<unsigned char> bytes_of(cl::CommandQueue& q, const cl::Buffer& b, std::size_t n) {
  return download<unsigned char>(q, b, n);
}

cl::Buffer filled(clreduce::Device& dev, std::size_t bytes, unsigned char byte) {
  return upload(dev, std::vector<unsigned char>(bytes, byte));
}

std::vector<std::int32_t> ramp(std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>((i * 7919) % 2001) - 1000;
  return v;
}

template <class T> T at(const std::vector<unsigned char>& b, std::size_t offset) {
  T x;
  std::memcpy(&x, b.data() + offset, sizeof x);
  return x;
}

// The host's compaction: kept elements in order, then (partition) the others in order.
template <class T, class P>
std::vector<T> host_compact(const std::vector<T>& x, P keep, bool partition, std::uint64_t* kept) {
  std::vector<T> out, rest;
  for (const T& v : x) (keep(v) ? out : rest).push_back(v);
  *kept = out.size();
  if (partition) out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace

TEST_CASE("enqueue: a Reduction writes its result at a byte offset, reused for many n",
          "[api][enqueue]") {
  clreduce::Device& dev = device();
  const std::size_t max_n = 100000;
  const std::vector<std::int32_t> x = ramp(max_n);
  const cl::Buffer in = upload(dev, x);
  clreduce::Reduction sum(dev, Op::kSum, DType::kInt32, max_n);
  CHECK(sum.result_type() == DType::kInt64);
  CHECK(sum.result_bytes() == 8);
  CHECK(sum.max_n() == max_n);
  const cl::Buffer out = filled(dev, 8 * 64, 0xEE);
  // One plan, many lengths (0: the identity), each result in its own slot; no wait between.
  const std::vector<std::size_t> lengths = {0, 1, 2, 17, 1000, 4096, 65537, 99999, max_n};
  cl::Event last;
  for (std::size_t k = 0; k < lengths.size(); ++k) last = sum.enqueue(in, lengths[k], out, 8 * k);
  last.wait();
  const std::vector<unsigned char> got = bytes_of(dev.queue(), out, 8 * 64);
  for (std::size_t k = 0; k < lengths.size(); ++k) {
    CAPTURE(lengths[k]);
    CHECK(at<std::int64_t>(got, 8 * k) ==
          std::accumulate(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(lengths[k]),
                          std::int64_t{0}));
  }
  for (std::size_t b = 8 * lengths.size(); b < got.size(); ++b) REQUIRE(got[b] == 0xEE);
  // The same plan a thousand times over varying n: the last result is right, and every slot.
  std::vector<std::int64_t> want(32);
  const cl::Buffer many = filled(dev, 8 * 32, 0);
  for (int rep = 0; rep < 1000; ++rep) {
    const std::size_t n = 1 + static_cast<std::size_t>(rep * 97) % max_n, slot = rep % 32;
    last = sum.enqueue(in, n, many, 8 * slot);
    want[slot] =
        std::accumulate(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n), std::int64_t{0});
  }
  last.wait();
  CHECK(download<std::int64_t>(dev.queue(), many, 32) == want);

  // argmin of floats: the value at the offset, the int64 index 8 bytes after it (4-7 are
  // padding), nothing outside the 16 bytes.
  std::vector<float> f(5000);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = std::sin(static_cast<float>(i) * 0.37f);
  f[3001] = -2.0f;
  f[4001] = -2.0f;  // a tie: the first index
  clreduce::Reduction argmin(dev, Op::kArgMin, DType::kFloat, f.size());
  CHECK(argmin.result_bytes() == 16);
  const cl::Buffer fin = upload(dev, f), fout = filled(dev, 64, 0xEE);
  argmin.enqueue(fin, f.size(), fout, 24).wait();
  const std::vector<unsigned char> a = bytes_of(dev.queue(), fout, 64);
  CHECK(at<float>(a, 24) == -2.0f);
  CHECK(at<std::int64_t>(a, 32) == 3001);
  for (std::size_t b : {0, 23, 40, 63}) CHECK(a[b] == 0xEE);
  argmin.enqueue(fin, 3000, fout, 0).wait();  // a shorter prefix: no -2 in it
  const std::vector<unsigned char> a2 = bytes_of(dev.queue(), fout, 16);
  const auto lo = std::min_element(f.begin(), f.begin() + 3000);
  CHECK(at<float>(a2, 0) == *lo);
  CHECK(at<std::int64_t>(a2, 8) == lo - f.begin());
}

TEST_CASE("enqueue: bad requests throw before anything is enqueued; nothing is written",
          "[api][enqueue]") {
  clreduce::Device& dev = device();
  const std::vector<std::int32_t> x = ramp(1000);
  const cl::Buffer in = upload(dev, x), out = filled(dev, 32, 0xEE);
  clreduce::Reduction sum(dev, Op::kSum, DType::kInt32, 1000);
  const auto untouched = [&] {
    const std::vector<unsigned char> b = bytes_of(dev.queue(), out, 32);
    return std::all_of(b.begin(), b.end(), [](unsigned char c) { return c == 0xEE; });
  };
  CHECK(error_category([&] { sum.enqueue(in, 1001, out); }) == clreduce::Errc::kUsage);
  CHECK(error_text([&] { sum.enqueue(in, 1001, out); }) ==
        "a Reduction made for max_n = 1000 elements cannot take n = 1001: make it for the "
        "largest n it will take");
  CHECK_THAT(error_text([&] { sum.enqueue(in, 10, out, 25); }),
             ContainsSubstring("output buffer holds 32 bytes: 8 from byte offset 25 do not fit"));
  cl::Context other(dev.device());
  cl::Buffer foreign(other, CL_MEM_READ_WRITE, 4096);
  CHECK_THAT(error_text([&] { sum.enqueue(foreign, 10, out); }),
             ContainsSubstring("input buffer belongs to another cl::Context"));
  CHECK_THAT(error_text([&] { sum.enqueue(in, 10, foreign); }),
             ContainsSubstring("output buffer belongs to another cl::Context"));
  cl::UserEvent alien(other);
  CHECK(error_category([&] { sum.enqueue(in, 10, out, 0, {alien}); }) == clreduce::Errc::kUsage);
  CHECK_THAT(error_text([&] { sum.enqueue(in, 10, out, 0, {alien}); }),
             ContainsSubstring("event 0 belongs to another cl::Context"));
  alien.setStatus(CL_COMPLETE);
  clreduce::Reduction mn(dev, Op::kMin, DType::kInt32, 1000);
  CHECK_THAT(error_text([&] { mn.enqueue(in, 0, out); }), ContainsSubstring("no identity"));
  dev.queue().finish();
  CHECK(untouched());
  // Scans: arg ops, flags of the wrong kind.
  CHECK(error_category([&] { clreduce::Scan(dev, Op::kArgMax, DType::kInt32, 10); }) ==
        clreduce::Errc::kUsage);
  clreduce::Scan scan(dev, Op::kSum, DType::kInt32, 1000);
  cl::Buffer y(dev.context(), CL_MEM_READ_WRITE, 1000 * 4);
  CHECK_THAT(error_text([&] { scan.enqueue(in, 1000, y); }),
             ContainsSubstring("fewer than n = 1000 (a sum scan of int32 writes int64)"));
  CHECK_THAT(error_text([&] { scan.enqueue_segmented(in, 10, y, y); }),
             ContainsSubstring("takes no flags"));
  // Compactions: an expression that is not one, or does not compile, or names y.
  CHECK(error_text(
            [&] { Compaction(dev, DType::kInt32, 10, clreduce::Predicate::where("x > 0; x")); }) ==
        "Predicate::expr 'x > 0; x' is not one expression: it holds ';' (an expression "
        "may not end itself or add code)");
  CHECK_THAT(
      error_text([&] { Compaction(dev, DType::kInt32, 10, clreduce::Predicate::where("x > q")); }),
      ContainsSubstring("Predicate::expr 'x > q' does not compile: column 5"));
  CHECK_THAT(
      error_text([&] { Compaction(dev, DType::kInt32, 10, clreduce::Predicate::where("x > y")); }),
      ContainsSubstring("a compaction has one array, x"));
  Compaction sel(dev, DType::kInt32, 1000, {Cmp::kGreater, 0});
  cl::Buffer count = filled(dev, 8, 0);
  CHECK_THAT(error_text([&] { sel.enqueue(in, 1000, in, count); }),
             ContainsSubstring("may not be its input"));
  CHECK_THAT(error_text([&] { sel.enqueue(in, 10, y, count, 1); }),
             ContainsSubstring("count buffer holds 8 bytes"));
}

TEST_CASE("enqueue: a user event gates the call; events chain calls with no wait between",
          "[api][enqueue]") {
  clreduce::Device& dev = device();
  const std::size_t n = 50000;
  std::vector<std::int32_t> x = ramp(n);
  const cl::Buffer in = upload(dev, x), out = filled(dev, 16, 0);
  clreduce::Reduction sum(dev, Op::kSum, DType::kInt32, n);
  cl::UserEvent gate(dev.context());
  const cl::Event e = sum.enqueue(in, n, out, 0, {gate});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(e.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>() != CL_COMPLETE);
  // While the call waits, the input changes (on a queue of the program's own): the reduction
  // must see the new data.
  cl::CommandQueue mine(dev.context(), dev.device());
  std::fill(x.begin(), x.end(), 3);
  mine.enqueueWriteBuffer(in, CL_TRUE, 0, n * 4, x.data());
  gate.setStatus(CL_COMPLETE);
  e.wait();
  CHECK(download<std::int64_t>(dev.queue(), out, 1)[0] == 3 * static_cast<std::int64_t>(n));

  // A chain: scan -> reduction of the scan -> compaction of the scan, each waiting for the one
  // before, read once at the end.
  std::vector<std::int32_t> z = ramp(n);
  const cl::Buffer zin = upload(dev, z);
  clreduce::Scan scan(dev, Op::kSum, DType::kInt32, n);
  clreduce::Reduction mx(dev, Op::kMax, DType::kInt64, n);
  Compaction pos(dev, DType::kInt64, n, {Cmp::kGreater, 0});
  cl::Buffer y(dev.context(), CL_MEM_READ_WRITE, n * 8),
      kept(dev.context(), CL_MEM_READ_WRITE, n * 8);
  const cl::Buffer res = filled(dev, 32, 0);
  const cl::Event e1 = scan.enqueue(zin, n, y);
  const cl::Event e2 = mx.enqueue(y, n, res, 0, {e1});
  const cl::Event e3 = pos.enqueue(y, n, kept, res, 8, {e1});
  cl::Event::waitForEvents({e2, e3});
  std::vector<std::int64_t> prefix(n);
  std::partial_sum(z.begin(), z.end(), prefix.begin(),
                   [](std::int64_t a, std::int64_t b) { return a + b; });
  const std::vector<std::int64_t> r = download<std::int64_t>(dev.queue(), res, 2);
  CHECK(r[0] == *std::max_element(prefix.begin(), prefix.end()));
  std::uint64_t want_kept = 0;
  const std::vector<std::int64_t> want = host_compact(
      prefix, [](std::int64_t v) { return v > 0; }, false, &want_kept);
  CHECK(static_cast<std::uint64_t>(r[1]) == want_kept);
  CHECK(download<std::int64_t>(dev.queue(), kept, want_kept) == want);
}

TEST_CASE("enqueue: on a program's out-of-order queue, events order the work", "[api][enqueue]") {
  const cl::Device cl_dev = device().device();
  if (!(cl_dev.getInfo<CL_DEVICE_QUEUE_PROPERTIES>() & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)) {
    WARN("the device has no out-of-order queues");
    return;
  }
  cl::Context own(cl_dev);
  cl::CommandQueue q(own, cl_dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  clreduce::Device dev(own, cl_dev, q);
  const std::size_t n = 70001;
  cl::Buffer in(own, CL_MEM_READ_WRITE, n * 4), out(own, CL_MEM_READ_WRITE, 64);
  clreduce::Reduction sum(dev, Op::kSum, DType::kInt32, n);
  clreduce::Compaction odd(dev, DType::kInt32, n, clreduce::Predicate::where("(x & 1) != 0"),
                           Compaction::Mode::kPartition);
  cl::Buffer part(own, CL_MEM_READ_WRITE, n * 4);
  for (int round = 1; round <= 3; ++round) {
    cl::Event filled_in, zeroed;
    q.enqueueFillBuffer(in, cl_int{round}, 0, n * 4, nullptr, &filled_in);
    q.enqueueFillBuffer(out, cl_uchar{0xEE}, 0, 64, nullptr, &zeroed);
    const cl::Event s = sum.enqueue(in, n, out, 16, {filled_in, zeroed});
    const cl::Event c = odd.enqueue(in, n, part, out, 40, {filled_in, zeroed});
    std::vector<unsigned char> b(64);
    std::vector<cl::Event> both = {s, c};
    q.enqueueReadBuffer(out, CL_TRUE, 0, 64, b.data(), &both);
    CHECK(at<std::int64_t>(b, 16) ==
          static_cast<std::int64_t>(round) * static_cast<std::int64_t>(n));
    CHECK(at<std::uint64_t>(b, 40) == (round % 2 ? n : 0));
    CHECK(b[15] == 0xEE);
    CHECK(b[24] == 0xEE);
    std::vector<std::int32_t> p(n);
    q.enqueueReadBuffer(part, CL_TRUE, 0, n * 4, p.data(), &both);
    CHECK(std::all_of(p.begin(), p.end(), [&](std::int32_t v) { return v == round; }));
  }
}

TEST_CASE("enqueue: Scan, inclusive, exclusive and segmented by device flags, many n",
          "[api][enqueue]") {
  clreduce::Device& dev = device();
  const std::size_t max_n = 30011;
  const std::vector<std::int32_t> x = ramp(max_n);
  std::vector<unsigned char> flags(max_n, 0);
  for (std::size_t i = 0; i < max_n; i += 1 + i % 37) flags[i] = 1;
  const cl::Buffer in = upload(dev, x), fl = upload(dev, flags);
  cl::Buffer y(dev.context(), CL_MEM_READ_WRITE, max_n * 8);
  for (const bool exclusive : {false, true}) {
    for (const bool segmented : {false, true}) {
      CAPTURE(exclusive, segmented);
      clreduce::PlanOptions o;
      o.exclusive = exclusive;
      o.segmented = segmented;
      clreduce::Scan scan(dev, Op::kSum, DType::kInt32, max_n, o);
      for (const std::size_t n : {std::size_t{1}, std::size_t{100}, std::size_t{4097}, max_n}) {
        CAPTURE(n);
        (segmented ? scan.enqueue_segmented(in, n, fl, y) : scan.enqueue(in, n, y)).wait();
        std::vector<std::int64_t> want(n);
        std::int64_t run = 0;
        for (std::size_t i = 0; i < n; ++i) {
          if (segmented && flags[i]) run = 0;
          if (exclusive) {
            want[i] = run;
            run += x[i];
          } else {
            run += x[i];
            want[i] = run;
          }
        }
        CHECK(download<std::int64_t>(dev.queue(), y, n) == want);
      }
    }
  }
}

namespace {

// Restores a Device's tuning knobs when it goes.
class KnobGuard {
 public:
  KnobGuard(clreduce::Device& dev, const std::string& key, const std::string& value)
      : dev_(dev), saved_(dev.tuning()) {
    clreduce::set_tuning(dev.tuning(), key + "=" + value);
  }
  ~KnobGuard() { dev_.tuning() = saved_; }
  KnobGuard(const KnobGuard&) = delete;
  KnobGuard& operator=(const KnobGuard&) = delete;

 private:
  clreduce::Device& dev_;
  clreduce::Tuning saved_;
};

// The host's scan of x[0, n) in A (the seeds' loop: the identity at every flagged element),
// wrapping as the device does for unsigned A.
template <class T, class A>
std::vector<A> host_scan(const std::vector<T>& x, const std::vector<unsigned char>* flags, Op op,
                         bool exclusive, std::size_t n) {
  const A identity = op == Op::kSum                         ? A(0)
                     : op == Op::kProd                      ? A(1)
                     : op == Op::kMin                       ? std::numeric_limits<A>::has_infinity
                                                                  ? std::numeric_limits<A>::infinity()
                                                                  : std::numeric_limits<A>::max()
                                           : std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                            : std::numeric_limits<A>::lowest();
  std::vector<A> y(n);
  A run = identity;
  for (std::size_t i = 0; i < n; ++i) {
    if (flags && (*flags)[i]) run = identity;
    const A v = static_cast<A>(x[i]);
    const A next = op == Op::kSum    ? A(run + v)
                   : op == Op::kProd ? A(run * v)
                   : op == Op::kMin  ? std::min(run, v)
                                     : std::max(run, v);
    y[i] = exclusive ? run : next;
    run = next;
  }
  return y;
}

// One plan of every (exclusive, segmented) form asked for, enqueued on sizes 1, 1000 and
// 2^20 + 3 into three outputs back to back with no wait between, then read once; every element
// compared exactly with the host's (float data hold small integers, so each partial sum or
// product is exact).
template <class T, class A>
void check_enqueued_scans(clreduce::Device& dev, Op op, DType type, const std::vector<T>& x,
                          const std::vector<unsigned char>& flags, bool exclusive, bool segmented) {
  CAPTURE(clreduce::op_name(op), clreduce::dtype_name(type), exclusive, segmented);
  const std::size_t max_n = x.size();
  clreduce::PlanOptions o;
  o.exclusive = exclusive;
  o.segmented = segmented;
  clreduce::Scan scan(dev, op, type, max_n, o);
  REQUIRE(clreduce::dtype_size(scan.result_type()) == sizeof(A));
  INFO(scan.plan());
  CHECK_THAT(scan.plan(), ContainsSubstring("scan-lookback: look-back"));
  const cl::Buffer in = upload(dev, x), fl = upload(dev, flags);
  const std::size_t sizes[] = {1, 1000, max_n};
  std::vector<cl::Buffer> ys;
  for (const std::size_t n : sizes) {
    ys.emplace_back(dev.context(), CL_MEM_READ_WRITE, n * sizeof(A));
    if (segmented)
      scan.enqueue_segmented(in, n, fl, ys.back());
    else
      scan.enqueue(in, n, ys.back());
  }
  dev.queue().finish();
  for (std::size_t k = 0; k < 3; ++k) {
    const std::size_t n = sizes[k];
    CAPTURE(n);
    const std::vector<A> want = host_scan<T, A>(x, segmented ? &flags : nullptr, op, exclusive, n);
    const std::vector<A> got = download<A>(dev.queue(), ys[k], n);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (!(got[i] == want[i]) && wrong++ == 0)
        UNSCOPED_INFO("first wrong: y[" << i << "] = " << +got[i] << ", expected " << +want[i]);
    CHECK(wrong == 0);
  }
}

}  // namespace

TEST_CASE("enqueue: Scan on the look-back path, every op, back to back, predecessors folded too",
          "[api][enqueue][lookback]") {
  // scan-fast's look-back path (NVIDIA GPUs' choice), forced here: one launch a call; with
  // lookback-limit 0 each group folds the tiles before its own in the kernel instead of reading
  // their descriptors, and every element is still exact.
  clreduce::Device& dev = device();
  const std::string limit = GENERATE(std::string("0"), std::string(""));
  CAPTURE(limit);
  const KnobGuard path(dev, "scan-fast-path", "lookback");
  std::optional<KnobGuard> folds;
  if (!limit.empty()) folds.emplace(dev, "lookback-limit", limit);
  CHECK((clreduce::Scan(dev, Op::kSum, DType::kInt32, 100000).plan().find(", limit 0") !=
         std::string::npos) == !limit.empty());
  const std::size_t n = (std::size_t{1} << 20) + 3;
  std::mt19937_64 rng(2024);
  std::vector<unsigned char> flags(n, 0);
  for (auto& f : flags) f = rng() % 5000 == 0;
  flags[0] = 1;
  flags[700] = 1;
  std::vector<std::int32_t> i32(n);
  std::vector<std::uint32_t> u32(n);
  std::vector<std::int64_t> i64(n);
  std::vector<float> small(n), unit(n);
  std::vector<double> f64(n);
  for (std::size_t i = 0; i < n; ++i) {
    i32[i] = static_cast<std::int32_t>(rng() % 2001) - 1000;
    u32[i] = static_cast<std::uint32_t>(rng() % 7) + 1;
    i64[i] = static_cast<std::int64_t>(rng()) >> 3;
    small[i] = static_cast<float>(static_cast<int>(rng() % 7) - 3);
    unit[i] = rng() % 2 ? 1.0f : -1.0f;
    f64[i] = std::ldexp(static_cast<double>(static_cast<std::int64_t>(rng() >> 11)), -20);
  }
  for (const bool exclusive : {false, true})
    for (const bool segmented : {false, true})
      check_enqueued_scans<std::int32_t, std::int64_t>(dev, Op::kSum, DType::kInt32, i32, flags,
                                                       exclusive, segmented);
  check_enqueued_scans<float, float>(dev, Op::kSum, DType::kFloat, small, flags, false, true);
  check_enqueued_scans<std::uint32_t, std::uint64_t>(dev, Op::kProd, DType::kUInt32, u32, flags,
                                                     true, false);
  check_enqueued_scans<float, float>(dev, Op::kProd, DType::kFloat, unit, flags, true, true);
  check_enqueued_scans<std::int64_t, std::int64_t>(dev, Op::kMin, DType::kInt64, i64, flags, false,
                                                   true);
  check_enqueued_scans<float, float>(dev, Op::kMin, DType::kFloat, small, flags, true, false);
  check_enqueued_scans<std::int32_t, std::int32_t>(dev, Op::kMax, DType::kInt32, i32, flags, false,
                                                   false);
  if (dev.summary().fp64)
    check_enqueued_scans<double, double>(dev, Op::kMax, DType::kDouble, f64, flags, true, true);
}

TEST_CASE("enqueue: select and partition against the host, int32 and float, 0, 1, many kept",
          "[api][enqueue]") {
  clreduce::Device& dev = device();
  const std::size_t max_n = 40009;
  for (const auto mode : {Compaction::Mode::kSelect, Compaction::Mode::kPartition}) {
    const bool partition = mode == Compaction::Mode::kPartition;
    CAPTURE(partition);
    // int32: x > 0.5 is x >= 1, compared exactly; thresholds keeping none, one, about half, all.
    const std::vector<std::int32_t> x = ramp(max_n);
    const cl::Buffer in = upload(dev, x);
    cl::Buffer out(dev.context(), CL_MEM_READ_WRITE, max_n * 4);
    const cl::Buffer count = filled(dev, 24, 0xEE);
    for (const double v : {1000.0, 999.5, 0.5, -1000.5}) {
      Compaction c(dev, DType::kInt32, max_n, {Cmp::kGreater, v}, mode);
      for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{777}, max_n}) {
        CAPTURE(v, n);
        const std::vector<std::int32_t> xs(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n));
        std::uint64_t kept = 0;
        const std::vector<std::int32_t> want = host_compact(
            xs, [&](std::int32_t e) { return e > v; }, partition, &kept);
        c.enqueue(in, n, out, count, 3).wait();
        const std::vector<unsigned char> cb = bytes_of(dev.queue(), count, 24);
        CHECK(at<std::uint64_t>(cb, 3) == kept);
        CHECK(cb[2] == 0xEE);
        CHECK(cb[11] == 0xEE);
        CHECK(download<std::int32_t>(dev.queue(), out, want.size()) == want);
      }
    }
    // One kept: exactly one element equals 999 in the first 2001 (ramp is a permutation there).
    {
      Compaction one(dev, DType::kInt32, max_n, {Cmp::kEqual, 999}, mode);
      one.enqueue(in, 2001, out, count, 0).wait();
      CHECK(download<std::uint64_t>(dev.queue(), count, 1)[0] == 1);
      CHECK(download<std::int32_t>(dev.queue(), out, 1)[0] == 999);
    }
    // float: against a double threshold no float equals (0.1), a NaN, infinities, each Cmp.
    std::vector<float> f(max_n);
    for (std::size_t i = 0; i < max_n; ++i) f[i] = std::sin(static_cast<float>(i)) * 0.2f;
    f[5] = 0.1f;
    f[6] = std::numeric_limits<float>::quiet_NaN();
    f[7] = std::numeric_limits<float>::infinity();
    f[8] = -std::numeric_limits<float>::infinity();
    const cl::Buffer fin = upload(dev, f);
    cl::Buffer fout(dev.context(), CL_MEM_READ_WRITE, max_n * 4);
    const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
    };
    for (const Cmp cmp : {Cmp::kLess, Cmp::kLessEqual, Cmp::kGreater, Cmp::kGreaterEqual,
                          Cmp::kEqual, Cmp::kNotEqual}) {
      for (const double v : {0.1, static_cast<double>(0.1f), 1e300, -1e300,
                             std::numeric_limits<double>::quiet_NaN()}) {
        CAPTURE(static_cast<int>(cmp), v);
        const auto keep = [&](float e) {
          const double d = e;
          switch (cmp) {
            case Cmp::kLess: return d < v;
            case Cmp::kLessEqual: return d <= v;
            case Cmp::kGreater: return d > v;
            case Cmp::kGreaterEqual: return d >= v;
            case Cmp::kEqual: return d == v;
            case Cmp::kNotEqual: return d != v;
          }
          return false;
        };
        std::uint64_t kept = 0;
        const std::vector<float> want = host_compact(f, keep, partition, &kept);
        Compaction c(dev, DType::kFloat, max_n, {cmp, v}, mode);
        c.enqueue(fin, max_n, fout, count, 8).wait();
        CHECK(download<std::uint64_t>(dev.queue(), count, 2)[1] == kept);
        CHECK(same(download<float>(dev.queue(), fout, want.size()), want));
      }
    }
    // An expression predicate over floats.
    Compaction band(dev, DType::kFloat, max_n, clreduce::Predicate::where("x > -0.05f && x < 0.1f"),
                    mode);
    std::uint64_t kept = 0;
    const std::vector<float> want = host_compact(
        f, [](float e) { return e > -0.05f && e < 0.1f; }, partition, &kept);
    band.enqueue(fin, max_n, fout, count).wait();
    CHECK(download<std::uint64_t>(dev.queue(), count, 1)[0] == kept);
    CHECK(same(download<float>(dev.queue(), fout, want.size()), want));
  }
}

TEST_CASE("enqueue: QueueUse::kProgram runs on the program's in-order queue, as kOwn computes",
          "[api][enqueue][queue_use]") {
  const cl::Device cl_dev = device().device();
  cl::Context own(cl_dev);
  cl::CommandQueue q(own, cl_dev);  // in order, no profiling: PyOpenCL's default queue
  clreduce::Device mine(own, cl_dev, q);
  clreduce::Device direct(own, cl_dev, q, clreduce::QueueUse::kProgram);
  CHECK(mine.queue_use() == clreduce::QueueUse::kOwn);
  CHECK(direct.queue_use() == clreduce::QueueUse::kProgram);
  CHECK(direct.queue()() == q());
  CHECK(direct.context()() == own());

  const std::size_t n = 70001;
  const std::vector<std::int32_t> x = ramp(n);
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) f[i] = std::sin(static_cast<float>(i) * 0.37f);
  f[4242] = 3.0f;
  cl::Buffer in(own, CL_MEM_READ_WRITE, n * 4), fin(own, CL_MEM_READ_WRITE, n * 4);
  q.enqueueWriteBuffer(in, CL_TRUE, 0, n * 4, x.data());
  q.enqueueWriteBuffer(fin, CL_TRUE, 0, n * 4, f.data());
  const std::int64_t want_sum = std::accumulate(x.begin(), x.end(), std::int64_t{0});

  // Reductions: the same bytes from both Devices, the sum the host's; the direct plan's event is
  // a command of the program's queue, the other's of a queue of clreduce's own.
  clreduce::Reduction sum_own(mine, Op::kSum, DType::kInt32, n);
  clreduce::Reduction sum_direct(direct, Op::kSum, DType::kInt32, n);
  clreduce::Reduction argmax_own(mine, Op::kArgMax, DType::kFloat, n);
  clreduce::Reduction argmax_direct(direct, Op::kArgMax, DType::kFloat, n);
  cl::Buffer out(own, CL_MEM_READ_WRITE, 64);
  q.enqueueFillBuffer(out, cl_uchar{0xEE}, 0, 64);
  const cl::Event e1 = sum_own.enqueue(in, n, out, 0);
  const cl::Event e2 = argmax_own.enqueue(fin, n, out, 16);
  CHECK(e1.getInfo<CL_EVENT_COMMAND_QUEUE>()() != q());
  cl::Event::waitForEvents({e1, e2});
  const cl::Event e3 = sum_direct.enqueue(in, n, out, 32);
  const cl::Event e4 = argmax_direct.enqueue(fin, n, out, 48);
  CHECK(e3.getInfo<CL_EVENT_COMMAND_QUEUE>()() == q());
  CHECK(e4.getInfo<CL_EVENT_COMMAND_QUEUE>()() == q());
  // Read on the same queue right after, with no wait list: the queue's order is the wait.
  std::vector<unsigned char> b(64);
  q.enqueueReadBuffer(out, CL_FALSE, 0, 64, b.data());
  q.finish();
  CHECK(e4.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>() == CL_COMPLETE);
  CHECK(at<std::int64_t>(b, 0) == want_sum);
  CHECK(at<std::int64_t>(b, 32) == want_sum);
  CHECK(at<float>(b, 16) == 3.0f);
  CHECK(at<std::int64_t>(b, 24) == 4242);
  CHECK(std::memcmp(b.data() + 16, b.data() + 48, 4) == 0);
  CHECK(at<std::int64_t>(b, 56) == 4242);

  // The program's commands before a call are in it, with no wait list: a fill, then the sum.
  q.enqueueFillBuffer(in, cl_int{3}, 0, n * 4);
  sum_direct.enqueue(in, n, out, 8).wait();
  CHECK(download<std::int64_t>(q, out, 2)[1] == 3 * static_cast<std::int64_t>(n));
  q.enqueueWriteBuffer(in, CL_TRUE, 0, n * 4, x.data());

  // A wait list still gates the call (a user event): not done before it is set.
  cl::UserEvent gate(own);
  const cl::Event gated = sum_direct.enqueue(in, n, out, 0, {gate});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(gated.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>() != CL_COMPLETE);
  gate.setStatus(CL_COMPLETE);
  gated.wait();
  CHECK(download<std::int64_t>(q, out, 1)[0] == want_sum);

  // Scans, inclusive and exclusive, and a compaction: the same outputs from both Devices.
  for (const bool exclusive : {false, true}) {
    CAPTURE(exclusive);
    clreduce::PlanOptions o;
    o.exclusive = exclusive;
    clreduce::Scan scan_own(mine, Op::kSum, DType::kInt32, n, o);
    clreduce::Scan scan_direct(direct, Op::kSum, DType::kInt32, n, o);
    cl::Buffer y1(own, CL_MEM_READ_WRITE, n * 8), y2(own, CL_MEM_READ_WRITE, n * 8);
    scan_own.enqueue(in, n, y1).wait();
    const cl::Event s = scan_direct.enqueue(in, n, y2);
    CHECK(s.getInfo<CL_EVENT_COMMAND_QUEUE>()() == q());
    const std::vector<std::int64_t> got = download<std::int64_t>(q, y2, n);
    CHECK(got == download<std::int64_t>(q, y1, n));
    CHECK(got[n - 1] == (exclusive ? want_sum - x[n - 1] : want_sum));
  }
  Compaction pos_own(mine, DType::kInt32, n, {Cmp::kGreater, 0});
  Compaction pos_direct(direct, DType::kInt32, n, {Cmp::kGreater, 0});
  cl::Buffer k1(own, CL_MEM_READ_WRITE, n * 4), k2(own, CL_MEM_READ_WRITE, n * 4);
  pos_own.enqueue(in, n, k1, out, 0).wait();
  pos_direct.enqueue(in, n, k2, out, 8);
  const std::vector<std::uint64_t> kept = download<std::uint64_t>(q, out, 2);
  std::uint64_t want_kept = 0;
  const std::vector<std::int32_t> want = host_compact(
      x, [](std::int32_t v) { return v > 0; }, false, &want_kept);
  CHECK(kept[0] == want_kept);
  CHECK(kept[1] == want_kept);
  CHECK(download<std::int32_t>(q, k2, want_kept) == want);

  // The blocking calls run there too: the same values; no kernel time on a queue that does not
  // profile (NaN), a wall time still.
  const clreduce::Result r_own = mine.reduce(Op::kSum, DType::kInt32, in, n);
  const clreduce::Result r_direct = direct.reduce(Op::kSum, DType::kInt32, in, n);
  CHECK(r_direct.value.i == want_sum);
  CHECK(r_own.value.i == want_sum);
  CHECK(r_own.kernel_ms >= 0);
  CHECK(std::isnan(r_direct.kernel_ms));
  CHECK(r_direct.wall_ms >= 0);
  cl::Buffer y(own, CL_MEM_READ_WRITE, n * 4);
  direct.scan(Op::kMax, DType::kInt32, in, n, y);  // int32 out
  CHECK(download<std::int32_t>(q, y, n).back() == *std::max_element(x.begin(), x.end()));
}

TEST_CASE(
    "enqueue: no event asked for, on the program's queue: its order holds as arguments "
    "change from call to call",
    "[api][enqueue][queue_use]") {
  const cl::Device cl_dev = device().device();
  cl::Context own(cl_dev);
  cl::CommandQueue q(own, cl_dev);
  clreduce::Device direct(own, cl_dev, q, clreduce::QueueUse::kProgram);
  clreduce::Device mine(own, cl_dev, q);
  const std::size_t n = 20011;
  std::vector<std::int32_t> xa = ramp(n), xb(n);
  std::vector<float> fa(n), fb(n);
  for (std::size_t i = 0; i < n; ++i) {
    xb[i] = static_cast<std::int32_t>((i * 2654435761u) % 2001) - 1000;
    fa[i] = std::sin(static_cast<float>(i) * 0.37f);
    fb[i] = std::cos(static_cast<float>(i) * 0.11f);
  }
  cl::Buffer a(own, CL_MEM_READ_WRITE, n * 4), b(own, CL_MEM_READ_WRITE, n * 4),
      af(own, CL_MEM_READ_WRITE, n * 4), bf(own, CL_MEM_READ_WRITE, n * 4);
  q.enqueueWriteBuffer(a, CL_TRUE, 0, n * 4, xa.data());
  q.enqueueWriteBuffer(b, CL_TRUE, 0, n * 4, xb.data());
  q.enqueueWriteBuffer(af, CL_TRUE, 0, n * 4, fa.data());
  q.enqueueWriteBuffer(bf, CL_TRUE, 0, n * 4, fb.data());

  // The plan keeps what it set last (n, first) and sets the buffers every call: the calls change
  // the input, the range, the output and its offset in every pattern, none waited for.
  struct Call {
    bool second;
    std::size_t first, len, at;
  };
  const std::vector<Call> calls = {
      {false, 0, n, 0},     {false, 0, n, 16},     {true, 0, n, 32},
      {true, 5, n - 5, 48}, {false, 5, n - 5, 64}, {false, 5, 17, 80},
      {true, 0, 1, 96},     {true, 0, 1, 112},     {false, 3, 999, 128}};
  clreduce::Reduction sum(direct, Op::kSum, DType::kInt32, n);
  clreduce::Reduction argmax(direct, Op::kArgMax, DType::kFloat, n);
  cl::Buffer out(own, CL_MEM_READ_WRITE, 160), out2(own, CL_MEM_READ_WRITE, 160);
  q.enqueueFillBuffer(out, cl_uchar{0xEE}, 0, 160);
  q.enqueueFillBuffer(out2, cl_uchar{0xEE}, 0, 160);
  for (const Call& c : calls) {
    sum.enqueue(c.second ? b : a, c.first, c.len, out, c.at, {}, nullptr);
    argmax.enqueue(c.second ? bf : af, c.first, c.len, out2, c.at, {}, nullptr);
  }
  const std::vector<unsigned char> got = download<unsigned char>(q, out, 160);
  const std::vector<unsigned char> got2 = download<unsigned char>(q, out2, 160);
  for (const Call& c : calls) {
    CAPTURE(c.second, c.first, c.len, c.at);
    const std::vector<std::int32_t>& x = c.second ? xb : xa;
    const std::vector<float>& f = c.second ? fb : fa;
    CHECK(at<std::int64_t>(got, c.at) ==
          std::accumulate(x.begin() + c.first, x.begin() + c.first + c.len, std::int64_t{0}));
    const auto best = std::max_element(f.begin() + c.first, f.begin() + c.first + c.len);
    CHECK(at<float>(got2, c.at) == *best);
    CHECK(at<std::int64_t>(got2, c.at + 8) == best - (f.begin() + c.first));
  }

  // Asked for, the event is given back, a command of the program's queue; on a Device of
  // clreduce's own queue, none asked for, the result is there once a later call's event is.
  cl::Event done;
  sum.enqueue(b, 0, n, out, 0, {}, &done);
  REQUIRE(done() != nullptr);
  CHECK(done.getInfo<CL_EVENT_COMMAND_QUEUE>()() == q());
  done.wait();
  CHECK(download<std::int64_t>(q, out, 1)[0] ==
        std::accumulate(xb.begin(), xb.end(), std::int64_t{0}));
  clreduce::Reduction sum_own(mine, Op::kSum, DType::kInt32, n);
  sum_own.enqueue(a, 0, n, out, 0, {}, nullptr);
  sum_own.enqueue(b, 0, n, out, 8).wait();
  const std::vector<std::int64_t> both = download<std::int64_t>(q, out, 2);
  CHECK(both[0] == std::accumulate(xa.begin(), xa.end(), std::int64_t{0}));
  CHECK(both[1] == std::accumulate(xb.begin(), xb.end(), std::int64_t{0}));

  // Scans, the device's own path and the look-back, inclusive and exclusive: sizes and buffers
  // changing, no events, every element against the host's.
  for (const std::string variant : {"", "scan-lookback"}) {
    for (const bool exclusive : {false, true}) {
      CAPTURE(variant, exclusive);
      clreduce::PlanOptions o;
      o.variant = variant;
      o.exclusive = exclusive;
      clreduce::Scan scan(direct, Op::kSum, DType::kInt32, n, o);
      const std::vector<std::size_t> lens = {n, n, 1000, 1, n - 7};
      std::vector<cl::Buffer> ys;
      for (std::size_t k = 0; k < lens.size(); ++k) {
        ys.emplace_back(own, CL_MEM_READ_WRITE, n * 8);
        scan.enqueue(k % 2 ? b : a, 0, lens[k], ys.back(), 0, {}, nullptr);
      }
      for (std::size_t k = 0; k < lens.size(); ++k) {
        CAPTURE(k);
        const std::vector<std::int32_t>& x = k % 2 ? xb : xa;
        std::vector<std::int64_t> want(lens[k]);
        std::int64_t s = 0;
        for (std::size_t i = 0; i < lens[k]; ++i) {
          if (exclusive) want[i] = s;
          s += x[i];
          if (!exclusive) want[i] = s;
        }
        CHECK(download<std::int64_t>(q, ys[k], lens[k]) == want);
      }
    }
  }
}

TEST_CASE("enqueue: QueueUse::kProgram on a queue that profiles measures kernel time",
          "[api][enqueue][queue_use]") {
  const cl::Device cl_dev = device().device();
  cl::Context own(cl_dev);
  cl::CommandQueue q(own, cl_dev, CL_QUEUE_PROFILING_ENABLE);
  clreduce::Device direct(own, cl_dev, q, clreduce::QueueUse::kProgram);
  const std::vector<std::int32_t> x = ramp(5000);
  const clreduce::Result r = direct.reduce(Op::kSum, x);
  CHECK(r.value.i == std::accumulate(x.begin(), x.end(), std::int64_t{0}));
  CHECK(r.kernel_ms >= 0);  // a number, not NaN
  CHECK(r.kernel_ms_max >= r.kernel_ms_min);
}

TEST_CASE("enqueue: QueueUse::kProgram refuses an out-of-order queue",
          "[api][enqueue][queue_use]") {
  const cl::Device cl_dev = device().device();
  if (!(cl_dev.getInfo<CL_DEVICE_QUEUE_PROPERTIES>() & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)) {
    WARN("the device has no out-of-order queues");
    return;
  }
  cl::Context own(cl_dev);
  cl::CommandQueue q(own, cl_dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  const auto make = [&] { clreduce::Device d(own, cl_dev, q, clreduce::QueueUse::kProgram); };
  CHECK(error_category(make) == clreduce::Errc::kUsage);
  CHECK_THAT(error_text(make),
             ContainsSubstring("out of order") && ContainsSubstring("QueueUse::kOwn"));
  // The default use takes it (a queue of clreduce's own beside it).
  clreduce::Device beside(own, cl_dev, q, clreduce::QueueUse::kOwn);
  CHECK(beside.queue_use() == clreduce::QueueUse::kOwn);
}
