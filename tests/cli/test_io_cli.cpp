// test_io_cli.cpp: the command line's files and streams end to end: a .npy whose data lies off
// the device's alignment, standard input, --save-input, messages that echo what the user typed,
// and output files under signals.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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

using Result = clreduce::test::CliResult;
using clreduce::test::run_cli;
using clreduce::test::TempDir;
std::size_t lines(const std::string& s) { return clreduce::test::count_lines(s); }

// A command that hangs fails the test instead of the suite: timeout exits 124.
const std::string kTimeout = "timeout 300";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The JSON rows of a run's output.
std::vector<std::string> json_rows(const std::string& out) {
  std::vector<std::string> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("{\"variant\"", 0) == 0) rows.push_back(line);
  return rows;
}

// A .npy file of array a, version 1.0, whose data starts at byte data_at: the header dict written
// without spaces and padded to fit, as NumPy reads any header that ends in a newline.
std::string npy_at(const HostArray& a, std::size_t data_at) {
  const char* descr = a.type == DType::kInt32    ? "<i4"
                      : a.type == DType::kUInt32 ? "<u4"
                      : a.type == DType::kInt64  ? "<i8"
                      : a.type == DType::kUInt64 ? "<u8"
                      : a.type == DType::kFloat  ? "<f4"
                                                 : "<f8";
  std::string dict = std::string("{'descr':'") + descr + "','fortran_order':False,'shape':(" +
                     std::to_string(a.n) + ",)}";
  const std::size_t hlen = data_at - 10;
  REQUIRE(dict.size() + 1 <= hlen);
  dict.append(hlen - dict.size() - 1, ' ');
  dict += '\n';
  std::string s("\x93NUMPY\x01\x00", 8);
  s += static_cast<char>(hlen & 0xff);
  s += static_cast<char>(hlen >> 8);
  return s + dict + std::string(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
}

}  // namespace

TEST_CASE("a .npy whose data starts off the element size runs every variant, every type",
          "[cli][io]") {
  // Data at byte 70: 2 bytes off a 4-byte element, 6 off an 8-byte one. 1 MiB of data, so the
  // reader maps the file and the data lies where the file puts it (a CPU device would use it in
  // place, where vectorised loads fault).
  const TempDir d;
  for (const DType t : all_dtypes()) {
    const std::size_t n = (std::size_t{1} << 20) / dtype_size(t) + 3;
    const HostArray a = generate(t, n, 7);
    const std::string path = d / ("odd_" + dtype_name(t) + ".npy");
    std::ofstream(path, std::ios::binary) << npy_at(a, 70);
    // The reader agrees that the file holds the array.
    const HostArray back = read_npy(path);
    REQUIRE(back.n == n);
    REQUIRE(back.bytes == a.bytes);
    for (const std::string& run :
         {std::string("--op sum --variant all"), std::string("--op max --variant all-reduce"),
          std::string("--op argmin --variant all-reduce")}) {
      const std::string args =
          "--input " + path + " " + run + " --format json --repeat 1 --warmup 0";
      CAPTURE(args);
      const Result r = run_cli(args, kTimeout);
      CHECK(r.code == 0);
      std::size_t ran = 0;
      for (const std::string& row : json_rows(r.out)) {
        CAPTURE(row);
        if (row.find("\"skipped\":true") != std::string::npos) continue;
        ++ran;
        CHECK_THAT(row, ContainsSubstring("\"verified\":true"));
      }
      CHECK(ran >= 8);
    }
  }
}
