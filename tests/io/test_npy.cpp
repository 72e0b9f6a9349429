// test_npy.cpp: .npy reading and writing, with fixtures emitted as raw bytes into a temp directory.
// Covers round trips, header versions, byte orders, flag dtypes, and every documented error.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "clreduce/error.hpp"
#include "io/npy.hpp"

using namespace clreduce;
namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

namespace {

// A unique temp directory, removed at exit.
struct TempDir {
  fs::path dir;
  TempDir() {
    std::random_device rd;
    const auto t = std::chrono::steady_clock::now().time_since_epoch().count();
    dir = fs::temp_directory_path() /
          ("clreduce_test_npy_" + std::to_string(t) + "_" + std::to_string(rd()));
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Path of a fixture file named name.
std::string tmp(const std::string& name) {
  static TempDir d;
  return (d.dir / name).string();
}

// Writes raw bytes to path and returns path.
std::string put(const std::string& name, const std::string& bytes) {
  const std::string path = tmp(name);
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// A .npy image: magic, version major.minor, header length (2 or 4 bytes), dict padded to 64 with
// '\n', data.
std::string npy(const std::string& dict, const std::string& data, int major = 1, int minor = 0) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  h.append((64 - (prefix + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string s("\x93NUMPY", 6);
  s += static_cast<char>(major);
  s += static_cast<char>(minor);
  for (std::size_t k = 0; k < prefix - 8; ++k) s += static_cast<char>((h.size() >> (8 * k)) & 0xff);
  return s + h + data;
}

// A header dict for descr and shape text.
std::string dict(const std::string& descr, const std::string& shape,
                 const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

// The bytes of values, in host (little-endian) order, or reversed per element when big.
template <class T> std::string raw(const std::vector<T>& v, bool big = false) {
  std::string s;
  for (const T& x : v) {
    char b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));
    if (big) std::reverse(b, b + sizeof(T));
    s.append(b, sizeof(T));
  }
  return s;
}

// A HostArray holding v.
template <class T> HostArray host(DType t, const std::vector<T>& v) {
  HostArray a;
  a.type = t;
  a.n = v.size();
  const std::string s = raw(v);
  a.bytes.assign(s.begin(), s.end());
  return a;
}

// Checks that reading path throws a usage error whose message starts with path and contains phrase.
template <class F> void check_error(const std::string& path, F read, const std::string& phrase) {
  INFO(path << ": expecting '" << phrase << "'");
  REQUIRE_THROWS_WITH(read(path), ContainsSubstring(phrase) && StartsWith(path));
  try {
    read(path);
  } catch (const Error& e) {
    REQUIRE(e.category() == Errc::kInput);
  }
}
void check_npy_error(const std::string& path, const std::string& phrase) {
  check_error(path, read_npy, phrase);
}

template <class T> void round_trip(DType t, const std::vector<T>& v, const std::string& name) {
  const HostArray a = host(t, v);
  const std::string path = tmp(name);
  write_npy(path, a);
  const HostArray b = read_npy(path);
  REQUIRE(b.type == t);
  REQUIRE(b.n == v.size());
  REQUIRE(b.bytes == a.bytes);
  // Version 1.0, data aligned to 64 bytes.
  std::ifstream f(path, std::ios::binary);
  std::string head(10, '\0');
  f.read(&head[0], 10);
  REQUIRE(head.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t hlen =
      static_cast<unsigned char>(head[8]) | std::size_t{static_cast<unsigned char>(head[9])} << 8;
  REQUIRE((10 + hlen) % 64 == 0);
  REQUIRE(fs::file_size(path) == 10 + hlen + v.size() * sizeof(T));
}

template <class T> void round_trips(DType t, const std::vector<T>& v, const std::string& name) {
  round_trip(t, std::vector<T>{}, name + "_0.npy");
  round_trip(t, std::vector<T>{v[0]}, name + "_1.npy");
  round_trip(t, v, name + "_n.npy");
}

}  // namespace

TEST_CASE("npy round trip for every dtype, n = 0, 1 and more", "[npy]") {
  round_trips<std::int32_t>(DType::kInt32, {-7, 0, 2147483647, -2147483647 - 1}, "i4");
  round_trips<std::uint32_t>(DType::kUInt32, {7, 0, 4294967295u}, "u4");
  round_trips<std::int64_t>(DType::kInt64, {-9, INT64_MAX, INT64_MIN}, "i8");
  round_trips<std::uint64_t>(DType::kUInt64, {9, UINT64_MAX, 0}, "u8");
  round_trips<float>(DType::kFloat, {1.5f, -0.0f, INFINITY, 3e38f}, "f4");
  round_trips<double>(DType::kDouble, {2.25, -1e300, 5e-324}, "f8");
  // The engine's input types: float16 as its bits (1, -2, inf, the smallest subnormal, NaN).
  round_trips<std::uint16_t>(DType::kFloat16, {0x3c00, 0xc000, 0x7c00, 0x0001, 0x7e00}, "f2");
  round_trips<std::uint8_t>(DType::kBool, {1, 0, 1}, "b1");
  round_trips<std::int8_t>(DType::kInt8, {-128, 0, 127}, "i1");
  round_trips<std::uint8_t>(DType::kUInt8, {255, 0, 7}, "u1");
  round_trips<std::int16_t>(DType::kInt16, {-32768, 1, 32767}, "i2");
  round_trips<std::uint16_t>(DType::kUInt16, {65535, 0, 2}, "u2");

  write_npy(tmp("vals.npy"), host<std::int64_t>(DType::kInt64, {5, -6, 7}));
  const HostArray a = read_npy(tmp("vals.npy"));
  REQUIRE(a.as<std::int64_t>()[1] == -6);
  REQUIRE(a.as<std::int64_t>()[2] == 7);
}

TEST_CASE("npy reads format versions 1.0, 2.0 and 3.0", "[npy]") {
  const std::string data = raw<std::int32_t>({1, -2, 3});
  for (int major : {1, 2, 3}) {
    const HostArray a =
        read_npy(put("v" + std::to_string(major) + ".npy", npy(dict("<i4", "(3,)"), data, major)));
    REQUIRE(a.type == DType::kInt32);
    REQUIRE(a.n == 3);
    REQUIRE(a.as<std::int32_t>()[1] == -2);
  }
}

TEST_CASE("npy header parser is lenient about Python literal spelling", "[npy]") {
  const std::string data = raw<double>({1.0, 2.0, 3.0, 4.0, 5.0});
  for (const std::string& d :
       {std::string("{\"descr\":\"<f8\",\"fortran_order\":False,\"shape\":(5,)}"),
        std::string(" {  'shape' : ( 5 , ) ,\n 'fortran_order':False , 'descr' :'<f8' , } "),
        std::string("{'descr': '<f8', 'fortran_order': False, 'shape': (5L,)}"),
        std::string("{'descr':'=f8','fortran_order':False,'shape':(5, ),}")}) {
    const HostArray a = read_npy(put("lenient.npy", npy(d, data)));
    REQUIRE(a.type == DType::kDouble);
    REQUIRE(a.n == 5);
    REQUIRE(a.as<double>()[4] == 5.0);
  }
  const HostArray e = read_npy(put("empty.npy", npy(dict("<u8", "(0,)"), "")));
  REQUIRE(e.type == DType::kUInt64);
  REQUIRE(e.n == 0);
  REQUIRE(e.bytes.empty());
}

TEST_CASE("npy converts big-endian data to host order", "[npy]") {
  const std::string be_i4 = raw<std::int32_t>({1, -2, 0x01020304}, true);
  const HostArray a = read_npy(put("be_i4.npy", npy(dict(">i4", "(3,)"), be_i4)));
  REQUIRE(a.type == DType::kInt32);
  REQUIRE(a.as<std::int32_t>()[0] == 1);
  REQUIRE(a.as<std::int32_t>()[1] == -2);
  REQUIRE(a.as<std::int32_t>()[2] == 0x01020304);
  const HostArray b =
      read_npy(put("be_f8.npy", npy(dict(">f8", "(2,)"), raw<double>({3.5, -1e-300}, true))));
  REQUIRE(b.type == DType::kDouble);
  REQUIRE(b.as<double>()[0] == 3.5);
  REQUIRE(b.as<double>()[1] == -1e-300);
}

TEST_CASE("float16 bits convert exactly both ways, rounding to nearest even", "[npy]") {
  CHECK(half_to_double(0x3c00) == 1.0);
  CHECK(half_to_double(0xc000) == -2.0);
  CHECK(half_to_double(0x0001) == std::ldexp(1.0, -24));
  CHECK(half_to_double(0x7bff) == 65504.0);
  CHECK(std::isinf(half_to_double(0xfc00)));
  CHECK(std::isnan(half_to_double(0x7e00)));
  for (std::uint32_t h = 0; h < 0x10000; ++h) {  // every half but NaN survives the round trip
    const double v = half_to_double(static_cast<std::uint16_t>(h));
    if (!std::isnan(v)) CHECK(double_to_half(v) == h);
  }
  CHECK(double_to_half(1.0 + std::ldexp(1.0, -11)) == 0x3c00);      // a tie: to even
  CHECK(double_to_half(1.0 + 3 * std::ldexp(1.0, -11)) == 0x3c02);  // a tie: to even, up
  CHECK(double_to_half(65520.0) == 0x7c00);                         // rounds past the largest
  CHECK(double_to_half(std::ldexp(1.0, -25)) == 0x0000);            // half the least: to 0
  CHECK(double_to_half(std::ldexp(3.0, -26)) == 0x0001);
  const HostArray be =
      read_npy(put("be_f2.npy", npy(dict(">f2", "(2,)"), std::string("\x3c\x00\xc0\x00", 4))));
  REQUIRE(be.type == DType::kFloat16);
  CHECK(be.as<std::uint16_t>()[0] == 0x3c00);
  CHECK(be.as<std::uint16_t>()[1] == 0xc000);
}

TEST_CASE("npy flags from bool and integer dtypes", "[npy]") {
  const std::vector<std::uint8_t> want = {1, 0, 1, 1, 0};
  REQUIRE(read_npy_flags(put(
              "b1.npy", npy(dict("|b1", "(5,)"), std::string("\x01\x00\x01\x01\x00", 5)))) == want);
  REQUIRE(read_npy_flags(put(
              "u1.npy", npy(dict("|u1", "(5,)"), std::string("\x07\x00\xff\x01\x00", 5)))) == want);
  REQUIRE(read_npy_flags(put(
              "i2.npy", npy(dict("<i2", "(5,)"), raw<std::int16_t>({1, 0, -1, 256, 0})))) == want);
  const std::string be_i8 = raw<std::int64_t>({1LL << 40, 0, -1, 2, 0}, true);
  REQUIRE(read_npy_flags(put("be_i8.npy", npy(dict(">i8", "(5,)"), be_i8))) == want);
  REQUIRE(read_npy_flags(put("u4.npy", npy(dict("<u4", "(5,)"),
                                           raw<std::uint32_t>({1u << 31, 0, 3, 4, 0})))) == want);
  REQUIRE(read_npy_flags(put("b1_empty.npy", npy(dict("|b1", "(0,)"), ""))).empty());
  check_error(put("f4_flags.npy", npy(dict("<f4", "(1,)"), raw<float>({1.0f}))), read_npy_flags,
              "unsupported dtype '<f4' (supported: bool, int8");
  check_error(put("flags_2d.npy", npy(dict("|b1", "(1, 1)"), "\x01")), read_npy_flags,
              "shape (1, 1) is not 1-D");
}

TEST_CASE("npy errors name the file and the problem", "[npy]") {
  const std::string d3 = raw<std::int32_t>({1, 2, 3});
  const std::string missing = tmp("no_such.npy");
  REQUIRE_THROWS_WITH(read_npy(missing), "cannot open " + missing + ": No such file or directory");
  REQUIRE_THROWS_WITH(read_npy_flags(missing),
                      "cannot open " + missing + ": No such file or directory");
  check_npy_error(put("empty_file.npy", ""), "not a .npy file (bad magic)");
  check_npy_error(put("short.npy", "\x93NU"), "not a .npy file (bad magic)");
  check_npy_error(put("magic.npy", "PK\x03\x04 this is a zip file, not npy"),
                  "not a .npy file (bad magic)");
  check_npy_error(put("noversion.npy", std::string("\x93NUMPY\x01", 7)), "truncated");
  check_npy_error(put("nolen.npy", std::string("\x93NUMPY\x02\x00\x10", 9)), "truncated");
  check_npy_error(put("v4.npy", npy(dict("<i4", "(3,)"), d3, 4)), "unsupported format version 4.0");
  check_npy_error(put("v11.npy", npy(dict("<i4", "(3,)"), d3, 1, 1)),
                  "unsupported format version 1.1");
  check_npy_error(put("c8.npy", npy(dict("<c8", "(3,)"), std::string(24, '\0'))),
                  "unsupported dtype '<c8' (supported: bool, int8, uint8, int16, uint16, int32, "
                  "uint32, int64, uint64, float16, float32, float64)");
  check_npy_error(put("f1.npy", npy(dict("|f1", "(3,)"), "abc")), "unsupported dtype '|f1'");
  check_npy_error(put("pipe_i4.npy", npy(dict("|i4", "(3,)"), d3)), "unsupported dtype '|i4'");
  check_npy_error(put("struct.npy",
                      npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (3,)}", d3)),
                  "unsupported dtype [('a', '<i4')]");
  check_npy_error(put("fortran.npy", npy(dict("<i4", "(3,)", "True"), d3)),
                  "Fortran order is not supported");
  check_npy_error(put("2d.npy", npy(dict("<i4", "(3, 4)"), std::string(48, '\0'))),
                  "shape (3, 4) is not 1-D");
  check_npy_error(put("0d.npy", npy(dict("<i4", "()"), raw<std::int32_t>({1}))),
                  "shape () is not 1-D");
  check_npy_error(put("trunc.npy", npy(dict("<i4", "(1000,)"), std::string(12, '\0'))),
                  "truncated: header says 1000 elements (4000 bytes) but 12 bytes of data follow");
  check_npy_error(put("trailing.npy", npy(dict("<i4", "(3,)"), d3 + "xx")),
                  "trailing data: header says 3 elements (12 bytes) but 14 bytes of data follow");
  check_npy_error(put("huge_n.npy", npy(dict("<f8", "(18446744073709551615,)"), d3)),
                  "truncated: header says 18446744073709551615 elements");
  check_npy_error(put("huge_n2.npy", npy(dict("<i4", "(4611686018427387904,)"), d3)), "truncated");
  check_npy_error(put("overflow.npy", npy(dict("<i4", "(99999999999999999999999,)"), d3)),
                  "bad header: integer too large");
  check_npy_error(put("neg.npy", npy(dict("<i4", "(-3,)"), d3)), "bad header: bad dimension '-3'");
  check_npy_error(put("no_descr.npy", npy("{'fortran_order': False, 'shape': (3,)}", d3)),
                  "bad header: missing key 'descr'");
  check_npy_error(put("no_fortran.npy", npy("{'descr': '<i4', 'shape': (3,)}", d3)),
                  "bad header: missing key 'fortran_order'");
  check_npy_error(put("no_shape.npy", npy("{'descr': '<i4', 'fortran_order': False}", d3)),
                  "bad header: missing key 'shape'");
  check_npy_error(put("extra_key.npy",
                      npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), 'x': 1}", d3)),
                  "bad header: unexpected key 'x'");
  check_npy_error(
      put("dup_key.npy",
          npy("{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (3,)}", d3)),
      "bad header: duplicate key 'descr'");
  check_npy_error(put("shape_int.npy", npy(dict("<i4", "(3)"), d3)),
                  "bad header: 'shape' is not a tuple");
  check_npy_error(put("shape_list.npy", npy(dict("<i4", "[3]"), d3)),
                  "bad header: 'shape' is not a tuple");
  check_npy_error(put("fortran_str.npy", npy(dict("<i4", "(3,)", "'no'"), d3)),
                  "bad header: 'fortran_order'");
  check_npy_error(put("garbage.npy", npy("hello", d3)), "bad header: expected '{'");
  check_npy_error(put("unterminated.npy", npy("{'descr: '<i4'", d3)), "bad header");
  check_npy_error(put("name.npy", npy(dict("<i4", "(3,)", "Maybe"), d3)),
                  "bad header: unknown name 'Maybe'");
  check_npy_error(put("after.npy", npy(dict("<i4", "(3,)") + " junk", d3)),
                  "bad header: unexpected text after the dict");
  check_npy_error(put("deep.npy", npy("{'descr': " + std::string(100000, '('), "")),
                  "bad header: nesting too deep");
  // Header length larger than the file (v1: 0xffff, v2: 0xffffffff).
  check_npy_error(put("hlen1.npy", std::string("\x93NUMPY\x01\x00\xff\xff{}", 12)),
                  "bad header: header length 65535");
  check_npy_error(put("hlen2.npy", std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14)),
                  "bad header: header length 4294967295");
  check_npy_error(tmp(""), "not a regular file");
}

TEST_CASE("npy errors show header text escaped and cut, on one line", "[npy]") {
  const std::string d3 = raw<std::int32_t>({1, 2, 3});
  // An escape sequence and a newline in a key: no colour code, no forged second line.
  const std::string forged =
      "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), '\x1b[31mkey\nclreduce: all "
      "verified': 1}";
  const std::string path = put("forged.npy", npy(forged, d3));
  REQUIRE_THROWS_WITH(
      read_npy(path),
      path + ": bad header: unexpected key '\\x1B[31mkey\\x0Aclreduce: all verified'");
  // A NUL byte does not cut the message short.
  const std::string nul =
      std::string("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), 'a") + '\0' + "b': 1}";
  check_npy_error(put("nul.npy", npy(nul, d3)), "unexpected key 'a\\x00b'");
  check_npy_error(put("nul_descr.npy", npy(dict(std::string("<i4\0\x1b", 5), "(3,)"), d3)),
                  "unsupported dtype '<i4\\x00\\x1B' (supported:");
  // A long name is cut with "...".
  const std::string long_name =
      "{'descr': '<i4', 'fortran_order': " + std::string(5000, 'F') + ", 'shape': (3,)}";
  try {
    read_npy(put("long.npy", npy(long_name, d3)));
    FAIL("no error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, ContainsSubstring("unknown name 'FFFF"));
    CHECK_THAT(msg, ContainsSubstring("...'"));
    CHECK(msg.size() < 400);
  }
}

TEST_CASE("npy reader survives truncated and corrupted files", "[npy]") {
  const std::string good = npy(dict("<i8", "(4,)"), raw<std::int64_t>({1, 2, 3, 4}));
  for (std::size_t len = 0; len < good.size(); ++len) {
    const std::string path = put("cut.npy", good.substr(0, len));
    REQUIRE_THROWS_AS(read_npy(path), Error);
    REQUIRE_THROWS_AS(read_npy_flags(path), Error);
  }
  std::mt19937 rng(12345);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k)
      s[rng() % 100] = static_cast<char>(rng() & 0xff);  // header bytes only
    const std::string path = put("fuzz.npy", s);
    try {
      const HostArray a = read_npy(path);
      REQUIRE(a.bytes.size() <= s.size());
    } catch (const Error& e) {
      REQUIRE(e.category() == Errc::kInput);
    }
  }
}

TEST_CASE("npy write errors", "[npy]") {
  const std::string path = tmp("no_dir") + "/x.npy";
  REQUIRE_THROWS_WITH(write_npy(path, host<std::int32_t>(DType::kInt32, {1})),
                      "cannot write " + path + ": directory " + tmp("no_dir") + " does not exist");
}

TEST_CASE("npy writes replace a file whole and leave no temporary file", "[npy]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(tmp("replace_dir"));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "x.npy").string();
  write_npy(path, host<std::int64_t>(DType::kInt64, {1, 2, 3, 4, 5}));
  write_npy(path, host<std::int32_t>(DType::kInt32, {7}));
  const HostArray back = read_npy(path);
  CHECK(back.type == DType::kInt32);
  REQUIRE(back.n == 1);
  CHECK(back.as<std::int32_t>()[0] == 7);
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir))
    files += e.path().filename() == "x.npy" ? 1 : 100;
  CHECK(files == 1);
  fs::remove_all(dir);
}

TEST_CASE("npy maps large little-endian data where it lies; big-endian and small data are read",
          "[npy]") {
  HostArray a;
  a.type = DType::kInt64;
  a.n = (std::size_t{1} << 17) + 3;  // over 1 MiB: mapped
  a.bytes.resize(a.n * 8);
  for (std::size_t i = 0; i < a.n; ++i) {
    const auto v = static_cast<std::int64_t>(i * 2654435761u) - (std::int64_t{1} << 40);
    std::memcpy(&a.bytes[i * 8], &v, 8);
  }
  write_npy(tmp("big.npy"), a);
  {
    const HostArray b = read_npy(tmp("big.npy"));
    CHECK(b.type == DType::kInt64);
    CHECK(b.n == a.n);
    CHECK(b.bytes.is_view());
    CHECK(b.bytes == a.bytes);
    // Copy-on-write: changing the array changes no byte of the file.
    HostArray c = read_npy(tmp("big.npy"));
    c.bytes[0] ^= 0xff;
  }
  CHECK(read_npy(tmp("big.npy")).bytes == a.bytes);
  HostArray small = a;
  small.n = 100;
  small.bytes.resize(800);
  write_npy(tmp("small.npy"), small);
  const HostArray s = read_npy(tmp("small.npy"));
  CHECK(!s.bytes.is_view());
  CHECK(s.bytes == small.bytes);
}

TEST_CASE("npy_info and read_npy_slice: a slice alone, either byte order, the header as written",
          "[npy]") {
  // Big-endian, version 2.0: elements [1, 3) of 4, swapped to host order; a small slice is read.
  const std::string be =
      put("slice_be.npy",
          npy(dict(">i8", "(4,)"), raw<std::int64_t>({7, -8, 0x0102030405060708, 9}, true), 2, 0));
  const NpyInfo bi = npy_info(be);
  CHECK(bi.type == DType::kInt64);
  CHECK(bi.n == 4);
  CHECK(bi.big_endian);
  CHECK(bi.data_at % 64 == 0);
  const HostArray s = read_npy_slice(be, 1, 2);
  REQUIRE(s.type == DType::kInt64);
  REQUIRE(s.n == 2);
  CHECK(s.as<std::int64_t>()[0] == -8);
  CHECK(s.as<std::int64_t>()[1] == 0x0102030405060708);
  CHECK(!s.bytes.is_view());
  CHECK(read_npy_slice(be, 4, 0).n == 0);
  CHECK_THROWS_AS(read_npy_slice(be, 3, 2), Error);
  CHECK_THROWS_AS(read_npy_slice(be, 5, 0), Error);
  // Little-endian and large: the slice is a view of the file where it lies.
  std::vector<float> v(1 << 20);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  write_npy(tmp("slice_le.npy"), host(DType::kFloat, v));
  const NpyInfo li = npy_info(tmp("slice_le.npy"));
  CHECK(li.type == DType::kFloat);
  CHECK(li.n == v.size());
  CHECK(!li.big_endian);
  CHECK(li.data_at == npy_header(DType::kFloat, v.size()).size());
  const HostArray l = read_npy_slice(tmp("slice_le.npy"), 12345, 300000);
  CHECK(l.bytes.is_view());
  REQUIRE(l.n == 300000);
  CHECK(std::memcmp(l.bytes.data(), v.data() + 12345, 300000 * sizeof(float)) == 0);
  // npy_header is what write_npy writes in front of the data.
  std::ifstream f(tmp("slice_le.npy"), std::ios::binary);
  std::string head(li.data_at, '\0');
  f.read(&head[0], static_cast<std::streamsize>(head.size()));
  CHECK(head == npy_header(DType::kFloat, v.size()));
  CHECK_THAT(head, ContainsSubstring("'shape': (1048576,)"));
  // What read_npy refuses, npy_info refuses too.
  CHECK_THROWS_AS(npy_info(put("slice_c8.npy", npy(dict("<c8", "(1,)"), "abcdefgh"))), Error);
  CHECK_THROWS_AS(npy_info(put("slice_short.npy", npy(dict("<i4", "(2,)"), "abcd"))), Error);
}

namespace {

// Reads bytes through a pipe as read_npy_stream() reads standard input: a writer thread feeds
// them (then more, when given) and closes its end; `left` gets what the reader did not take.
HostArray through_pipe(const std::string& bytes, std::string& left) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::thread writer([&] {
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t w = ::write(fds[1], bytes.data() + done, bytes.size() - done);
      if (w <= 0) break;
      done += static_cast<std::size_t>(w);
    }
    ::close(fds[1]);
  });
  struct Rest {  // whatever happens, what is left is drained and the writer joined
    int fd;
    std::string& left;
    std::thread& writer;
    ~Rest() {
      char buf[65536];
      for (ssize_t r; (r = ::read(fd, buf, sizeof buf)) > 0;)
        left.append(buf, static_cast<std::size_t>(r));
      writer.join();
      ::close(fd);
    }
  } rest{fds[0], left, writer};
  return read_npy_stream(fds[0], "standard input");
}

}  // namespace

TEST_CASE("npy from a stream: what a file gives, reading no more than the header declares",
          "[npy]") {
  std::string left;
  // Every dtype, either byte order, n = 0, 1 and more than a pipe holds at once.
  std::vector<double> big(100000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = 0.5 * static_cast<double>(i) - 7.0;
  for (const bool be : {false, true}) {
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, big.size()}) {
      CAPTURE(be, n);
      const std::vector<double> v(big.begin(), big.begin() + static_cast<std::ptrdiff_t>(n));
      const std::string bytes =
          npy(dict(be ? ">f8" : "<f8", "(" + std::to_string(n) + ",)"), raw(v, be));
      left.clear();
      const HostArray a = through_pipe(bytes, left);
      const HostArray f = read_npy(put("stream.npy", bytes));
      CHECK(a.type == DType::kDouble);
      CHECK(a.n == n);
      CHECK(a.bytes == f.bytes);
      CHECK(left.empty());
    }
  }
  const std::vector<std::int32_t> ints{1, -2, 3};
  for (const auto& [descr, t] : {std::pair<const char*, DType>{"<i4", DType::kInt32},
                                 {">u4", DType::kUInt32},
                                 {"<f4", DType::kFloat}}) {
    CAPTURE(descr);
    const std::string bytes = npy(dict(descr, "(3,)"), raw(ints, descr[0] == '>'));
    const HostArray a = through_pipe(bytes, left);
    CHECK(a.type == t);
    CHECK(a.bytes == read_npy(put("stream.npy", bytes)).bytes);
  }
  // Versions 2.0 and 3.0 (a preamble of 12 bytes).
  for (const int major : {2, 3}) {
    const std::string bytes = npy(dict("<i4", "(3,)"), raw(ints), major);
    CHECK(through_pipe(bytes, left).bytes == host(DType::kInt32, ints).bytes);
  }

  // Errors: refused as soon as they show, the rest of the input left unread.
  const auto error = [&](const std::string& bytes, const std::string& phrase, std::size_t unread) {
    CAPTURE(phrase);
    left.clear();
    try {
      through_pipe(bytes, left);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.category() == Errc::kInput);
      CHECK_THAT(std::string(e.what()),
                 StartsWith("standard input: ") && ContainsSubstring(phrase));
    }
    CHECK(left.size() == unread);
  };
  error("", "standard input: empty input", 0);
  error(std::string(100000, '\0'), "not a .npy file (bad magic)", 100000 - 12);
  error(std::string("\x93NUMPY\x04\x00", 8) + std::string(1000, ' '),
        "unsupported format version 4.0", 1000 - 4);
  error(npy(dict("<i4", "(3,)"), raw(ints)).substr(0, 40),
        "runs past the end of the input (40 bytes)", 0);
  const std::string good = npy(dict("<i4", "(3,)"), raw(ints));
  error(good.substr(0, good.size() - 6),
        "truncated: header says 3 elements (12 bytes) but 6 bytes of data follow", 0);
  // More than declared: one byte past it is read, the rest is not.
  error(npy(dict("<i4", "(3,)"), raw(ints)) + std::string(50000, 'x'),
        "trailing data: header says 3 elements (12 bytes) but more bytes of data follow",
        50000 - 1);
  error(npy(dict("<i4", "(3, 2)"), std::string(50000, 'x')), "shape (3, 2) is not 1-D", 50000);
  error(npy(dict("<c8", "(3,)"), std::string(50000, 'x')), "unsupported dtype '<c8'", 50000);
  // A header that declares more than the host can hold: refused before any data is read.
  left.clear();
  try {
    through_pipe(npy(dict("<i8", "(1099511627776000,)"), std::string(50000, '\0')), left);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kUnsupported);
    CHECK_THAT(std::string(e.what()), ContainsSubstring("out of host memory"));
  }
  CHECK(left.size() == 50000);
}
