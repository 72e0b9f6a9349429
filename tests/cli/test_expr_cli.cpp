// test_expr_cli.cpp: user-defined reductions (--map, --reduce, --identity, --post, --acc) through
// the command line, against results computed here on the host: a dot product, a norm, a count
// where a predicate holds, min through an expression, integer products that wrap, in both
// shapes; and the refusals: laws that fail, text that is not an expression, a compile error,
// arrays of different lengths, flags that do not apply.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <filesystem>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "io/data.hpp"
#include "io/npy.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::ContainsSubstring;
using clreduce::DType;
using clreduce::test::make_array;
using clreduce::test::run_cli;
using clreduce::test::TempDir;

namespace {

// The value of "key": in a JSON line, as text.
std::string json_field(const std::string& out, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const std::size_t at = out.find(k);
  if (at == std::string::npos) return "";
  const std::size_t from = at + k.size();
  return out.substr(from, out.find_first_of(",}", from) - from);
}

double json_double(const std::string& out, const std::string& key) {
  const std::string v = json_field(out, key);
  REQUIRE_FALSE(v.empty());
  return std::stod(v);
}

template <class T>
std::string save(const TempDir& dir, const std::string& name, DType t, const std::vector<T>& v) {
  const std::string path = dir / name;
  clreduce::write_npy(path, make_array(t, v));
  return path;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

const char* const kShapes[] = {"gpu", "cpu"};

// Both shapes over 3 groups (the GPU shape in groups of 16).
std::string shape_env(const std::string& shape) {
  return "CLREDUCE_FAST_SHAPE=" + shape + " CLREDUCE_FAST_GROUPS=3";
}
std::string shape_args(const std::string& shape) {
  return shape == "gpu" ? " --local-size 16" : " --local-size 1";
}

}  // namespace

TEST_CASE("user reductions match the host: dot, norm, count, min, wrapping ints", "[cli][expr]") {
  TempDir dir;
  const std::size_t n = 1003;
  const std::vector<float> xf = random_floats(n, 1), yf = random_floats(n, 2);
  const std::string fx = save(dir, "x.npy", DType::kFloat, xf);
  const std::string fy = save(dir, "y.npy", DType::kFloat, yf);
  std::vector<double> xd(n);
  for (std::size_t i = 0; i < n; ++i) xd[i] = static_cast<double>(xf[i]) * 3.5;
  const std::string fd = save(dir, "d.npy", DType::kDouble, xd);
  std::mt19937_64 rng(3);
  std::vector<std::int64_t> xi(n), yi(n);
  std::vector<std::int32_t> zi(n);
  for (std::size_t i = 0; i < n; ++i) {
    xi[i] = static_cast<std::int64_t>(rng());  // products wrap: the result is modulo 2^64
    yi[i] = static_cast<std::int64_t>(rng());
    zi[i] = static_cast<std::int32_t>(rng() % 2000001) - 1000000;
  }
  const std::string fi = save(dir, "i.npy", DType::kInt64, xi);
  const std::string fj = save(dir, "j.npy", DType::kInt64, yi);
  const std::string fz = save(dir, "z.npy", DType::kInt32, zi);

  // The host's answers: float products are exact in double, summed in long double.
  long double dot = 0, dot_abs = 0, sq = 0;
  std::int64_t positive = 0, zmin = std::numeric_limits<std::int32_t>::max();
  std::uint64_t wrapped = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(xf[i]) * static_cast<double>(yf[i]);
    dot += p;
    dot_abs += std::fabs(p);
    sq += static_cast<long double>(xd[i]) * xd[i];
    positive += xf[i] > 0;
    zmin = std::min<std::int64_t>(zmin, zi[i]);
    wrapped += static_cast<std::uint64_t>(xi[i]) * static_cast<std::uint64_t>(yi[i]);
  }

  for (const char* shape : kShapes) {
    CAPTURE(shape);
    const std::string env = shape_env(shape);
    const std::string tail = shape_args(shape) + " --repeat 2 --format json";
    {
      const auto r = run_cli(
          "--map 'x*y' --reduce 'a+b' --identity 0 --input " + fx + " --input " + fy + tail, env);
      INFO(r.out);
      REQUIRE(r.code == 0);
      CHECK(json_field(r.out, "op") == "\"expr\"");
      CHECK(json_field(r.out, "acc") == "\"float\"");
      CHECK(json_field(r.out, "verified") == "true");
      // A float accumulator over 1003 products: within 2^-24 times (n + 1) of sum |x y|.
      CHECK(std::fabs(json_double(r.out, "result") - static_cast<double>(dot)) <=
            static_cast<double>(dot_abs) * 1004 * std::ldexp(1.0, -24));
    }
    {
      const auto r = run_cli(
          "--map 'x*x' --reduce 'a+b' --identity 0 --post 'sqrt(a)' --input " + fd + tail, env);
      INFO(r.out);
      REQUIRE(r.code == 0);
      CHECK(json_field(r.out, "acc") == "\"double\"");
      const double norm = std::sqrt(static_cast<double>(sq));
      CHECK(std::fabs(json_double(r.out, "result") - norm) <= 1e-13 * norm);
    }
    {
      const auto r =
          run_cli("--map 'x>0' --reduce 'a+b' --identity 0 --acc int64 --input " + fx + tail, env);
      INFO(r.out);
      REQUIRE(r.code == 0);
      CHECK(json_field(r.out, "result") == std::to_string(positive));
      CHECK(json_field(r.out, "expected") == std::to_string(positive));
    }
    {
      const auto r = run_cli(
          "--map x --reduce 'min(a,b)' --identity INT_MAX --acc int32 --input " + fz + tail, env);
      INFO(r.out);
      REQUIRE(r.code == 0);
      CHECK(json_field(r.out, "result") == std::to_string(zmin));
    }
    {
      const auto r = run_cli("--map 'x*y' --reduce 'a+b' --identity 0 --acc uint64 --input " + fi +
                                 " --input " + fj + tail,
                             env);
      INFO(r.out);
      REQUIRE(r.code == 0);
      CHECK(json_field(r.out, "result") == std::to_string(wrapped));
    }
  }
}

TEST_CASE("user reductions on generated arrays: one per name the map uses, seed + k",
          "[cli][expr]") {
  const std::size_t n = 5000;
  const clreduce::HostArray x = clreduce::generate(DType::kInt32, n, 7);
  const clreduce::HostArray y = clreduce::generate(DType::kInt32, n, 8);
  const clreduce::HostArray z = clreduce::generate(DType::kInt32, n, 9);
  std::int64_t want = 0, nonzero = 0;
  for (std::size_t i = 0; i < n; ++i) {
    want +=
        std::int64_t{x.as<std::int32_t>()[i]} * y.as<std::int32_t>()[i] - z.as<std::int32_t>()[i];
    nonzero += x.as<std::int32_t>()[i] != 0;
  }
  auto r = run_cli(
      "--map 'x*y-z' --reduce 'a+b' --identity 0 --size 5000 --seed 7 --repeat 1 --format json");
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(json_field(r.out, "acc") == "\"int64\"");
  CHECK(json_field(r.out, "result") == std::to_string(want));
  // A post over the count n: the elements that are zero.
  r = run_cli(
      "--map 'x!=0' --reduce 'a+b' --identity 0 --post 'n-a' --size 5000 --seed 7 "
      "--repeat 1 --format json");
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(json_field(r.out, "result") == std::to_string(static_cast<std::int64_t>(n) - nonzero));
  // An empty array: post(identity, 0).
  r = run_cli("--map x --reduce 'a+b' --identity 5-5 --post 'a+n+7' --size 0 --format json");
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(json_field(r.out, "result") == "7");
}

TEST_CASE("a reduce whose laws fail is refused before any tree runs, naming the values",
          "[cli][expr]") {
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"--map x --reduce 'a-b' --identity 0", "--reduce 'a-b' is not associative: with a = "},
           {"--map x --reduce '(a+b)/2' --identity 0 --type float",
            "--reduce '(a+b)/2' is not associative"},
           {"--map x --reduce 'a+b' --identity 1",
            "--identity '1' is not neutral for --reduce "
            "'a+b': reduce(1, "},
           {"--map x --reduce 'max(a,b)' --identity 0", "--identity '0' is not neutral"},
           {"--map x --reduce 'a' --identity 0", "is not neutral"},
           // Associative with a neutral 0, but the last nonzero element: order matters.
           {"--map x --reduce 'b != 0 ? b : a' --identity 0",
            "--reduce 'b != 0 ? b : a' is not commutative"},
       }) {
    CAPTURE(c.args);
    const auto r = run_cli(c.args + " --size 1000");
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK(clreduce::test::count_lines(r.out) == 1);
  }
}

TEST_CASE("an expression is an expression: text that ends it or adds code is refused unbuilt",
          "[cli][expr]") {
  for (const std::string& text :
       {std::string("x;"), std::string("x} void f() {"), std::string("#define Q 1"),
        std::string("x // c"), std::string("x /* c"), std::string("x */"), std::string("x \\\n+1"),
        std::string("x)"), std::string("(x"), std::string("  ")}) {
    CAPTURE(text);
    for (const char* flag : {"--map", "--reduce", "--identity", "--post"}) {
      std::string args = "--map x --reduce 'a+b' --identity 0 --post a --size 10";
      const std::string target = std::string(flag) + " ";
      const std::size_t at = args.find(target) + target.size();
      args.replace(at, args.find(' ', at) - at, "'" + text + "'");
      CAPTURE(args);
      const auto r = run_cli(args);
      CHECK(r.code == 2);
      CHECK(clreduce::test::count_lines(r.out) == 1);
      CHECK_THAT(r.out, ContainsSubstring(std::string(flag) + " ") &&
                            (ContainsSubstring("is not one expression") ||
                             ContainsSubstring("needs an OpenCL C expression")));
    }
  }
}

TEST_CASE("an expression that does not compile is reported in its own words and place",
          "[cli][expr]") {
  auto r = run_cli("--map 'x*q' --reduce 'a+b' --identity 0 --size 10");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("--map 'x*q' does not compile: column 3: use of undeclared "
                                      "identifier 'q'"));
  CHECK(clreduce::test::count_lines(r.out) == 1);
  r = run_cli("--map x --reduce 'a+b' --identity 0 --post 'a/m' --size 10");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("--post 'a/m' does not compile: column 3:"));
  // The map sees x, y, z, w only; the reduce a and b only.
  r = run_cli("--map x --reduce 'a+x' --identity 0 --size 10");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("--reduce 'a+x' does not compile: column 3:"));
}

TEST_CASE("user reductions refuse arrays that differ and flags that do not apply", "[cli][expr]") {
  TempDir dir;
  const std::string a = save(dir, "a.npy", DType::kFloat, random_floats(10, 1));
  const std::string b = save(dir, "b.npy", DType::kFloat, random_floats(11, 2));
  struct Case {
    std::string args, says;
    int code;
  };
  const std::string base = "--map 'x*y' --reduce 'a+b' --identity 0 ";
  for (const Case& c : std::vector<Case>{
           {base + "--input " + a + " --input " + b,
            "has 11 elements and --input " + a +
                " 10: the arrays of a user reduction must have "
                "one length",
            2},
           {base + "--input " + a, "--map 'x*y' names y, but 1 array is given", 2},
           {base + "--size 10 --op min", "--op min and --map exclude each other", 2},
           {base + "--size 10 --variant fast", "--variant fast and --map exclude each other", 2},
           {"--map x --identity 0 --size 10", "needs --map, --reduce and --identity", 2},
           {"--input " + a + " --input " + a, "several arrays are for a user reduction", 2},
       }) {
    CAPTURE(c.args);
    const auto r = run_cli(c.args);
    CHECK(r.code == c.code);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK(clreduce::test::count_lines(r.out) == 1);
  }
}

TEST_CASE("the engine's rows refuse flags and arrays they cannot take, in one line",
          "[cli][expr]") {
  TempDir dir;
  const std::string a = save(dir, "a.npy", DType::kFloat, random_floats(10, 1));
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"--op mean --ddof 1 --size 10", "--ddof applies to --op var and --op std only"},
           {"--op var --ddof -1 --size 10", "--ddof must be a number from 0 to 1e18, not '-1'"},
           {"--op std --ddof nan --size 10", "--ddof must be a number"},
           {"--op sum --where 'x > 0' --variant fast --size 10",
            "--variant fast and --op sum exclude each other"},
           {"--op min --where 'x > 0' --acc int64 --size 10", "--acc applies to sum and prod only"},
           {"--op mean --acc float --size 10", "--acc does not apply to --op mean"},
           {"--op dot --input " + a, "--op dot takes 2 arrays, but 1 is given"},
           {"--op count --where 'y > 0' --input " + a, "--where 'y > 0' names y, but 1 array is"},
           {"--op count --where 'x > 0;' --size 10", "--where 'x > 0;' is not one expression"},
           {"--op count --where 'x > q' --size 10",
            "--where 'x > q' does not compile: column 5: use of undeclared identifier 'q'"},
           {"--op mean --variant fast --size 10",
            "--variant fast and --op mean exclude each other"},
       }) {
    CAPTURE(c.args);
    const auto r = run_cli(c.args);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK(clreduce::test::count_lines(r.out) == 1);
  }
}

TEST_CASE("peers (--peers) beside the engine's rows: a verified omp row first, the row's vs_omp",
          "[cli][expr][omp_rows]") {
  // Below and above the size where the peer goes parallel (2^15), float and double; minmax of
  // int32 too. Every op's omp row verifies, and the expr row carries vs_omp.
  for (const char* type : {"float", "double"})
    for (const char* size : {"1000", "70001"})
      for (const char* op : {"dot", "mean", "var", "std", "norm2", "minmax", "logsumexp"}) {
        const std::string args = std::string("--op ") + op + " --type " + type + " --size " + size +
                                 " --repeat 2 --peers --format json";
        CAPTURE(args);
        const auto r = run_cli(args);
        INFO(r.out);
        CHECK(r.code == 0);
        REQUIRE(clreduce::test::count_lines(r.out) == 2);
        const std::string omp = r.out.substr(0, r.out.find('\n'));
        const std::string row = r.out.substr(r.out.find('\n') + 1);
        CHECK_THAT(omp, ContainsSubstring("\"variant\":\"omp\",\"kind\":\"peer\""));
        CHECK_THAT(omp, ContainsSubstring("\"verified\":true"));
        CHECK_THAT(omp, ContainsSubstring("openmp threads="));
        CHECK_THAT(omp, ContainsSubstring(std::string("\"acc\":\"") + type + "\""));
        CHECK_THAT(row, ContainsSubstring("\"variant\":\"expr\""));
        CHECK_THAT(row, ContainsSubstring("\"vs_omp\":"));
      }
  for (const char* op : {"minmax", "dot"}) {
    CAPTURE(op);
    const auto m = run_cli(std::string("--op ") + op +
                           " --type int32 --size 70001 --repeat 1 --peers --format json");
    CHECK(m.code == 0);
    CHECK_THAT(m.out, ContainsSubstring("\"variant\":\"omp\",\"kind\":\"peer\""));
    CHECK_THAT(m.out, ContainsSubstring("\"verified\":true,"));
    CHECK_THAT(m.out, !ContainsSubstring("\"verified\":false"));
    CHECK_THAT(m.out, !ContainsSubstring("\"skipped\":true"));
  }
  // The table: the omp row, then expr with its ratio column.
  const auto t = run_cli("--op var --ddof 1 --type float --size 50000 --repeat 2 --peers");
  CHECK(t.code == 0);
  CHECK_THAT(t.out, ContainsSubstring("   vs omp"));
  CHECK_THAT(t.out, ContainsSubstring("\nomp "));
  CHECK_THAT(t.out, ContainsSubstring("\nexpr "));
  CHECK(t.out.find("\nomp ") < t.out.find("\nexpr "));
}

TEST_CASE("peers (--peers): a peer whose answer is wrong is reported, and the run exits 1",
          "[cli][expr][omp_rows]") {
  // Squares of 1e20 overflow float: NumPy's float32 norm, and the peer's loop, give inf; the
  // engine's scaled norm is finite. The peer's row says so and does not verify.
  TempDir dir;
  const std::string big = save(dir, "big.npy", DType::kFloat, std::vector<float>(1000, 1e20f));
  const auto r = run_cli("--op norm2 --input " + big + " --repeat 1 --peers");
  CHECK(r.code == 1);
  CHECK_THAT(r.out, ContainsSubstring("\nomp                    inf"));
  CHECK_THAT(r.out, ContainsSubstring("NO"));
  CHECK_THAT(r.out, ContainsSubstring("the peer's result is inf where the reference is"));
  CHECK_THAT(r.out, ContainsSubstring("\nexpr "));
  const auto j = run_cli("--op norm2 --input " + big + " --repeat 1 --peers --format json");
  CHECK(j.code == 1);
  const std::string row = j.out.substr(j.out.find('\n') + 1);
  CHECK_THAT(row, ContainsSubstring("\"verified\":true"));
  CHECK_THAT(row, !ContainsSubstring("\"vs_omp\""));  // no ratio against a wrong peer
}

TEST_CASE("peers (--peers) where the OpenMP peer has no loop: a row saying why, the run goes on",
          "[cli][expr][omp_rows]") {
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"--map x --reduce 'a+b' --identity 0 --size 1000",
            "omp                    skipped: the OpenMP peer has no user expressions (OpenCL C)"},
           {"--op any --size 1000", "skipped: the OpenMP peer has no --op any"},
           {"--op mean --where 'x > 0' --size 1000", "skipped: the OpenMP peer takes no --where"},
           {"--op mean --type int32 --size 1000",
            "skipped: the OpenMP peer has no --op mean of int32"},
       }) {
    CAPTURE(c.args);
    const auto r = run_cli(c.args + " --repeat 1 --peers");
    CHECK(r.code == 0);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK_THAT(r.out, ContainsSubstring("\nexpr "));
  }
}

TEST_CASE("select: --op select writes the elements where --where holds, checked against the host",
          "[cli][expr][select]") {
  TempDir dir;
  const std::size_t n = 5003;
  const std::vector<float> xf = random_floats(n, 7);
  const std::string fx = save(dir, "x.npy", DType::kFloat, xf);
  std::vector<std::int32_t> xi(n);
  for (std::size_t i = 0; i < n; ++i) xi[i] = static_cast<std::int32_t>((i * 7919) % 2001) - 1000;
  const std::string fi = save(dir, "i.npy", DType::kInt32, xi);
  const std::string out = dir / "sel.npy";
  struct Case {
    std::string file, where;
    std::vector<unsigned char> want;  // the kept elements' bytes
    std::size_t kept;
  };
  const auto pick = [](const auto& v, auto keep) {
    Case c;
    c.kept = 0;
    for (const auto& e : v)
      if (keep(e)) {
        const auto* b = reinterpret_cast<const unsigned char*>(&e);
        c.want.insert(c.want.end(), b, b + sizeof e);
        ++c.kept;
      }
    return c;
  };
  std::vector<Case> cases;
  cases.push_back(pick(xf, [](float e) { return e > 0.5f && e < 2.0f; }));
  cases.back().file = fx;
  cases.back().where = "x > 0.5f && x < 2.0f";
  cases.push_back(pick(xi, [](std::int32_t e) { return e % 7 == 0; }));
  cases.back().file = fi;
  cases.back().where = "x % 7 == 0";
  cases.push_back(pick(xi, [](std::int32_t e) { return e == 999; }));  // one kept
  cases.back().file = fi;
  cases.back().where = "x == 999";
  cases.push_back(pick(xi, [](std::int32_t e) { return e > 5000; }));  // none
  cases.back().file = fi;
  cases.back().where = "x > 5000";
  for (const Case& c : cases) {
    CAPTURE(c.where);
    const auto r = run_cli("--op select --where '" + c.where + "' --input " + c.file +
                           " --output " + out + " --format json --warmup 0 --repeat 1");
    REQUIRE(r.code == 0);
    CHECK(json_field(r.out, "result") == std::to_string(c.kept));
    CHECK(json_field(r.out, "verified") == "true");
    const clreduce::HostArray got = clreduce::read_npy(out);
    CHECK(got.n == c.kept);
    CHECK(std::vector<unsigned char>(got.bytes.data(), got.bytes.data() + got.bytes.size()) ==
          c.want);
  }
  // Refusals, exit 2, no output file: no --where, a second array named, text that is no
  // expression, a compile error, flags that do not apply.
  const std::string none = dir / "none.npy";
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"--op select --size 10", "--op select needs --where"},
           {"--op select --where 'y > 0' --size 10", "names y: --op select has one array, x"},
           {"--op select --where 'x > 0; x' --size 10", "is not one expression"},
           {"--op select --where 'x > q' --size 10", "--where 'x > q' does not compile: column 5"},
           {"--op select --where 'x > 0' --size 10 --variant fast", "--variant does not apply"},
           {"--op select --where 'x > 0' --size 10 --exclusive", "--exclusive does not apply"}}) {
    CAPTURE(args);
    const auto r = run_cli(args + " --output " + none);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring(says));
    CHECK_FALSE(std::filesystem::exists(none));
  }
}
