// test_segments_cli.cpp: segmented reductions (--offsets) and axes (--axis, --keepdims) through the
// command line: results written to --output with NumPy's shape and dtype, checked here on the
// host; and the refusals, each one line with exit 2 (5 for arrays past one allocation) and no
// output file: offsets not ascending, out of range or not int64, an empty segment of an op
// without identity, an axis out of range or repeated, --axis without an N-dimensional input,
// flags that exclude each other; the CPU shape's explicit vectors (segments-simd) against its
// scalar loops, bit for bit.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "io/npy.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::ContainsSubstring;
using clreduce::DType;
using clreduce::test::make_array;
using clreduce::test::run_cli;
using clreduce::test::TempDir;

namespace {

template <class T>
std::string save(const TempDir& dir, const std::string& name, DType t, const std::vector<T>& v,
                 const std::vector<std::uint64_t>& shape = {}) {
  const std::string path = dir / name;
  if (shape.empty())
    clreduce::write_npy(path, make_array(t, v));
  else
    clreduce::write_npy(path, make_array(t, v), shape);
  return path;
}

// Replaces `from` by `to` in the kernel file `path` (which must hold it).
void edit(const std::filesystem::path& path, const std::string& from, const std::string& to) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  const std::size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  s.replace(at, from.size(), to);
  in.close();
  std::ofstream(path) << s;
}

}  // namespace

TEST_CASE(
    "a wrong result along an axis fails its check, the first wrong one named (the check spread "
    "over the host's cores)",
    "[cli][segments]") {
  TempDir dir;
  std::filesystem::copy(CLREDUCE_SOURCE_KERNEL_DIR, dir.dir / "cl",
                        std::filesystem::copy_options::recursive);
  // Results from 3000 on doubled (a + a), of 5000 (past the check's parallel threshold): in
  // the GPU shape's kernel (a work-item per result) and in the CPU shape's tiles (one piece).
  edit(dir.dir / "cl" / "reduce_segments.cl", "out[q0 + c] = clr_result(a[c]);",
       "out[q0 + c] = clr_result(q0 + c >= 3000 ? clr_op(a[c], a[c]) : a[c]);");
  edit(dir.dir / "cl" / "reduce_segments.cl", "partials[p * results + q0 + c] = a[c];",
       "partials[p * results + q0 + c] = q0 + c >= 3000 ? clr_op(a[c], a[c]) : a[c];");
  edit(dir.dir / "cl" / "reduce_segments.cl",
       "if (pieces == 1)\n    for (ulong c = 0; c < w; ++c) d[c] = clr_result(d[c]);",
       "if (pieces == 1)\n    for (ulong c = 0; c < w; ++c)\n      d[c] = clr_result(oi * J + j0 "
       "+ c >= 3000 ? clr_op(d[c], d[c]) : d[c]);");
  std::vector<std::int32_t> x(8 * 5000);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<std::int32_t>(k % 97) + 1;
  const std::string m = save(dir, "m.npy", DType::kInt32, x, {8, 5000});
  for (const char* shape : {"gpu", "cpu"}) {
    CAPTURE(shape);
    const auto bad = run_cli("--input " + m + " --axis 0 --op sum --repeat 1 --kernel-dir " +
                             (dir / "cl") + " --tune segments-shape=" + shape);
    CHECK(bad.code == 1);
    CHECK_THAT(bad.out, ContainsSubstring("segment 3000: "));
  }
  const auto good = run_cli("--input " + m + " --axis 0 --op sum --repeat 1");
  CHECK(good.code == 0);
}

TEST_CASE("segments and axes write NumPy's shape and dtype, empty segments the identity",
          "[cli][segments]") {
  TempDir dir;
  const std::vector<std::int32_t> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::string in = save(dir, "x.npy", DType::kInt32, x);
  const std::string m = save(dir, "m.npy", DType::kInt32, x, {2, 3, 2});
  const std::string off =
      save(dir, "off.npy", DType::kInt64, std::vector<std::int64_t>{0, 0, 3, 12});
  const std::string out = dir / "out.npy";
  {
    const auto r = run_cli("--input " + in + " --offsets " + off + " --op sum --output " + out);
    INFO(r.out);
    REQUIRE(r.code == 0);
    std::vector<std::uint64_t> shape;
    const clreduce::HostArray a = clreduce::read_npy_nd(out, &shape);
    CHECK(a.type == DType::kInt64);  // NumPy's sum of int32
    CHECK(shape == std::vector<std::uint64_t>{3});
    const std::int64_t* v = a.as<std::int64_t>();
    CHECK(v[0] == 0);  // the empty segment: the identity
    CHECK(v[1] == 6);
    CHECK(v[2] == 72);
  }
  {
    const auto r = run_cli("--input " + in + " --offsets " + off + " --op prod --output " + out);
    REQUIRE(r.code == 0);
    const clreduce::HostArray a = clreduce::read_npy(out);
    CHECK(a.as<std::int64_t>()[0] == 1);
    CHECK(a.as<std::int64_t>()[1] == 6);
  }
  {
    // (2, 3, 2) along axis 1, kept: (2, 1, 2); argmax gives int64 indices along the axis.
    auto r = run_cli("--input " + m + " --axis 1 --keepdims --op sum --output " + out);
    INFO(r.out);
    REQUIRE(r.code == 0);
    std::vector<std::uint64_t> shape;
    clreduce::HostArray a = clreduce::read_npy_nd(out, &shape);
    CHECK(shape == std::vector<std::uint64_t>{2, 1, 2});
    const std::int64_t* v = a.as<std::int64_t>();
    CHECK(v[0] == 1 + 3 + 5);
    CHECK(v[1] == 2 + 4 + 6);
    CHECK(v[2] == 7 + 9 + 11);
    CHECK(v[3] == 8 + 10 + 12);
    r = run_cli("--input " + m + " --axis -2 --op argmax --output " + out);
    REQUIRE(r.code == 0);
    a = clreduce::read_npy_nd(out, &shape);
    CHECK(a.type == DType::kInt64);
    CHECK(shape == std::vector<std::uint64_t>{2, 2});
    for (int k = 0; k < 4; ++k) CHECK(a.as<std::int64_t>()[k] == 2);
    // Every axis reduced: a 0-d result, shape ().
    r = run_cli("--input " + m + " --axis 0,1,2 --op max --output " + out);
    REQUIRE(r.code == 0);
    a = clreduce::read_npy_nd(out, &shape);
    CHECK(shape.empty());
    CHECK(a.as<std::int32_t>()[0] == 12);
  }
}

TEST_CASE("segments and axes refuse bad offsets, axes and flags in one line, writing nothing",
          "[cli][segments]") {
  TempDir dir;
  const std::vector<float> x(10, 1.0f);
  const std::string in = save(dir, "x.npy", DType::kFloat, x);
  const std::string m = save(dir, "m.npy", DType::kFloat, x, {2, 5});
  const auto offsets = [&](const std::string& name, const std::vector<std::int64_t>& v) {
    return save(dir, name, DType::kInt64, v);
  };
  const std::string down = offsets("down.npy", {0, 5, 3, 10});
  const std::string past = offsets("past.npy", {0, 4, 11});
  const std::string neg = offsets("neg.npy", {-1, 4, 10});
  const std::string empty = offsets("empty.npy", {0, 3, 3, 10});
  const std::string none = offsets("none.npy", {});
  const std::string ints = save(dir, "ints.npy", DType::kInt32, std::vector<std::int32_t>{0, 10});
  const std::string i8 = save(dir, "i8.npy", DType::kInt8, std::vector<std::int8_t>(10, 1), {2, 5});
  const std::string out = dir / "out.npy";
  struct Case {
    std::string args, says;
    int code;
  };
  const std::string I = "--input " + in + " ";
  for (const Case& c : std::vector<Case>{
           {I + "--offsets " + down, "offsets are not ascending: offset 2 is 3, below offset 1 (5)",
            2},
           {I + "--offsets " + past, "offset 2 is 11, out of range for an array of 10 elements", 2},
           {I + "--offsets " + neg, "offset 0 is -1, out of range", 2},
           {I + "--offsets " + none, "is empty: S segments take S + 1 offsets", 2},
           {I + "--offsets " + ints, "holds int32: offsets are int64", 2},
           {I + "--offsets " + empty + " --op min",
            "segment 1 ([3, 3)) is empty: --op min has no identity", 2},
           {I + "--offsets " + empty + " --op argmax", "--op argmax has no identity", 2},
           {"--input " + m + " --offsets " + down, "--offsets takes a 1-D array", 2},
           {"--input " + m + " --axis 2", "--axis 2 is out of bounds for an array of dimension 2",
            2},
           {"--input " + m + " --axis -3", "--axis -3 is out of bounds", 2},
           {"--input " + m + " --axis 0,-2", "--axis names axis 0 twice", 2},
           {"--input " + m + " --axis 1,x", "'x' is not an axis", 2},
           {"--input " + m + " --axis 0,1 --op argmin", "--op argmin takes one --axis", 2},
           {"--size 10 --axis 0", "--axis needs an N-dimensional .npy (--input)", 2},
           {"--input " + m + " --axis 0 --offsets " + down, "exclude each other", 2},
           {I + "--keepdims", "--keepdims applies to --axis only", 2},
           {I + "--offsets " + down + " --op minmax", "--op minmax does not take --offsets yet", 2},
           {"--input " + i8 + " --axis 0 --op argmin",
            "--op argmin with --axis takes int32, uint32, int64, uint64, float or double, not int8",
            2},
           {I + "--offsets " + down + " --op argmax --where 'x > 0'",
            "--where applies to --map and to --op", 2},
           {I + "--offsets " + empty + " --op mean --acc double",
            "--acc does not apply to --op mean", 2},
           {I + "--offsets " + down + " --op dot", "--op dot takes 2 arrays, but 1 is given", 2},
           {"--input " + m + " --axis 0 --max-chunk 16", "do not run in chunks yet", 5},
       }) {
    CAPTURE(c.args);
    std::filesystem::remove(out);
    const auto r = run_cli(c.args + " --output " + out);
    CHECK(r.code == c.code);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK(clreduce::test::count_lines(r.out) == 1);
    CHECK_FALSE(std::filesystem::exists(out));
  }
}

TEST_CASE("peers (--peers) beside segments and axes: a verified omp row of the sums, vs_omp",
          "[cli][segments][omp_rows]") {
  TempDir dir;
  // 70000 elements (past the peer's parallel size): segments empty, of one element, short, and
  // long across the threads' parts; a 2-D and a 3-D array along each axis.
  std::vector<std::int64_t> off = {0, 0, 1, 10, 10, 500};
  for (std::int64_t at = 1000; at < 60000; at += 997) off.push_back(at);
  off.push_back(69999);
  off.push_back(70000);
  const std::string offs = save(dir, "off.npy", DType::kInt64, off);
  std::vector<float> f(70000);
  for (std::size_t k = 0; k < f.size(); ++k) f[k] = static_cast<float>((k * 7919) % 1000) / 999.0f;
  std::vector<std::int32_t> i(70000);
  for (std::size_t k = 0; k < i.size(); ++k) i[k] = static_cast<std::int32_t>(k * 2654435761u);
  const std::string m2 = save(dir, "m2.npy", DType::kFloat, f, {350, 200});
  const std::string m3 = save(dir, "m3.npy", DType::kInt32, i, {10, 70, 100});
  for (const std::string& args :
       {"--size 70000 --type float --offsets " + offs,
        "--size 70000 --type int32 --offsets " + offs,
        "--size 70000 --type double --offsets " + offs, "--input " + m2 + " --axis 0",
        "--input " + m2 + " --axis 1", "--input " + m2 + " --axis 0,1",
        "--input " + m3 + " --axis 0", "--input " + m3 + " --axis 0,2",
        "--input " + m3 + " --axis 1 --acc int32"}) {
    CAPTURE(args);
    const auto r = run_cli(args + " --op sum --repeat 2 --peers --format json");
    INFO(r.out);
    CHECK(r.code == 0);
    REQUIRE(clreduce::test::count_lines(r.out) == 2);
    const std::string omp = r.out.substr(0, r.out.find('\n'));
    const std::string seg = r.out.substr(r.out.find('\n') + 1);
    CHECK_THAT(omp, ContainsSubstring("\"variant\":\"omp\",\"kind\":\"peer\""));
    CHECK_THAT(omp, ContainsSubstring("\"verified\":true"));
    CHECK_THAT(omp, ContainsSubstring("openmp threads="));
    CHECK_THAT(seg, ContainsSubstring("\"variant\":\"segments\""));
    CHECK_THAT(seg, ContainsSubstring("\"vs_omp\":"));
  }
  // Where the peer has no loop, a row saying why; the run goes on.
  for (const std::string& args :
       {"--size 70000 --offsets " + offs + " --op prod",
        "--size 70000 --offsets " + offs + " --op mean",
        "--size 70000 --offsets " + offs + " --map x --reduce 'a+b' --identity 0"}) {
    CAPTURE(args);
    const auto r = run_cli(args + " --type float --repeat 1 --peers");
    CHECK(r.code == 0);
    CHECK_THAT(r.out, ContainsSubstring("omp                    skipped: the OpenMP peer has"));
    CHECK_THAT(r.out, ContainsSubstring("\nsegments "));
  }
}

namespace {

// The sums (int64) and first argmins (index within the line, or -1 for an empty one) of an int32
// C-order array of `shape` along `axes` (ascending), in C order of the kept axes: the results
// clreduce must give, computed here element by element.
void line_results(const std::vector<std::int32_t>& x, const std::vector<std::uint64_t>& shape,
                  const std::vector<std::size_t>& axes, std::vector<std::int64_t>* sums,
                  std::vector<std::int64_t>* argmins) {
  std::vector<bool> reduced(shape.size(), false);
  for (std::size_t a : axes) reduced[a] = true;
  std::uint64_t results = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) results *= reduced[k] ? 1 : shape[k];
  sums->assign(results, 0);
  argmins->assign(results, -1);
  std::vector<std::int32_t> least(results, 0);
  std::vector<std::uint64_t> at(shape.size(), 0);
  for (std::size_t e = 0; e < x.size(); ++e) {
    std::uint64_t q = 0, along = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      if (reduced[k])
        along = along * shape[k] + at[k];
      else
        q = q * shape[k] + at[k];
    }
    (*sums)[q] += x[e];
    if ((*argmins)[q] < 0 || x[e] < least[q]) {  // the first index of the least
      least[q] = x[e];
      (*argmins)[q] = static_cast<std::int64_t>(along);
    }
    for (std::size_t k = shape.size(); k-- > 0;) {  // the next element's coordinates
      if (++at[k] < shape[k]) break;
      at[k] = 0;
    }
  }
}

}  // namespace

TEST_CASE(
    "both shapes of segments and axes and their tuning keys give every result exactly: tile and "
    "piece edges, one row, one column, empty and long segments",
    "[cli][segments]") {
  TempDir dir;
  const std::string out = dir / "out.npy";
  // int32 over the whole range (sums exact in int64), with ties for the argmins.
  const auto data = [](std::size_t n) {
    std::vector<std::int32_t> x(n);
    std::uint64_t s = 12345;
    for (std::size_t k = 0; k < n; ++k) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      x[k] = k % 7 == 3 ? -5 : static_cast<std::int32_t>(static_cast<std::uint32_t>(s >> 32));
    }
    return x;
  };
  struct Case {
    std::vector<std::uint64_t> shape;
    std::vector<std::size_t> axes;
    bool argmin;
  };
  // A matrix's columns (1001 results: not a multiple of a tile, of vectors, of the pieces' rows;
  // 1004: rows of whole vectors) and rows; one row; one column; 5-D lines whose kept last axis
  // follows a reduced one (R2 > 1, tiles of 45 or 9 results); axes 0 and 2 of a 3-D array (no tiles
  // on CPUs).
  const std::vector<Case> cases = {{{37, 1001}, {0}, true},
                                   {{37, 1004}, {0}, false},
                                   {{37, 1001}, {1}, false},
                                   {{1, 1001}, {0}, false},
                                   {{1001, 1}, {0}, true},
                                   {{3, 17, 2, 5, 9}, {0, 2}, false},
                                   {{3, 17, 2, 5, 9}, {1, 3}, false},
                                   {{3, 17, 2, 5, 9}, {0, 3}, false},
                                   {{3, 17, 2, 5, 9}, {1}, true},
                                   {{7, 33, 5}, {0, 2}, false}};
  // Segments: empty ones, one element, around a vector register of accumulators (63-65) and
  // around pieces (segments-piece=100 below: 130, 700 and 5000 are cut).
  const std::vector<std::int64_t> lengths = {0, 1, 63, 64, 65, 0, 130, 700, 5000, 0, 2, 3};
  std::vector<std::int64_t> off = {0};
  for (std::int64_t l : lengths) off.push_back(off.back() + l);
  const std::vector<std::int32_t> flat = data(static_cast<std::size_t>(off.back()));
  const std::string flat_path = save(dir, "flat.npy", DType::kInt32, flat);
  const std::string off_path = save(dir, "off.npy", DType::kInt64, off);
  std::vector<std::int64_t> full = {0};  // the same without the empty segments
  for (std::int64_t l : lengths)
    if (l) full.push_back(full.back() + l);
  const std::string full_path = save(dir, "full.npy", DType::kInt64, full);
  const char* const tunings[] = {
      "",  // the device's own shape
      "--tune segments-shape=cpu --tune axis-cols=256 --tune axis-pieces=3 "
      "--tune segments-piece=100",
      "--tune segments-shape=gpu --local-size 8",
      "--tune segments-shape=gpu --tune segments-unroll=4 --tune segments-vec=4 "
      "--tune segments-piece=1000 --tune axis-cols=4 --tune axis-unroll=4 --tune axis-pieces=5 "
      "--local-size 16"};
  for (const char* tune : tunings) {
    CAPTURE(tune);
    for (const Case& c : cases) {
      std::uint64_t n = 1;
      for (std::uint64_t d : c.shape) n *= d;
      const std::vector<std::int32_t> x = data(n);
      const std::string in = save(dir, "m.npy", DType::kInt32, x, c.shape);
      std::string axes;
      for (std::size_t a : c.axes) axes += (axes.empty() ? "" : ",") + std::to_string(a);
      CAPTURE(axes);
      CAPTURE(n);
      std::vector<std::int64_t> sums, argmins;
      line_results(x, c.shape, c.axes, &sums, &argmins);
      for (const char* op : {"sum", "argmin"}) {
        if (std::string(op) == "argmin" && !c.argmin) continue;
        const auto r = run_cli("--input " + in + " --axis " + axes + " --op " + op +
                               " --repeat 1 --output " + out + " " + tune);
        INFO(r.out);
        REQUIRE(r.code == 0);
        std::vector<std::uint64_t> shape;
        const clreduce::HostArray a = clreduce::read_npy_nd(out, &shape);
        const std::vector<std::int64_t>& want = std::string(op) == "sum" ? sums : argmins;
        REQUIRE(a.n == want.size());
        std::size_t wrong = 0;
        for (std::size_t q = 0; q < want.size(); ++q) wrong += a.as<std::int64_t>()[q] != want[q];
        CHECK(wrong == 0);
      }
    }
    // Segments: sums exact, empty ones 0; the first argmins of the non-empty ones (an op read
    // element by element); a float sum checked by the run itself.
    const auto r = run_cli("--input " + flat_path + " --offsets " + off_path +
                           " --op sum --repeat 1 --output " + out + " " + tune);
    INFO(r.out);
    REQUIRE(r.code == 0);
    const clreduce::HostArray a = clreduce::read_npy(out);
    REQUIRE(a.n == lengths.size());
    for (std::size_t s = 0; s < lengths.size(); ++s) {
      std::int64_t want = 0;
      for (std::int64_t k = off[s]; k < off[s + 1]; ++k) want += flat[static_cast<std::size_t>(k)];
      CHECK(a.as<std::int64_t>()[s] == want);
    }
    const auto g = run_cli("--input " + flat_path + " --offsets " + full_path +
                           " --op argmin --repeat 1 --output " + out + " " + tune);
    INFO(g.out);
    REQUIRE(g.code == 0);
    const clreduce::HostArray b = clreduce::read_npy(out);
    REQUIRE(b.n + 1 == full.size());
    for (std::size_t s = 0; s + 1 < full.size(); ++s) {
      std::int64_t want = 0;
      for (std::int64_t k = full[s]; k < full[s + 1]; ++k)
        if (flat[static_cast<std::size_t>(k)] < flat[static_cast<std::size_t>(full[s] + want)])
          want = k - full[s];
      CHECK(b.as<std::int64_t>()[s] == want);
    }
    const auto f =
        run_cli("--type float --size 6028 --offsets " + off_path + " --op sum --repeat 1 " + tune);
    INFO(f.out);
    CHECK(f.code == 0);
  }
}

namespace {

// The file's bytes ("" where it cannot be read).
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE(
    "the CPU shape's explicit vectors (segments-simd=auto) give the scalar loops' results bit for "
    "bit: segment walks, pieces, tiles and their fold, for sum, prod, min and max",
    "[cli][segments][segments_simd]") {
  TempDir dir;
  // Segments around and past the accumulators (16 or 32: 17, 31-33, 64, 65, 100), empty ones,
  // and long ones cut into pieces of 256 (1000, 777: pieces starting anywhere).
  const std::vector<std::int64_t> lengths = {1,  3, 17, 100, 1000, 0,   33, 64,
                                             65, 0, 2,  31,  32,   777, 5,  1000};
  std::vector<std::int64_t> off = {0};
  for (std::int64_t l : lengths) off.push_back(off.back() + l);
  const std::string offs = save(dir, "off.npy", DType::kInt64, off);
  std::vector<std::int64_t> full = {0};  // the same without the empty segments (min, max)
  for (std::int64_t l : lengths)
    if (l) full.push_back(full.back() + l);
  const std::string full_offs = save(dir, "full.npy", DType::kInt64, full);
  const std::uint64_t n = static_cast<std::uint64_t>(off.back());
  // Lines: a matrix's 1001 columns in tiles of 40 (16 + 16 + 8; the last tile 1 wide), 3 pieces
  // of its 37 rows folded 40 results at a time; its rows (segments of 1001: walks of whole ones);
  // 5-D lines with two reduced runs, tiles of 40 and 1 over R2 = 5 rows each.
  const std::vector<std::uint64_t> matrix = {37, 1001}, five = {4, 9, 3, 5, 41};
  const std::uint64_t m_n = 37 * 1001, f_n = 4 * 9 * 3 * 5 * 41;
  const std::uint64_t most = std::max({n, m_n, f_n});
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(-1, 1);
  struct Case {
    DType t;
    const char* op;
  };
  const Case cases[] = {{DType::kFloat, "sum"},  {DType::kFloat, "prod"}, {DType::kFloat, "min"},
                        {DType::kFloat, "max"},  {DType::kDouble, "sum"}, {DType::kDouble, "prod"},
                        {DType::kDouble, "min"}, {DType::kDouble, "max"}, {DType::kInt32, "sum"},
                        {DType::kInt32, "prod"}, {DType::kInt32, "min"},  {DType::kInt32, "max"}};
  for (const Case& c : cases) {
    const std::string op = c.op;
    CAPTURE(clreduce::dtype_name(c.t), op);
    // Floats of many magnitudes (sums depend on their order), -0 and +0 (min and max keep the
    // one their order meets first), a NaN in two segments, one column and one 5-D line;
    // products near 1 (no overflow over 1000 factors). Integers over the whole range (sums
    // wrap in int64 only past 2^32 elements; products wrap: odd factors, never 0).
    std::vector<double> v(most);
    std::vector<std::int32_t> iv(most);
    for (std::uint64_t k = 0; k < most; ++k) {
      const double r = u(rng);
      v[k] = op == "prod" ? 1 + r / 64 : r * std::ldexp(1.0, static_cast<int>(k % 23) - 11);
      if (op != "prod" && k % 13 == 5) v[k] = k % 2 ? -0.0 : 0.0;
      iv[k] = static_cast<std::int32_t>(rng() >> 32) | (op == "prod" ? 1 : 0);
    }
    if (op == "min" || op == "max") {
      for (std::int64_t k : {full[3] + 40, full[4] + 600, std::int64_t{11 * 1001 + 500},
                             std::int64_t{2 * 1845 + 100}})
        v[static_cast<std::size_t>(k)] = std::nan("");
    }
    const auto write = [&](const std::string& name, std::uint64_t count,
                           const std::vector<std::uint64_t>& shape) {
      if (c.t == DType::kInt32)
        return save(dir, name, c.t, std::vector<std::int32_t>(iv.begin(), iv.begin() + count),
                    shape);
      if (c.t == DType::kFloat)
        return save(dir, name, c.t, std::vector<float>(v.begin(), v.begin() + count), shape);
      return save(dir, name, c.t, std::vector<double>(v.begin(), v.begin() + count), shape);
    };
    const std::string flat = write("flat.npy", n, {}), m = write("m.npy", m_n, matrix),
                      f = write("f.npy", f_n, five);
    const std::string lines = " --tune axis-cols=40 --tune axis-pieces=3";
    for (const std::string& args :
         {"--input " + flat + " --offsets " + (op == "sum" || op == "prod" ? offs : full_offs) +
              " --tune segments-piece=256",
          "--input " + m + " --axis 1", "--input " + m + " --axis 0" + lines,
          "--input " + f + " --axis 1,3 --keepdims" + lines}) {
      CAPTURE(args);
      std::string got[2];
      for (int simd = 0; simd < 2; ++simd) {
        const std::string out = dir / ("out" + std::to_string(simd) + ".npy");
        const auto r =
            run_cli(args + " --op " + op + " --repeat 1 --verbose --output " + out +
                    " --tune segments-shape=cpu --tune segments-simd=" + (simd ? "auto" : "off"));
        INFO(r.out);
        REQUIRE(r.code == 0);  // verified
        // The path taken: vectors with auto alone.
        const bool vectors = r.out.find(" in vectors of ") != std::string::npos ||
                             r.out.find("(rows 16 at a time)") != std::string::npos;
        CHECK(vectors == (simd == 1));
        got[simd] = file_bytes(out);
        REQUIRE(!got[simd].empty());
      }
      CHECK(got[0] == got[1]);
    }
  }
}
