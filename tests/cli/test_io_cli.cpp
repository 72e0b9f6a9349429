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

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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

// The names in dir.
std::vector<std::string> names(const fs::path& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  return v;
}

// clreduce with args, started with its standard input the write end returned in `in`, its output
// to /dev/null, TMPDIR=tmpdir and no core file; the device under test unless args pick one.
pid_t start_cli(std::vector<std::string> args, const std::string& tmpdir, int& in) {
  const char* dev = std::getenv("CLREDUCE_TEST_DEVICE");
  if (dev && *dev) {
    args.push_back("--device");
    args.push_back(dev);
  }
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(fds[0], STDIN_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    const struct rlimit no_core { 0, 0 };
    ::setrlimit(RLIMIT_CORE, &no_core);
    for (int s = 1; s < NSIG; ++s)  // the test framework's handlers are not clreduce's
      if (s != SIGKILL && s != SIGSTOP) ::signal(s, SIG_DFL);
    ::setenv("TMPDIR", tmpdir.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(CLREDUCE_BIN)};
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(CLREDUCE_BIN, argv.data());
    ::_exit(127);
  }
  ::close(fds[0]);
  in = fds[1];
  return child;
}

// Writes all of s to fd; false when the reader is gone.
bool write_all(int fd, const std::string& s) {
  for (std::size_t done = 0; done < s.size();) {
    const ssize_t w = ::write(fd, s.data() + done, s.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

TEST_CASE("standard input is read header first, no more than it declares, into no file",
          "[cli][io]") {
  const TempDir d, tmp;
  const std::string env = "TMPDIR=" + tmp.dir.string() + " " + kTimeout;
  Result r = run_cli("--input - < /dev/null", env);
  CHECK(r.code == 2);
  CHECK(r.out == "clreduce: standard input: empty input\n");
  // Endless bytes that are no .npy: refused from the first 12, never copied anywhere (a file
  // limit of 64 KiB would end a run that wrote a copy of them with SIGXFSZ).
  r = run_cli("--input - < /dev/zero", "ulimit -f 64; " + env);
  CHECK(r.code == 2);
  CHECK(r.out == "clreduce: standard input: not a .npy file (bad magic)\n");
  // A header whose data does not follow, or is followed by more.
  const HostArray a = generate(DType::kInt64, 1000, 3);
  const std::string file = npy_header(DType::kInt64, 1000) +
                           std::string(reinterpret_cast<const char*>(a.bytes.data()), 8000);
  std::ofstream(d / "short.npy", std::ios::binary) << file.substr(0, file.size() - 8);
  std::ofstream(d / "long.npy", std::ios::binary) << file << "more";
  std::ofstream(d / "good.npy", std::ios::binary) << file;
  r = run_cli("--input - < " + (d / "short.npy"), env);
  CHECK(r.code == 2);
  CHECK(r.out ==
        "clreduce: standard input: truncated: header says 1000 elements (8000 bytes) but 7992 "
        "bytes of data follow\n");
  r = run_cli("--input - < " + (d / "long.npy"), env);
  CHECK(r.code == 2);
  CHECK(r.out ==
        "clreduce: standard input: trailing data: header says 1000 elements (8000 bytes) but "
        "more bytes of data follow\n");
  // Through a pipe, as from another program: the array as the file holds it.
  r = run_cli("--input - --op sum --format json < " + (d / "good.npy"), env);
  CHECK(r.code == 0);
  const std::vector<std::string> from_pipe = json_rows(r.out);
  r = run_cli("--input " + (d / "good.npy") + " --op sum --format json", env);
  const std::vector<std::string> from_file = json_rows(r.out);
  REQUIRE(from_pipe.size() == 1);
  REQUIRE(from_file.size() == 1);
  const auto result = [](const std::string& row) {
    const std::size_t at = row.find("\"result\":");
    return row.substr(at, row.find(',', at) - at);
  };
  CHECK(result(from_pipe[0]) == result(from_file[0]));
  CHECK_THAT(from_pipe[0], ContainsSubstring("\"verified\":true"));
  CHECK(names(tmp.dir).empty());
}

TEST_CASE("a signal while --input - is read ends the run by that signal, leaving no file",
          "[cli][io]") {
  const TempDir tmp;
  // A header that declares 8 MiB, then 1 MiB of it: once that is written, clreduce is reading.
  const std::size_t n = std::size_t{1} << 20;
  const std::string head = npy_header(DType::kInt64, n);
  const std::string part(std::size_t{1} << 20, '\0');
  ::signal(SIGPIPE, SIG_IGN);  // a child that ended early must fail the test, not end it
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGALRM, SIGUSR2}) {
    CAPTURE(sig);
    int in = -1;
    const pid_t child = start_cli({"--input", "-", "--repeat", "1"}, tmp.dir.string(), in);
    CHECK(write_all(in, head + part));
    ::kill(child, sig);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    ::close(in);
    INFO("exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1));
    CHECK(WIFSIGNALED(status));
    if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == sig);
    CHECK(names(tmp.dir).empty());
  }
  ::signal(SIGPIPE, SIG_DFL);
}

TEST_CASE(
    "a .npy whose data starts off the element size runs every variant for each element size, fast "
    "for every type",
    "[cli][io]") {
  // Data at byte 70: 2 bytes off a 4-byte element, 6 off an 8-byte one. 1 MiB of data, so the
  // reader maps the file and the data lies where the file puts it (a CPU device would use it in
  // place, where vectorised loads fault). Every variant for one type of each element size (what
  // is aligned or not depends on the size alone); the others run fast, sums and an arg op.
  const TempDir d;
  for (const DType t : all_dtypes()) {
    const bool every = t == DType::kInt32 || t == DType::kDouble;
    const std::size_t n = (std::size_t{1} << 20) / dtype_size(t) + 3;
    const HostArray a = generate(t, n, 7);
    const std::string path = d / ("odd_" + dtype_name(t) + ".npy");
    std::ofstream(path, std::ios::binary) << npy_at(a, 70);
    // The reader agrees that the file holds the array.
    const HostArray back = read_npy(path);
    REQUIRE(back.n == n);
    REQUIRE(back.bytes == a.bytes);
    const std::vector<std::string> runs =
        every ? std::vector<std::string>{"--op sum --variant all", "--op max --variant all-reduce",
                                         "--op argmin --variant all-reduce"}
              : std::vector<std::string>{"--op sum --variant fast,scan-fast",
                                         "--op argmin --variant fast"};
    for (const std::string& run : runs) {
      const std::string args =
          "--input " + path + " " + run + " --format json --repeat 1 --warmup 0";
      CAPTURE(args);
      const Result r = run_cli(args, kTimeout);
      CHECK(r.code == 0);
      std::size_t ran = 0;
      std::string names;
      for (const std::string& row : json_rows(r.out)) {
        CAPTURE(row);
        if (row.find("\"skipped\":true") != std::string::npos) continue;
        ++ran;
        CHECK_THAT(row, ContainsSubstring("\"verified\":true"));
        names += row;
      }
      if (every) {
        CHECK(ran >= 8);
      } else {  // each variant asked for ran (and verified, above)
        CHECK_THAT(names, ContainsSubstring("\"variant\":\"fast\""));
        if (run.find("scan-fast") != std::string::npos)
          CHECK_THAT(names, ContainsSubstring("\"variant\":\"scan-fast\""));
      }
    }
  }
}

TEST_CASE("values and paths from the command line are escaped in messages: one line, no escapes",
          "[cli][io]") {
  // Each value holds a newline that would start a forged second line, and a colour code.
  const std::string bad = "x\nclreduce: all verified\x1b[32m";
  const std::string shown = "x\\x0Aclreduce: all verified\\x1B[32m";
  const std::string q = "'" + bad + "'";
  struct Case {
    std::string args, says;
    int code;
  };
  const Case cases[] = {
      {"--op " + q, "unknown op '" + shown + "'", 2},
      {"--type " + q, "unknown type '" + shown + "'", 2},
      {"--acc " + q, "unknown type '" + shown + "'", 2},
      {"--variant " + q, "unknown variant '" + shown + "'", 2},
      {"--variant 'fast," + bad + "'", "unknown variant '" + shown + "'", 2},
      {"--device " + q, "no device matches '" + shown + "'", 2},
      {"--size " + q, "not '" + shown + "'", 2},
      {"--seed " + q, "not '" + shown + "'", 2},
      {"--repeat " + q, "not '" + shown + "'", 2},
      {"--max-chunk " + q, "not '" + shown + "'", 2},
      {"--timeout " + q, "not '" + shown + "'", 2},
      {"--tune " + q, "a tuning setting is KEY=VALUE, not '" + shown + "'", 2},
      {"--tune 'in-place=" + bad + "'",
       "--tune in-place must be one of auto, on, off, not '" + shown + "'", 2},
      {"--tune '" + bad + "=1'", "unknown tuning key '" + shown + "'", 2},
      {"--shares " + q + " --device 0,0", "--shares " + shown + ": '" + shown + "'", 2},
      {"--format " + q, shown + " not in", 2},
      {q, shown, 2},  // a stray argument: CLI11's own message
      {"--input " + q, "cannot open " + shown + ": No such file or directory", 2},
      {"--variant scan-fast --size 10 --output '/nonexistent/" + bad + "'",
       "cannot write /nonexistent/" + shown, 2},
      {"--kernel-dir " + q, "--kernel-dir " + shown, 4},
      {"--map x --reduce 'a+b' --identity 0 --op " + q, "--op " + shown + " and --map", 2},
      {"--map x --reduce 'a+b' --identity 0 --variant " + q, "--variant " + shown + " and --map",
       2},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Result r = run_cli(c.args, kTimeout);
    CHECK(r.code == c.code);
    CHECK(lines(r.out) == 1);
    CHECK(r.out.find('\x1b') == std::string::npos);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
  }
  // A tuning value from the environment too.
  const Result r = run_cli("--size 10", "CLREDUCE_IN_PLACE=" + q + " " + kTimeout);
  CHECK(r.code == 2);
  CHECK(lines(r.out) == 1);
  CHECK_THAT(r.out, ContainsSubstring("not '" + shown + "'"));
}

TEST_CASE(
    "the input saved (--save-input) is the array as NumPy reads it, generated or read, checked up "
    "front",
    "[cli][io]") {
  const TempDir d;
  // Generated: the file is the header NumPy's format asks for, then the generator's elements.
  for (const DType t : {DType::kInt32, DType::kUInt64, DType::kFloat, DType::kDouble}) {
    CAPTURE(dtype_name(t));
    const std::string path = d / ("gen_" + dtype_name(t) + ".npy");
    const Result r = run_cli("--size 1000 --seed 42 --type " + dtype_name(t) +
                                 " --op max --repeat 1 --save-input " + path,
                             kTimeout);
    CHECK(r.code == 0);
    const HostArray want = generate(t, 1000, 42);
    const HostArray got = read_npy(path);
    CHECK(got.type == t);
    CHECK(got.n == 1000);
    CHECK(got.bytes == want.bytes);
    const std::string bytes = slurp(path);
    const std::string header = npy_header(t, 1000);
    REQUIRE(bytes.size() == header.size() + want.bytes.size());
    CHECK(bytes.substr(0, header.size()) == header);
    // Version 1.0, the dict as NumPy writes it, padded with spaces to a newline at 64 bytes.
    const char* descr = t == DType::kInt32    ? "<i4"
                        : t == DType::kUInt64 ? "<u8"
                        : t == DType::kFloat  ? "<f4"
                                              : "<f8";
    CHECK(header.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));
    CHECK(header.substr(10, 60) ==
          std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (1000,), }");
    CHECK(header.size() == 128);
    CHECK(header.back() == '\n');
    CHECK(header.find_first_not_of(' ', 70) == 127);
  }
  // Read: a big-endian file is saved in host order, the same values.
  {
    const std::vector<std::int64_t> v{5, -6, 7, 1LL << 40};
    std::string data;
    for (const std::int64_t x : v)
      for (int k = 7; k >= 0; --k)
        data += static_cast<char>((static_cast<std::uint64_t>(x) >> (8 * k)) & 0xff);
    std::string dict = "{'descr': '>i8', 'fortran_order': False, 'shape': (4,), }";
    dict.append(128 - 10 - dict.size() - 1, ' ');
    dict += '\n';
    std::ofstream(d / "big.npy", std::ios::binary)
        << std::string("\x93NUMPY\x01\x00", 8) << static_cast<char>(dict.size()) << '\0' << dict
        << data;
    const Result r = run_cli(
        "--input " + (d / "big.npy") + " --repeat 1 --save-input " + (d / "saved.npy"), kTimeout);
    CHECK(r.code == 0);
    const HostArray got = read_npy(d / "saved.npy");
    CHECK(got.type == DType::kInt64);
    REQUIRE(got.n == 4);
    for (std::size_t i = 0; i < 4; ++i) CHECK(got.as<std::int64_t>()[i] == v[i]);
    CHECK(slurp(d / "saved.npy").substr(0, 128) == npy_header(DType::kInt64, 4));
  }
  // Checked before any work (no table), never over --output, no file left behind.
  fs::create_directory(d / "dir.npy");
  for (const std::string& args :
       {"--size 1000 --save-input " + (d / "missing/x.npy"),
        "--size 1000 --save-input " + (d / "dir.npy"),
        "--size 1000 --variant scan-fast --save-input " + (d / "same.npy") + " --output " +
            (d.dir / "." / "same.npy").string()}) {
    CAPTURE(args);
    const Result r = run_cli(args, kTimeout);
    CHECK(r.code == 2);
    CHECK(lines(r.out) == 1);
  }
  CHECK_FALSE(fs::exists(d / "same.npy"));
}
