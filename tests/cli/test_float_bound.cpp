// test_float_bound.cpp: the command line's float checks end to end. A kernel edited to skip its
// last element is caught (topdown and fast, in a copy of the kernel directory), as is norm2's map
// edited to drop one; sorted, same-sign, cancelling and constant data raise no false alarm in any
// variant, nor norm2 where a running sum of squares drifts; a sum of -0s is +0 everywhere, as
// NumPy's; an overflow is reported with the sign the input allows.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/data.hpp"
#include "io/npy.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace clreduce;
namespace fs = std::filesystem;

namespace {

using clreduce::test::run_cli;
using clreduce::test::TempDir;

const std::string kTimeout = "timeout 300";

template <class T>
void save(const std::string& path, const std::vector<T>& v) {
  HostArray a;
  a.type = sizeof(T) == 8 ? DType::kDouble : DType::kFloat;
  a.n = v.size();
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  write_npy(path, a);
}

// The generated floats (uniform in [-1, 1)), or integers in [-1000, 1000] made from them, with
// the last element set to `last`.
std::vector<float> data(std::size_t n, bool integers, float last) {
  const HostArray a = generate(DType::kFloat, n, 7);
  std::vector<float> v(a.as<float>(), a.as<float>() + n);
  if (integers)
    for (float& f : v) f = std::round(f * 1000.0f);
  v.back() = last;
  return v;
}

// Replaces `from` by `to` in the kernel file `path` (which must hold it).
void edit(const fs::path& path, const std::string& from, const std::string& to) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  const std::size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  s.replace(at, from.size(), to);
  std::ofstream(path, std::ios::trunc) << s;
}

// JSON rows of the output whose "verified" is false.
std::size_t unverified(const std::string& out) {
  std::size_t k = 0;
  for (std::size_t at = out.find("\"verified\":false"); at != std::string::npos;
       at = out.find("\"verified\":false", at + 1))
    ++k;
  return k;
}

}  // namespace

TEST_CASE(
    "a float sum missing an element of typical size fails its check (topdown and fast "
    "edited to skip their last element)",
    "[cli][bound]") {
  const TempDir d;
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, d.dir / "cl", fs::copy_options::recursive);
  edit(d.dir / "cl" / "reduce_topdown.cl", "i < n; i += stride)", "i < n - 1; i += stride)");
  // fast's start-up check (an int32 sum of 415 elements) must pass, or fast takes topdown's
  // scheme: its edit skips the last element of larger arrays only.
  edit(d.dir / "cl" / "reduce_fast.cl", "for (ulong i = body_end + gid; i < n; i += items)",
       "for (ulong i = body_end + gid; i < n - (n > 100000); i += items)");
  const std::string edited = " --kernel-dir " + (d / "cl");
  struct Case {
    std::size_t n;  // 2^k + 1: fast's last element is its tail (vectors of 16 or 4 floats)
    bool integers;
    float last;
    std::string variants;
  };
  // Uniform floats: mean |x| 0.5; at 2^20 fast's CPU shape (runs of 2^13 per lane) has a bound
  // above 1, no element of [-1, 1) beyond it. At 2^24 the rounding of any order may reach a
  // uniform float's size; integer values in [-1000, 1000] there.
  const std::vector<Case> cases = {{(std::size_t{1} << 18) + 1, false, 0.5f, "topdown,fast"},
                                   {(std::size_t{1} << 20) + 1, false, 0.9f, "topdown"},
                                   {(std::size_t{1} << 24) + 1, true, -517.0f, "topdown,fast"}};
  for (const Case& c : cases) {
    CAPTURE(c.n, c.variants);
    const std::string path = d / "x.npy";
    save(path, data(c.n, c.integers, c.last));
    const std::string args =
        "--input " + path + " --variant " + c.variants + " --repeat 1 --format json";
    const auto rows =
        static_cast<std::size_t>(std::count(c.variants.begin(), c.variants.end(), ',') + 1);
    const auto r = run_cli(args + edited, kTimeout);
    CHECK(r.code == 1);
    CHECK(unverified(r.out) == rows);
    CHECK_THAT(r.out, ContainsSubstring("by more than"));
    CHECK_THAT(r.out, !ContainsSubstring("topdown-scheme"));  // fast ran its own shape
    const auto plain = run_cli(args, kTimeout);               // the kernels as shipped
    CHECK(plain.code == 0);
    CHECK(unverified(plain.out) == 0);
  }
}

TEST_CASE("sorted, same-sign, cancelling and constant data raise no false alarm in any variant",
          "[cli][bound]") {
  const TempDir d;
  for (std::size_t n : {std::size_t{1} << 18, (std::size_t{1} << 20) + 13}) {
    std::vector<float> u = data(n, false, 0.25f);
    std::vector<float> sorted = u, pos = u, cancel(n), constant(n, 0.1f), pattern(n);
    std::sort(sorted.begin(), sorted.end());
    for (float& f : pos) f = std::fabs(f);
    for (std::size_t i = 0; i < n; ++i) {
      cancel[i] = i % 2 ? -std::fabs(u[i - 1]) : std::fabs(u[i]);  // x, -x, y, -y, ...
      pattern[i] = (i / 16) % 2 ? -0.137f : 0.1f;  // errors of one sign along each chain
    }
    for (const auto& [name, v] :
         {std::pair<std::string, const std::vector<float>&>{"sorted", sorted},
          {"same-sign", pos},
          {"cancelling", cancel},
          {"constant", constant},
          {"pattern", pattern}}) {
      CAPTURE(n, name);
      // At 2^18 every variant, scans too, and the OpenMP peer (the reductions alone on the two
      // extra inputs); the shapes with chains a size up.
      const bool small = n < (std::size_t{1} << 19),
                 extra = name == "constant" || name == "pattern";
      const std::string variants = !small  ? "--variant fast,topdown,multi-element,butterfly"
                                   : extra ? "--variant all-reduce"
                                           : "--variant all --peers";
      const std::string path = d / (name + ".npy");
      save(path, v);
      const auto r =
          run_cli("--input " + path + " " + variants + " --repeat 1 --format json", kTimeout);
      CHECK(r.code == 0);
      CHECK(unverified(r.out) == 0);
    }
  }
}

TEST_CASE("a sum of -0s is +0 in every variant, as NumPy's sum; a product of zeros has their sign",
          "[cli][bound]") {
  const TempDir d;
  // NumPy: np.sum of k float32 -0.0s is 0.0 for every k; np.prod is -0.0 for odd k.
  // Every k gives -0 in bottomup (pairs added without the identity); 512 and 65536 in ladder
  // kernels whose groups all load elements too.
  for (std::size_t k : {1, 2, 9, 512, 1000, 65536}) {
    CAPTURE(k);
    const std::string path = d / "z.npy";
    save(path, std::vector<float>(k, -0.0f));
    auto r = run_cli("--input " + path + " --variant all-reduce --peers --repeat 1 --format json",
                     kTimeout);
    CHECK(r.code == 0);
    CHECK(unverified(r.out) == 0);
    CHECK_THAT(r.out, !ContainsSubstring("\"result\":-0.0"));
    CHECK_THAT(r.out, !ContainsSubstring("\"expected\":-0.0"));
    if (k > 9) continue;
    r = run_cli("--input " + path + " --op prod --variant all-reduce --repeat 1 --format json",
                kTimeout);
    CHECK(r.code == 0);
    CHECK(unverified(r.out) == 0);
    CHECK_THAT(r.out, !ContainsSubstring(k % 2 ? "\"result\":0.0" : "\"result\":-0.0"));
  }
}

TEST_CASE("an overflow is reported with the sign its input can reach", "[cli][bound][overflow]") {
  const TempDir d;
  const std::string path = d / "max.npy";
  save(path, std::vector<float>{FLT_MAX, FLT_MAX, 1.0f});  // every order gives +inf
  const auto r = run_cli("--input " + path + " --variant all --repeat 1 --format json", kTimeout);
  CHECK(r.code == 0);
  CHECK(unverified(r.out) == 0);
  CHECK_THAT(r.out, !ContainsSubstring("\"-inf\""));
  CHECK_THAT(r.out, !ContainsSubstring("\"nan\""));
}

TEST_CASE(
    "norm2 verifies where a running sum of squares drifts, and fails with an element dropped "
    "(clr_nrm_map and clr_sq edited to drop 0.75)",
    "[cli][bound][norm2]") {
  const TempDir d;
  // 2^32 and then ones: a running sum of squares in long double keeps 2^64 (each 1 is half its
  // ulp), 1.2e-4 from the norm, while the engine's result is the norm to the last bit. Float
  // arrays take the plain sum of squares in double (clr_sq), double arrays the scaled one
  // (clr_nrm_map).
  const std::size_t n = std::size_t{1} << 20;
  std::vector<float> big(n, 1.0f);
  big[0] = std::ldexp(1.0f, 32);
  save(d / "big.npy", big);
  save(d / "big64.npy", std::vector<double>(big.begin(), big.end()));
  // Uniform floats and a last element of 0.75, which the edited maps drop.
  const std::vector<float> u = data(n + 1, false, 0.75f);
  save(d / "u.npy", u);
  save(d / "u64.npy", std::vector<double>(u.begin(), u.end()));
  fs::copy(CLREDUCE_SOURCE_KERNEL_DIR, d.dir / "cl", fs::copy_options::recursive);
  edit(d.dir / "cl" / "clr_expr.h", "ax == 0 ? (acc_t)(0, 0)",
       "ax == 0 || ax == (A)0.75 ? (acc_t)(0, 0)");
  edit(d.dir / "cl" / "clr_expr.h", "inline A clr_sq(A x) { return x * x; }",
       "inline A clr_sq(A x) { return x == (A)0.75 ? 0 : x * x; }");
  for (const std::string shape : {"cpu", "gpu"}) {
    CAPTURE(shape);
    const std::string env = kTimeout + " env CLREDUCE_FAST_SHAPE=" + shape;
    const std::string args = " --op norm2 --repeat 1 --format json --input ";
    for (const std::string f : {"big.npy", "u.npy", "big64.npy", "u64.npy"}) {
      CAPTURE(f);
      const auto r = run_cli(args + (d / f), env);
      CHECK(r.code == 0);
      CHECK(unverified(r.out) == 0);
    }
    for (const std::string f : {"u.npy", "u64.npy"}) {
      CAPTURE(f);
      const auto dropped = run_cli(args + (d / f) + " --kernel-dir " + (d / "cl"), env);
      CHECK(dropped.code == 1);
      CHECK(unverified(dropped.out) == 1);
    }
  }
}
