// test_files.cpp: reading only regular files (a FIFO with no writer, a device, a directory are
// refused at once, by their type, in the caller's error category).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <sys/stat.h>

#include "clreduce/error.hpp"
#include "io/files.hpp"

using namespace clreduce;
namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::Equals;

namespace {

struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() / ("clreduce_test_files_" + std::to_string(std::random_device{}()) + "_" +
                                       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

// The message and category of what f throws; fails the test when it throws nothing.
template <class F> Error thrown(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  FAIL("no error");
  return Error(Errc::kInternal, "");
}

}  // namespace

TEST_CASE("a regular file is read whole, and by ranges", "[files]") {
  const TempDir d;
  std::ofstream(d / "a.txt", std::ios::binary) << std::string("hello\0world", 11);
  CHECK(read_regular_file(d / "a.txt", Errc::kInput) == std::string("hello\0world", 11));
  const InputFile f(d / "a.txt", Errc::kInput);
  CHECK(f.size() == 11);
  char buf[5];
  f.read_at(6, buf, 5);
  CHECK(std::string(buf, 5) == "world");
  CHECK_THROWS_WITH(f.read_at(8, buf, 5), ContainsSubstring("read error"));
  std::ofstream(d / "empty", std::ios::binary);
  CHECK(read_regular_file(d / "empty", Errc::kInput).empty());
}

TEST_CASE("a FIFO with no writer, a directory and a device are refused at once, naming the file", "[files]") {
  const TempDir d;
  const std::string fifo = d / "fifo.npy";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_directory(d / "dir.cl");
  const auto t0 = std::chrono::steady_clock::now();
  Error e = thrown([&] { InputFile f(fifo, Errc::kInput); });
  CHECK(e.category() == Errc::kInput);
  CHECK_THAT(std::string(e.what()), Equals(fifo + ": not a regular file (a FIFO)"));
  e = thrown([&] { read_regular_file(fifo, Errc::kBuild, "kernel source"); });
  CHECK(e.category() == Errc::kBuild);
  CHECK_THAT(std::string(e.what()), Equals("kernel source " + fifo + ": not a regular file (a FIFO)"));
  e = thrown([&] { read_regular_file(d / "dir.cl", Errc::kBuild, "kernel source"); });
  CHECK(e.category() == Errc::kBuild);
  CHECK_THAT(std::string(e.what()), Equals("kernel source " + (d / "dir.cl") + ": not a regular file (a directory)"));
  e = thrown([&] { read_regular_file("/dev/null", Errc::kInput); });
  CHECK_THAT(std::string(e.what()), Equals("/dev/null: not a regular file (a character device)"));
  e = thrown([&] { read_regular_file(d / "missing", Errc::kBuild, "kernel source"); });
  CHECK_THAT(std::string(e.what()), Equals("cannot open kernel source " + (d / "missing") + ": No such file or directory"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));  // nothing blocked
}

TEST_CASE("a path with control characters is escaped in the message", "[files]") {
  const TempDir d;
  const Error e = thrown([&] { InputFile f(d / "bad\nname\x1b[31m", Errc::kInput); });
  const std::string msg = e.what();
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(msg.find('\x1b') == std::string::npos);
  CHECK_THAT(msg, ContainsSubstring("bad\\x0Aname\\x1B[31m: No such file or directory"));
}
