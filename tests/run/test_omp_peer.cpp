// test_omp_peer.cpp: checks the OpenMP peer against simple sequential loops: integers exactly
// (including wrap-around), floats within |err| <= n * eps * sum|x| (per element for scans).
#include "run/omp_peer.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using clreduce::PeerTiming;

// The benchmark's counter-based generator: element i of seed s (same formula as clreduce's).
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
std::uint64_t gen_bits(std::uint64_t seed, std::uint64_t i) {
  return splitmix64(seed * 0x9E3779B97F4A7C15ULL + i);
}
std::int32_t gen_i32(std::uint64_t seed, std::uint64_t i) {
  return static_cast<std::int32_t>(gen_bits(seed, i) % 2001) - 1000;
}
float gen_f32(std::uint64_t seed, std::uint64_t i) {
  return static_cast<float>(static_cast<double>(gen_bits(seed, i) >> 40) * 0x1p-24 * 2.0 - 1.0);
}

std::vector<std::int32_t> make_i32(std::size_t n, std::uint64_t seed) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = gen_i32(seed, i);
  return v;
}
std::vector<float> make_f32(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = gen_f32(seed, i);
  return v;
}
// Values within 1000 of INT32_MAX or INT32_MIN, so 32-bit running sums wrap constantly.
std::vector<std::int32_t> make_extreme_i32(std::size_t n, std::uint64_t seed) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t z = gen_bits(seed, i);
    const auto d = static_cast<std::int32_t>(z % 1000);
    v[i] = (z >> 63) ? std::numeric_limits<std::int32_t>::max() - d
                     : std::numeric_limits<std::int32_t>::min() + d;
  }
  return v;
}

// Sizes from empty through below, at and above the parallel threshold, to several scan blocks.
const std::size_t kSizes[] = {
    0, 1, 2, 3, 1000, std::size_t{1} << 15, 100003, (std::size_t{1} << 20) + 3};
const float kEps = std::numeric_limits<float>::epsilon();

void check_timing(const PeerTiming& t) {
  CHECK(t.threads >= 1);
  CHECK(t.ms_min >= 0.0);
  CHECK(t.ms_min <= t.ms_median);
  CHECK(t.ms_median <= t.ms_max);
}

// Runs body once with the default thread count and, with OpenMP, with 1 and 3 threads
// (3 does not divide the sizes evenly, so partition edges are exercised).
template <class Body> void for_thread_counts(Body body) {
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  for (int nt : {saved, 1, 3}) {
    omp_set_num_threads(nt);
    body();
  }
  omp_set_num_threads(saved);
#else
  body();
#endif
}

}  // namespace

TEST_CASE("omp_reduce_sum_i32 equals the sequential int64 sum exactly", "[omp_peer]") {
  const std::size_t n = GENERATE(from_range(std::begin(kSizes), std::end(kSizes)));
  CAPTURE(n);
  for (auto data : {make_i32(n, 7), make_extreme_i32(n, 8)}) {
    std::uint64_t ref = 0;
    for (std::int32_t v : data) ref += static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
    for_thread_counts([&] {
      std::int64_t got = -1;
      const PeerTiming t = clreduce::omp_reduce_sum_i32(data.data(), n, &got, 1, 3);
      CHECK(got == static_cast<std::int64_t>(ref));
      check_timing(t);
    });
  }
}

TEST_CASE("omp_reduce_sum_f32 is within n*eps*sum|x| of the exact sum", "[omp_peer]") {
  const std::size_t n = GENERATE(from_range(std::begin(kSizes), std::end(kSizes)));
  CAPTURE(n);
  const std::vector<float> data = make_f32(n, 11);
  double exact = 0.0;
  double abs_sum = 0.0;
  float seq = 0.0f;
  for (float v : data) {
    exact += v;
    abs_sum += std::fabs(v);
    seq += v;
  }
  const double bound = static_cast<double>(n) * kEps * abs_sum;
  // The bound is the one the plain sequential float loop meets too.
  REQUIRE(std::fabs(static_cast<double>(seq) - exact) <= bound);
  for_thread_counts([&] {
    float got = std::nanf("");
    const PeerTiming t = clreduce::omp_reduce_sum_f32(data.data(), n, &got, 1, 3);
    CAPTURE(got, exact, bound);
    CHECK(std::fabs(static_cast<double>(got) - exact) <= bound);
    check_timing(t);
  });
}

TEST_CASE("omp_scan_i32_i64 equals the sequential int64 cumsum exactly", "[omp_peer]") {
  const std::size_t n = GENERATE(from_range(std::begin(kSizes), std::end(kSizes)));
  CAPTURE(n);
  for (auto data : {make_i32(n, 21), make_extreme_i32(n, 22)}) {
    std::vector<std::int64_t> ref(n);
    std::uint64_t run = 0;
    for (std::size_t i = 0; i < n; ++i) {
      run += static_cast<std::uint64_t>(static_cast<std::int64_t>(data[i]));
      ref[i] = static_cast<std::int64_t>(run);
    }
    for_thread_counts([&] {
      std::vector<std::int64_t> got(n, -1);
      const PeerTiming t = clreduce::omp_scan_i32_i64(data.data(), n, got.data(), 1, 2);
      CHECK(got == ref);
      check_timing(t);
    });
  }
}

TEST_CASE("omp_scan_i32_i32 equals the sequential wrapping int32 scan exactly", "[omp_peer]") {
  const std::size_t n = GENERATE(from_range(std::begin(kSizes), std::end(kSizes)));
  CAPTURE(n);
  for (auto data : {make_i32(n, 31), make_extreme_i32(n, 32)}) {
    std::vector<std::int32_t> ref(n);
    std::uint32_t run = 0;
    for (std::size_t i = 0; i < n; ++i) {
      run += static_cast<std::uint32_t>(data[i]);
      ref[i] = static_cast<std::int32_t>(run);
    }
    for_thread_counts([&] {
      std::vector<std::int32_t> got(n, -1);
      const PeerTiming t = clreduce::omp_scan_i32_i32(data.data(), n, got.data(), 1, 2);
      CHECK(got == ref);
      check_timing(t);
    });
  }
}

TEST_CASE("omp_scan_f32 element i is within (i+1)*eps*sum|x[0..i]| of the exact prefix",
          "[omp_peer]") {
  const std::size_t n = GENERATE(from_range(std::begin(kSizes), std::end(kSizes)));
  CAPTURE(n);
  const std::vector<float> data = make_f32(n, 41);
  std::vector<double> exact(n);
  std::vector<double> bound(n);
  double run = 0.0;
  double abs_run = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    run += data[i];
    abs_run += std::fabs(data[i]);
    exact[i] = run;
    bound[i] = static_cast<double>(i + 1) * kEps * abs_run;
  }
  for_thread_counts([&] {
    std::vector<float> got(n, std::nanf(""));
    const PeerTiming t = clreduce::omp_scan_f32(data.data(), n, got.data(), 1, 2);
    std::size_t bad = 0;
    std::size_t first_bad = n;
    for (std::size_t i = 0; i < n; ++i) {
      if (!(std::fabs(static_cast<double>(got[i]) - exact[i]) <= bound[i])) {
        if (bad++ == 0) first_bad = i;
      }
    }
    CAPTURE(first_bad);
    CHECK(bad == 0);
    check_timing(t);
  });
}
