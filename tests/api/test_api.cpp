// test_api.cpp: the public API as a user's program meets it: only <clreduce/clreduce.hpp>, linked
// against the shared library. Host arrays and cl::Buffers, reductions and scans, the arg index,
// the verdict (off unless asked), the program cache across calls, the error category and text of
// bad requests, the environment read only when asked, and devices opened from two threads.
#include "api_test_device.hpp"

#include <clreduce/clreduce.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using clreduce::DType;
using clreduce::Op;

namespace {

// The device spec under test (api_test_device.hpp).
std::string device_spec() { return api_test_device_spec(); }

// The device under test: $CLREDUCE_TEST_DEVICE (an index or name), else 0; opened once.
clreduce::Device& device() {
  static clreduce::Device dev(device_spec());
  return dev;
}

// Options that ask for the check against the sequential reference (off by default).
clreduce::Options checked() {
  clreduce::Options o;
  o.verify = true;
  return o;
}

// Sets environment variables for one scope and restores what was there before.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.push_back({name, old != nullptr, old ? old : ""});
      if (value)
        ::setenv(name, value, 1);
      else
        ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const Saved& s : saved_) {
      if (s.set)
        ::setenv(s.name.c_str(), s.value.c_str(), 1);
      else
        ::unsetenv(s.name.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  struct Saved {
    std::string name;
    bool set;
    std::string value;
  };
  std::vector<Saved> saved_;
};

// The message of the Error that f throws; "" when it throws none.
template <class F> std::string error_text(F&& f) {
  try {
    f();
  } catch (const clreduce::Error& e) {
    return e.what();
  }
  return "";
}

// The category of the Error that f throws; none when it throws none.
template <class F> std::optional<clreduce::Errc> error_category(F&& f) {
  try {
    f();
  } catch (const clreduce::Error& e) {
    return e.category();
  }
  return std::nullopt;
}

std::vector<std::int32_t> ramp(std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>((i * 7919) % 2001) - 1000;
  return v;
}

}  // namespace

TEST_CASE("api: devices are listed and opened by index or name", "[api]") {
  const auto list = clreduce::Device::list();
  REQUIRE(!list.empty());
  clreduce::Device& dev = device();
  const auto& s = dev.summary();
  REQUIRE(s.index < list.size());
  CHECK(list[s.index].name == s.name);
  CHECK(!s.name.empty());
  CHECK(s.compute_units > 0);
  CHECK(s.max_alloc > 0);
  // A substring of its name opens the same device.
  clreduce::Device by_name(s.name.substr(0, 6));
  CHECK(by_name.summary().name.substr(0, 6) == s.name.substr(0, 6));
  clreduce::Device by_index(s.index);
  CHECK(by_index.summary().name == s.name);
  // A build tree reads the source tree's kernels.
  CHECK(dev.kernel_dir() == CLREDUCE_SOURCE_KERNEL_DIR);
  CHECK(dev.context()() != nullptr);
  CHECK(dev.queue()() != nullptr);
  CHECK(dev.device()() != nullptr);
  CHECK(std::string(clreduce::version()) == CLREDUCE_VERSION);
}

TEST_CASE("api: the version macros work in #if; the library's build has neither MPI nor OpenMP",
          "[api]") {
#if CLREDUCE_VERSION_MAJOR * 10000 + CLREDUCE_VERSION_MINOR * 100 + CLREDUCE_VERSION_PATCH < 100
  FAIL("the version macros say clreduce is older than 0.1.0");
#endif
  CHECK(std::to_string(CLREDUCE_VERSION_MAJOR) + "." + std::to_string(CLREDUCE_VERSION_MINOR) +
            "." + std::to_string(CLREDUCE_VERSION_PATCH) ==
        clreduce::version());
  const std::string b = clreduce::build_options();
  CHECK_THAT(b, ContainsSubstring("opencl: API 1.2"));
  CHECK_THAT(b, !ContainsSubstring("mpi") && !ContainsSubstring("openmp"));
}

TEST_CASE("api: reduce a host array: value, timings, plan, verdict, no rebuild", "[api]") {
  clreduce::Device& dev = device();
  const std::vector<std::int32_t> x = ramp(100003);
  const std::int64_t want = std::accumulate(x.begin(), x.end(), std::int64_t{0});
  clreduce::Options o = checked();
  o.repeat = 3;
  const clreduce::Result r = dev.reduce(Op::kSum, x, o);
  CAPTURE(r.plan, r.verdict);
  CHECK(r.variant == "fast");
  CHECK(r.acc == DType::kInt64);  // NumPy's accumulator for int32 sums
  CHECK(r.value.type == DType::kInt64);
  CHECK(r.value.i == want);
  CHECK(r.n == x.size());
  CHECK(r.checked);
  CHECK(r.verified);
  CHECK(r.verdict == "verified");
  CHECK(r.expected.i == want);
  CHECK(r.launches >= 1);
  CHECK(r.kernel_ms_min <= r.kernel_ms);
  CHECK(r.kernel_ms <= r.kernel_ms_max);
  CHECK_THAT(r.plan, ContainsSubstring("wg="));
  CHECK(r.index() == -1);
  // Again, on another array of the same shape: the programs are cached on the device.
  std::vector<std::int32_t> y = x;
  y[5] += 1;
  const clreduce::Result again = dev.reduce(Op::kSum, y, o);
  CHECK(again.value.i == want + 1);
  CHECK(again.verified);
  CHECK(again.builds == 0);
  // A named variant, and the 32-bit wrapping accumulator.
  o.variant = "topdown";
  o.acc = "int32";
  const clreduce::Result t = dev.reduce(Op::kSum, x, o);
  CHECK(t.variant == "topdown");
  CHECK(t.acc == DType::kInt32);
  CHECK(t.value.i == static_cast<std::int32_t>(want));
  CHECK(t.verified);
}

TEST_CASE("api: reduce a cl::Buffer: argmin's index, verification opt-in", "[api]") {
  clreduce::Device& dev = device();
  const std::size_t n = 50000;
  std::vector<std::int64_t> keys(n, std::numeric_limits<std::int64_t>::max());
  keys[31337] = -5;
  keys[40000] = -5;  // a tie: the first index wins
  keys[7] = 12;
  cl::Buffer buf(dev.context(), CL_MEM_READ_WRITE, n * sizeof(std::int64_t));
  dev.queue().enqueueWriteBuffer(buf, CL_TRUE, 0, n * sizeof(std::int64_t), keys.data());
  clreduce::Result r = dev.reduce(Op::kArgMin, DType::kInt64, buf, n);
  CHECK(r.value.i == -5);
  CHECK(r.index() == 31337);
  CHECK_FALSE(r.checked);
  CHECK_FALSE(r.verified);
  CHECK(r.verdict == "not checked");
  clreduce::Options o;
  o.verify = true;
  r = dev.reduce(Op::kArgMin, DType::kInt64, buf, n, o);
  CHECK(r.checked);
  CHECK(r.verified);
  CHECK(r.expected.index == 31337);
  // A prefix of the buffer.
  r = dev.reduce(Op::kArgMin, DType::kInt64, buf, 1000, o);
  CHECK(r.index() == 7);
  CHECK(r.verified);
  // argmax of floats: the first NaN, as NumPy.
  std::vector<float> f(3000, 0.5f);
  f[100] = 2.0f;
  f[2000] = std::nanf("");
  f[2500] = std::nanf("");
  r = dev.reduce(Op::kArgMax, f, checked());
  CHECK(r.index() == 2000);
  CHECK(std::isnan(r.value.f));
  CHECK(r.verified);
}

TEST_CASE("api: scan host arrays and buffers, inclusive, exclusive, segmented", "[api]") {
  clreduce::Device& dev = device();
  const std::vector<std::int32_t> x = ramp(70001);
  std::vector<std::int64_t> want(x.size());
  std::partial_sum(x.begin(), x.end(), want.begin(),
                   [](std::int64_t a, std::int64_t b) { return a + b; });

  std::vector<std::int64_t> y;
  clreduce::Result r = dev.scan(Op::kSum, x, y, checked());
  CAPTURE(r.plan, r.verdict);
  CHECK(r.variant == "scan-fast");
  CHECK(r.checked);
  CHECK(r.verified);
  CHECK(y == want);
  CHECK(r.value.i == want.back());

  clreduce::Options o = checked();
  o.exclusive = true;
  o.variant = "scan-blelloch";
  r = dev.scan(Op::kSum, x, y, o);
  CHECK(r.verified);
  CHECK(y[0] == 0);
  CHECK(y[1] == want[0]);
  CHECK(y.back() == want[want.size() - 2]);

  // Segmented max, a segment every 1000 elements.
  clreduce::Options seg = checked();
  seg.segments.assign(x.size(), 0);
  for (std::size_t i = 0; i < x.size(); i += 1000) seg.segments[i] = 1;
  std::vector<std::int32_t> m;
  r = dev.scan(Op::kMax, x, m, seg);
  CHECK(r.verified);
  CHECK(m[1000] == x[1000]);
  CHECK(m[1999] == *std::max_element(x.begin() + 1000, x.begin() + 2000));

  // Device buffers: int32 in, int64 out; not checked unless asked.
  const std::size_t n = x.size();
  cl::Buffer in(dev.context(), CL_MEM_READ_ONLY, n * 4),
      out(dev.context(), CL_MEM_READ_WRITE, n * 8);
  dev.queue().enqueueWriteBuffer(in, CL_TRUE, 0, n * 4, x.data());
  r = dev.scan(Op::kSum, DType::kInt32, in, n, out);
  CHECK_FALSE(r.checked);
  CHECK(r.value.i == want.back());
  std::vector<std::int64_t> back(n);
  dev.queue().enqueueReadBuffer(out, CL_TRUE, 0, n * 8, back.data());
  CHECK(back == want);
  clreduce::Options check;
  check.verify = true;
  r = dev.scan(Op::kSum, DType::kInt32, in, n, out, check);
  CHECK(r.checked);
  CHECK(r.verified);
}

TEST_CASE("api: several variants by name agree with the reference", "[api]") {
  clreduce::Device& dev = device();
  const std::vector<std::int32_t> x = ramp(20011);
  for (const char* v : {"bottomup", "multi-element", "butterfly"}) {
    clreduce::Options o = checked();
    o.variant = v;
    if (std::string(v) == "butterfly") o.local_size = 64;
    const clreduce::Result r = dev.reduce(Op::kMin, x, o);
    CAPTURE(v, r.plan, r.verdict);
    CHECK(r.variant == v);
    CHECK(r.value.i == *std::min_element(x.begin(), x.end()));
    CHECK(r.verified);
  }
  const auto names = clreduce::reduce_variant_names();
  CHECK(std::find(names.begin(), names.end(), "fast") != names.end());
  const auto scans = clreduce::scan_variant_names();
  CHECK(std::find(scans.begin(), scans.end(), "scan-lookback") != scans.end());
}

TEST_CASE(
    "api: exact returns the correctly rounded sum, checked bit for bit; other ops are refused",
    "[api]") {
  clreduce::Device& dev = device();
  if (!dev.summary().fp64) SKIP("no fp64");
  // 1e30 + 1 + 2^-24 - 1e30: the correctly rounded float sum is 1 (a tie, to even).
  std::vector<float> x(10007, 0.0f);
  x[0] = 1e30f;
  x[5000] = 1.0f;
  x[7000] = 0x1p-24f;
  x[10006] = -1e30f;
  clreduce::Options o = checked();
  o.variant = "exact";
  const clreduce::Result r = dev.reduce(Op::kSum, x, o);
  CAPTURE(r.plan, r.verdict);
  CHECK(r.verified);
  CHECK(r.value.f == 1.0);
  try {
    dev.reduce(Op::kMax, x, o);
    FAIL("exact took max");
  } catch (const clreduce::Error& e) {
    CHECK(e.category() == clreduce::Errc::kUnsupported);
    CHECK_THAT(e.what(), ContainsSubstring("float and double only"));
  }
}

TEST_CASE("api: empty arrays and the result types", "[api]") {
  clreduce::Device& dev = device();
  const std::vector<double> none;
  if (dev.summary().fp64) {
    const clreduce::Result r = dev.reduce(Op::kProd, none, checked());
    CHECK(r.value.f == 1.0);
    CHECK(r.launches == 0);
    CHECK(r.verified);
  }
  CHECK(clreduce::result_dtype(Op::kSum, DType::kInt32) == DType::kInt64);
  CHECK(clreduce::result_dtype(Op::kSum, DType::kUInt32, "uint32") == DType::kUInt32);
  CHECK(clreduce::result_dtype(Op::kMax, DType::kFloat) == DType::kFloat);
  CHECK(clreduce::dtype_of<std::uint64_t>() == DType::kUInt64);
  CHECK(clreduce::dtype_of<float>() == DType::kFloat);
}

TEST_CASE("api: bad requests throw Error with their category", "[api]") {
  clreduce::Device& dev = device();
  const auto usage = clreduce::Errc::kUsage;
  const std::vector<std::int32_t> x = ramp(100), empty;
  std::vector<std::int64_t> y;
  clreduce::Options o;
  CHECK(error_category([&] { dev.reduce(Op::kArgMin, empty); }) == usage);
  o.variant = "nope";
  CHECK(error_category([&] { dev.reduce(Op::kSum, x, o); }) == usage);
  o.variant = "scan-fast";
  CHECK(error_category([&] { dev.reduce(Op::kSum, x, o); }) == usage);
  o.variant = "fast";
  CHECK(error_category([&] { dev.scan(Op::kSum, x, y, o); }) == usage);
  CHECK(error_category([&] { dev.scan(Op::kArgMax, x, y); }) == usage);
  std::vector<std::int32_t> wrong_type;
  CHECK(error_category([&] { dev.scan(Op::kSum, x, wrong_type); }) == usage);
  clreduce::Options seg;
  seg.segments.assign(3, 1);
  CHECK(error_category([&] { dev.scan(Op::kSum, x, y, seg); }) == clreduce::Errc::kInput);
  clreduce::Options acc;
  acc.acc = "float";
  CHECK(error_category([&] { dev.reduce(Op::kSum, x, acc); }) == usage);
  // Buffers: too small, and from another context.
  cl::Buffer small(dev.context(), CL_MEM_READ_WRITE, 16);
  CHECK(error_category([&] { dev.reduce(Op::kSum, DType::kInt32, small, 100); }) == usage);
  cl::Context other(dev.device());
  cl::Buffer foreign(other, CL_MEM_READ_WRITE, 400);
  CHECK(error_category([&] { dev.reduce(Op::kSum, DType::kInt32, foreign, 100); }) == usage);
  try {
    dev.reduce(Op::kSum, DType::kInt32, foreign, 100);
  } catch (const clreduce::Error& e) {
    CHECK_THAT(e.what(), ContainsSubstring("another cl::Context"));
  }
  CHECK(error_category([] { clreduce::Device("no such device anywhere"); }) == usage);
  CHECK(error_category([] { clreduce::Device("0", "/nonexistent/kernels"); }) ==
        clreduce::Errc::kBuild);
}

TEST_CASE("api: save_npy writes a NumPy file", "[api]") {
  namespace fs = std::filesystem;
  const fs::path path =
      fs::temp_directory_path() / ("clreduce_api_" + std::to_string(::getpid()) + ".npy");
  const std::vector<std::int64_t> v = {-1, 0, 42, std::numeric_limits<std::int64_t>::max()};
  clreduce::save_npy(path.string(), DType::kInt64, v.data(), v.size());
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  fs::remove(path);
  REQUIRE(bytes.size() > 10);
  CHECK(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
  // Version 1.0: a 2-byte little-endian header length; the data starts 64-byte aligned.
  const std::size_t data_at =
      10 + static_cast<unsigned char>(bytes[8]) + 256u * static_cast<unsigned char>(bytes[9]);
  CHECK(data_at % 64 == 0);
  REQUIRE(bytes.size() == data_at + v.size() * 8);
  CHECK_THAT(bytes.substr(0, data_at), ContainsSubstring("'descr': '<i8'"));
  CHECK_THAT(bytes.substr(0, data_at), ContainsSubstring("'shape': (4,)"));
  CHECK(std::memcmp(bytes.data() + data_at, v.data(), v.size() * 8) == 0);
  CHECK(error_category([&] {
          clreduce::save_npy("/nonexistent/dir/x.npy", DType::kInt64, v.data(), 1);
        }) == clreduce::Errc::kInput);
}

TEST_CASE("api: verification is the caller's choice, off by default", "[api]") {
  clreduce::Device& dev = device();
  CHECK_FALSE(clreduce::Options{}.verify);
  const std::vector<std::int32_t> x = ramp(5003);
  const std::int64_t want = std::accumulate(x.begin(), x.end(), std::int64_t{0});
  clreduce::Result r = dev.reduce(Op::kSum, x);
  CHECK(r.value.i == want);
  CHECK_FALSE(r.checked);
  CHECK_FALSE(r.verified);
  CHECK(r.verdict == "not checked");
  std::vector<std::int64_t> y;
  r = dev.scan(Op::kSum, x, y);
  CHECK_FALSE(r.checked);
  CHECK(r.verdict == "not checked");
  REQUIRE(y.size() == x.size());
  CHECK(y.back() == want);
  r = dev.reduce(Op::kSum, x, checked());
  CHECK(r.checked);
  CHECK(r.verified);
}

TEST_CASE("api: a Device reads no environment variable unless the program asks", "[api]") {
  // Values the clreduce command would refuse or act on: the library does neither.
  const ScopedEnv env({{"CLREDUCE_FAST_GROUPS", "abc"},
                       {"CLREDUCE_STREAM_SLOTS", "5"},
                       {"CLREDUCE_KERNEL_DIR", "/nonexistent/kernels"}});
  std::optional<clreduce::Device> dev;
  REQUIRE_NOTHROW(dev.emplace(device_spec()));
  CHECK(dev->tuning().fast_groups == 0);
  CHECK(dev->tuning().stream_slots == 3);
  CHECK(dev->kernel_dir() == CLREDUCE_SOURCE_KERNEL_DIR);
  const std::vector<std::int32_t> x = ramp(4099);
  const clreduce::Result r = dev->reduce(Op::kMax, x, checked());
  CHECK(r.value.i == *std::max_element(x.begin(), x.end()));
  CHECK(r.verified);
}

TEST_CASE("api: Device::from_environment reads CLREDUCE_KERNEL_DIR and CLREDUCE_<KEY>", "[api]") {
  const std::string spec = device_spec();
  {
    const ScopedEnv env({{"CLREDUCE_FAST_GROUPS", "abc"}, {"CLREDUCE_KERNEL_DIR", nullptr}});
    CHECK(error_category([&] { clreduce::Device::from_environment(spec); }) ==
          clreduce::Errc::kUsage);
    CHECK_THAT(error_text([&] { clreduce::Device::from_environment(spec); }),
               ContainsSubstring("CLREDUCE_FAST_GROUPS must be a count from 1 to 2^20, not 'abc'"));
  }
  {
    const ScopedEnv env(
        {{"CLREDUCE_FAST_GROUPS", nullptr}, {"CLREDUCE_KERNEL_DIR", "/nonexistent/kernels"}});
    CHECK(error_category([&] { clreduce::Device::from_environment(spec); }) ==
          clreduce::Errc::kBuild);
    CHECK_THAT(error_text([&] { clreduce::Device::from_environment(spec); }),
               ContainsSubstring("tried CLREDUCE_KERNEL_DIR=/nonexistent/kernels"));
  }
  const ScopedEnv env(
      {{"CLREDUCE_FAST_GROUPS", "3"}, {"CLREDUCE_KERNEL_DIR", CLREDUCE_SOURCE_KERNEL_DIR}});
  clreduce::Device dev = clreduce::Device::from_environment(spec);
  CHECK(dev.tuning().fast_groups == 3);
  CHECK(clreduce::tuning_from_env().fast_groups == 3);
  CHECK(dev.kernel_dir() == CLREDUCE_SOURCE_KERNEL_DIR);
  const std::vector<std::int32_t> x = ramp(70001);
  const clreduce::Result r = dev.reduce(Op::kSum, x, checked());
  CAPTURE(r.plan);
  CHECK(r.value.i == std::accumulate(x.begin(), x.end(), std::int64_t{0}));
  CHECK(r.verified);
  CHECK_THAT(r.plan, ContainsSubstring("groups=3"));
}

TEST_CASE("api: two threads open devices and run reductions and scans at once", "[api]") {
  // Unserialised, PoCL 3.1 crashed in clGetDeviceIDs within 30 enumerations from two threads.
  // Builds on both threads at once: the exit handler that names a build the compiler ended
  // must not keep a build that has ended (a crash at exit), nor fd 2 stay silenced.
  const std::string spec = device_spec();
  const std::vector<std::int32_t> x = ramp(300007);
  const std::int64_t want = std::accumulate(x.begin(), x.end(), std::int64_t{0});
  constexpr int kThreads = 2, kLists = 30, kOpens = 10;
  // The builds silence fd 2 (the compiler's chatter): afterwards it is the file it was before.
  struct stat stderr_before {};
  REQUIRE(::fstat(2, &stderr_before) == 0);
  std::vector<std::string> failed(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::string& why = failed[static_cast<std::size_t>(t)];
      try {
        // Both threads enumerate and open together, as far as the scheduler allows.
        ++ready;
        while (ready.load() < kThreads) std::this_thread::yield();
        for (int i = 0; i < kLists; ++i)
          if (clreduce::Device::list().empty()) why = "Device::list() found nothing";
        for (int i = 0; i < kOpens; ++i)
          if (clreduce::Device(spec).summary().name.empty()) why = "a device with no name";
        clreduce::Device dev(spec);
        clreduce::Options o = checked();
        o.variant = t == 0 ? "fast" : "topdown";
        const clreduce::Result r = dev.reduce(Op::kSum, x, o);
        std::vector<std::int64_t> y;
        const clreduce::Result s = dev.scan(Op::kSum, x, y, checked());
        if (r.value.i != want || !r.verified || !s.verified || y.back() != want)
          why = "sum " + std::to_string(r.value.i) + " (" + r.verdict + "), scan " + s.verdict;
      } catch (const std::exception& e) {
        why = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    CHECK(failed[static_cast<std::size_t>(t)] == "");  // the expansion shows what failed
  }
  struct stat stderr_after {};
  REQUIRE(::fstat(2, &stderr_after) == 0);
  CHECK(stderr_after.st_dev == stderr_before.st_dev);
  CHECK(stderr_after.st_ino == stderr_before.st_ino);
}

TEST_CASE("api: a buffer too small names its elements, the accumulator and what to change",
          "[api]") {
  clreduce::Device& dev = device();
  const std::size_t n = 1000;
  const std::vector<std::int32_t> x = ramp(n);
  cl::Buffer in(dev.context(), CL_MEM_READ_WRITE, n * 4),
      out(dev.context(), CL_MEM_READ_WRITE, n * 4);
  dev.queue().enqueueWriteBuffer(in, CL_TRUE, 0, n * 4, x.data());
  const std::vector<std::int32_t> marker(n, 0x5A5A5A5A);
  dev.queue().enqueueWriteBuffer(out, CL_TRUE, 0, n * 4, marker.data());
  // A sum scan of int32 writes int64 (NumPy's accumulator): an int32-sized output is too small.
  CHECK(error_category([&] { dev.scan(Op::kSum, DType::kInt32, in, n, out); }) ==
        clreduce::Errc::kUsage);
  CHECK(error_text([&] { dev.scan(Op::kSum, DType::kInt32, in, n, out); }) ==
        "output buffer holds 4000 bytes, 500 int64 elements, fewer than n = 1000 (a sum scan of "
        "int32 writes int64): pass a buffer of 8000 bytes or a smaller n; Options::acc = "
        "\"int32\" keeps int32 (wrapping on overflow)");
  std::vector<std::int32_t> back(n);
  dev.queue().enqueueReadBuffer(out, CL_TRUE, 0, n * 4, back.data());
  CHECK(back == marker);  // nothing written
  // The change the message names: a 32-bit scan fits that buffer.
  clreduce::Options o = checked();
  o.acc = "int32";
  const clreduce::Result r = dev.scan(Op::kSum, DType::kInt32, in, n, out, o);
  CHECK(r.verified);
  dev.queue().enqueueReadBuffer(out, CL_TRUE, 0, n * 4, back.data());
  std::vector<std::int32_t> want(n);
  std::partial_sum(x.begin(), x.end(), want.begin());
  CHECK(back == want);
  // An accumulator chosen already is not offered again.
  o.acc = "int64";
  CHECK(error_text([&] { dev.scan(Op::kSum, DType::kInt32, in, n, out, o); }) ==
        "output buffer holds 4000 bytes, 500 int64 elements, fewer than n = 1000 (a sum scan of "
        "int32 writes int64): pass a buffer of 8000 bytes or a smaller n");
  CHECK(error_text([&] { dev.reduce(Op::kSum, DType::kInt32, in, n + 1); }) ==
        "input buffer holds 4000 bytes, 1000 int32 elements, fewer than n = 1001: pass a buffer "
        "of 4004 bytes or a smaller n");
  // Host arrays: the output's element type.
  std::vector<std::int32_t> y32;
  CHECK(error_text([&] { dev.scan(Op::kSum, x, y32); }) ==
        "sum scan of int32 writes int64, not int32: pass an output of int64; Options::acc = "
        "\"int32\" keeps int32 (wrapping on overflow)");
  std::vector<std::int64_t> y64;
  CHECK(error_text([&] { dev.scan(Op::kMax, x, y64); }) ==
        "max scan of int32 writes int32, not int64: pass an output of int32");
}

TEST_CASE("api: a Device on the program's own context and queue (in-order and out-of-order)",
          "[api]") {
  const cl::Device cl_dev = device().device();
  cl::Context own(cl_dev);
  const std::size_t n = 200003;
  std::vector<std::int32_t> x = ramp(n);
  std::vector<cl_command_queue_properties> kinds = {0};
  if (cl_dev.getInfo<CL_DEVICE_QUEUE_PROPERTIES>() & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
    kinds.push_back(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  else
    WARN("the device has no out-of-order queues: only an in-order one is tried");
  for (const cl_command_queue_properties props : kinds) {
    CAPTURE(props);
    cl::CommandQueue q(own, cl_dev, props);
    clreduce::Device dev(own, cl_dev, q);
    CHECK(dev.context()() == own());
    CHECK(dev.queue()() == q());
    CHECK(dev.device()() == cl_dev());
    CHECK(dev.summary().name == device().summary().name);
    CHECK(dev.summary().index == device().summary().index);
    cl::Buffer in(own, CL_MEM_READ_WRITE, n * 4), out(own, CL_MEM_READ_WRITE, n * 8);
    // Enqueued on the program's queue and not waited for: the call waits for it.
    q.enqueueWriteBuffer(in, CL_FALSE, 0, n * 4, x.data());
    clreduce::Result r = dev.reduce(Op::kSum, DType::kInt32, in, n, checked());
    CHECK(r.value.i == std::accumulate(x.begin(), x.end(), std::int64_t{0}));
    CHECK(r.verified);
    CHECK(r.kernel_ms > 0);
    // A fill of the program's own, not waited for either, then a scan into the program's
    // buffer, read back on the program's queue: the buffers are used where they are.
    const cl_int seven = 7;
    q.enqueueFillBuffer(in, seven, 0, (n / 2) * 4);
    std::fill(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n / 2), 7);
    r = dev.scan(Op::kSum, DType::kInt32, in, n, out, checked());
    CHECK(r.verified);
    std::vector<std::int64_t> want(n), back(n);
    std::partial_sum(x.begin(), x.end(), want.begin(),
                     [](std::int64_t a, std::int64_t b) { return a + b; });
    CHECK(r.value.i == want.back());
    q.enqueueReadBuffer(out, CL_TRUE, 0, n * 8, back.data());
    CHECK(back == want);
    // Another context's buffer is still refused, and nothing runs.
    cl::Buffer foreign(device().context(), CL_MEM_READ_WRITE, n * 4);
    CHECK_THAT(error_text([&] { dev.reduce(Op::kSum, DType::kInt32, foreign, n); }),
               ContainsSubstring("belongs to another cl::Context"));
  }
  // Objects that do not belong together.
  cl::Context other(cl_dev);
  cl::CommandQueue other_queue(other, cl_dev);
  CHECK(error_category([&] { clreduce::Device(own, cl_dev, other_queue); }) ==
        clreduce::Errc::kUsage);
  CHECK(error_text([&] { clreduce::Device(own, cl_dev, other_queue); }) ==
        "Device(context, device, queue): the queue belongs to another cl::Context");
  CHECK(error_category([&] { clreduce::Device(own, cl_dev, cl::CommandQueue()); }) ==
        clreduce::Errc::kUsage);
}
