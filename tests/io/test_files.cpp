// test_files.cpp: reading only regular files (a FIFO with no writer, a device, a directory are
// refused at once, by their type, in the caller's error category).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <cerrno>
#include <csignal>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clreduce/error.hpp"
#include "io/files.hpp"
#include "test_helpers.hpp"

using namespace clreduce;
namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::Equals;

namespace {

using clreduce::test::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The names in dir: the target and nothing else means no temporary file was left behind.
std::vector<std::string> names(const fs::path& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

// Injected write(2)s for the atomic writer.
int g_full = -1;  // an fd of /dev/full
int g_calls = 0;  // calls so far
long to_dev_full(int, const void* p, std::size_t n) {
  return static_cast<long>(::write(g_full, p, n));
}
long three_bytes_at_a_time(int fd, const void* p, std::size_t n) {
  return static_cast<long>(::write(fd, p, std::min<std::size_t>(n, 3)));
}
long fails_on_second_call(int fd, const void* p, std::size_t n) {
  if (++g_calls == 2) {
    errno = EIO;
    return -1;
  }
  return static_cast<long>(::write(fd, p, n));
}
long terminated_on_second_call(int fd, const void* p, std::size_t n) {
  if (++g_calls == 2) ::raise(SIGTERM);
  return static_cast<long>(::write(fd, p, n));
}

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

TEST_CASE("a FIFO with no writer, a directory and a device are refused at once, naming the file",
          "[files]") {
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
  CHECK_THAT(std::string(e.what()),
             Equals("kernel source " + fifo + ": not a regular file (a FIFO)"));
  e = thrown([&] { read_regular_file(d / "dir.cl", Errc::kBuild, "kernel source"); });
  CHECK(e.category() == Errc::kBuild);
  CHECK_THAT(std::string(e.what()),
             Equals("kernel source " + (d / "dir.cl") + ": not a regular file (a directory)"));
  e = thrown([&] { read_regular_file("/dev/null", Errc::kInput); });
  CHECK_THAT(std::string(e.what()), Equals("/dev/null: not a regular file (a character device)"));
  e = thrown([&] { read_regular_file(d / "missing", Errc::kBuild, "kernel source"); });
  CHECK_THAT(std::string(e.what()), Equals("cannot open kernel source " + (d / "missing") +
                                           ": No such file or directory"));
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

TEST_CASE(
    "check_output_path refuses what cannot be written before any work, and leaves nothing behind",
    "[files]") {
  const TempDir d;
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  std::ofstream(d / "file") << "x";
  fs::create_directory(d / "sub");
  struct Case {
    std::string path, says;
  };
  for (const Case& c :
       {Case{d / "missing/out.npy", "cannot write " + (d / "missing/out.npy") + ": directory " +
                                        (d / "missing") + " does not exist"},
        Case{d / "sub", "cannot write " + (d / "sub") + ": it is a directory"},
        Case{d / "sub/", "cannot write " + (d / "sub/") + ": it is a directory"},
        Case{d / "fifo", "cannot write " + (d / "fifo") + ": not a regular file (a FIFO)"},
        Case{"/dev/null", "cannot write /dev/null: not a regular file (a character device)"},
        Case{d / "file/out.npy", "cannot write " + (d / "file/out.npy") + ": Not a directory"},
        Case{"", "cannot write an output file with an empty name"}}) {
    CAPTURE(c.path);
    const Error e = thrown([&] { check_output_path(c.path); });
    CHECK(e.category() == Errc::kUsage);
    CHECK(std::string(e.what()) == c.says);
  }
  check_output_path(d / "new.npy");
  check_output_path(d / "file");
  CHECK(names(d.dir) == std::vector<std::string>{"fifo", "file", "sub"});
  CHECK(slurp(d / "file") == "x");
}

TEST_CASE(
    "write_file_atomically writes every piece, replaces a file keeping its mode, leaves no "
    "temporary",
    "[files]") {
  const TempDir d;
  const std::string path = d / "out.npy";
  write_file_atomically(path, {"abc", "", "defg"});
  CHECK(slurp(path) == "abcdefg");
  REQUIRE(::chmod(path.c_str(), 0640) == 0);
  write_file_atomically(path, {"second", " version"},
                        three_bytes_at_a_time);  // short writes are resumed
  CHECK(slurp(path) == "second version");
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
  CHECK(names(d.dir) == std::vector<std::string>{"out.npy"});
  // The FIFO check also holds at write time (nothing blocks, nothing is replaced).
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(write_file_atomically(d / "fifo", {"x"}),
                    ContainsSubstring("not a regular file (a FIFO)"));
  CHECK(names(d.dir) == std::vector<std::string>{"fifo", "out.npy"});
}

TEST_CASE("a full disk or a failing write leaves the old file whole and no temporary file",
          "[files]") {
  const TempDir d;
  const std::string path = d / "out.npy";
  write_file_atomically(path, {"the good old file"});
  g_full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (g_full >= 0) {  // writes to /dev/full fail with ENOSPC, as on a full disk
    const Error e = thrown([&] {
      write_file_atomically(path, {"header", std::string(100000, 'x')}, to_dev_full);
    });
    CHECK(e.category() == Errc::kInput);
    CHECK(std::string(e.what()) ==
          "cannot write " + path + ": No space left on device (the file is unchanged)");
    ::close(g_full);
    CHECK(slurp(path) == "the good old file");
    CHECK(names(d.dir) == std::vector<std::string>{"out.npy"});
  }
  g_calls = 0;
  Error e = thrown([&] { write_file_atomically(path, {"header", "data"}, fails_on_second_call); });
  CHECK_THAT(std::string(e.what()),
             ContainsSubstring("Input/output error (the file is unchanged)"));
  CHECK(slurp(path) == "the good old file");
  g_calls = 0;
  e = thrown([&] {
    write_file_atomically(d / "new.npy", {"header", "data"}, fails_on_second_call);
  });
  CHECK_THAT(std::string(e.what()), ContainsSubstring("(no file was written)"));
  CHECK(names(d.dir) == std::vector<std::string>{"out.npy"});
}

TEST_CASE("a SIGTERM during the write removes the temporary file and leaves the old file whole",
          "[files]") {
  const TempDir d;
  const std::string path = d / "out.npy";
  write_file_atomically(path, {"the good old file"});
  struct sigaction before {};
  REQUIRE(::sigaction(SIGTERM, nullptr, &before) == 0);
  write_file_atomically(d / "scratch", {"x"});
  fs::remove(d.dir / "scratch");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {              // killed by the SIGTERM raised inside the second write, or exits 3
    ::signal(SIGTERM, SIG_DFL);  // the test framework's own handler would report the signal
    g_calls = 0;
    try {
      write_file_atomically(path, {"new header", std::string(100000, 'y')},
                            terminated_on_second_call);
    } catch (...) {
    }
    ::_exit(3);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGTERM);
  CHECK(slurp(path) == "the good old file");
  CHECK(names(d.dir) == std::vector<std::string>{"out.npy"});
  // The writer restores the handlers it replaced: this process's SIGTERM action is as it was.
  struct sigaction now {};
  REQUIRE(::sigaction(SIGTERM, nullptr, &now) == 0);
  CHECK(now.sa_handler == before.sa_handler);
}

namespace {

// Runs f in a child process with its stderr into a pipe; returns the wait status, err gets what
// it wrote.
template <class F> int in_child(F f, std::string& err) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], STDERR_FILENO);
    ::signal(SIGBUS, SIG_DFL);  // whatever the test framework set: the default, as in clreduce
    f();
    ::_exit(0);
  }
  ::close(fds[1]);
  char buf[4096];
  for (ssize_t r; (r = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    err.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return status;
}

}  // namespace

TEST_CASE("a mapped input truncated while it is read ends the process with one line and exit 2",
          "[files]") {
  const TempDir d;
  const std::string path = d / "shrinks\n.npy";  // the name is escaped in the message
  const long page = ::sysconf(_SC_PAGESIZE);
  std::ofstream(path, std::ios::binary) << std::string(static_cast<std::size_t>(4 * page), 'x');
  std::string err;
  const int status = in_child(
      [&] {
        const InputFile f(path, Errc::kInput);
        Bytes b;
        if (!f.map(100, f.size() - 100, b)) ::_exit(10);
        if (b[0] != 'x') ::_exit(11);  // the first page is read while the file is whole
        if (::truncate(path.c_str(), page) != 0) ::_exit(12);
        volatile unsigned char last = b[b.size() - 1];  // a page past the new end: SIGBUS
        (void)last;
        ::_exit(13);
      },
      err);
  INFO("ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  CHECK(WIFEXITED(status));
  if (WIFEXITED(status)) CHECK(WEXITSTATUS(status) == 2);
  CHECK(err ==
        "clreduce: " + (d / "shrinks\\x0A.npy") + ": the file changed size while being read\n");
}

TEST_CASE("a SIGBUS that is no mapped file's fault keeps its usual action", "[files]") {
  const TempDir d;
  const std::string path = d / "whole.npy";
  std::ofstream(path, std::ios::binary) << std::string(1 << 16, 'x');
  std::string err;
  // With a mapping alive, a SIGBUS sent to the process ends it by SIGBUS, with nothing said.
  const int status = in_child(
      [&] {
        const InputFile f(path, Errc::kInput);
        Bytes b;
        if (!f.map(0, f.size(), b)) ::_exit(10);
        ::kill(::getpid(), SIGBUS);
        ::_exit(13);
      },
      err);
  CHECK(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGBUS);
  CHECK(err.empty());
  // Unmapped again, a truncated file is only read: a short read is an error like any other.
  const InputFile f(path, Errc::kInput);
  {
    Bytes b;
    REQUIRE(f.map(0, f.size(), b));
    CHECK(b[100] == 'x');
  }
  REQUIRE(::truncate(path.c_str(), 10) == 0);
  char buf[8];
  CHECK_THROWS_WITH(f.read_at(100, buf, 8), ContainsSubstring("it shrank while being read"));
}

namespace {

int g_ready = -1;  // the pipe's write end: the child says it is inside the write

// The second write tells the parent it has begun, then waits to be ended by a signal; if a
// handler returns instead, the write fails (and the child exits 3).
long waits_in_second_call(int fd, const void* p, std::size_t n) {
  if (++g_calls == 2) {
    const char c = 'w';
    if (::write(g_ready, &c, 1) != 1) ::_exit(20);
    ::pause();
    errno = EIO;
    return -1;
  }
  return static_cast<long>(::write(fd, p, n));
}

int g_noted = -1;  // a handler that returns, as LLVM's does for SIGQUIT, notes that it ran here
void note_and_return(int) {
  const char c = 'h';
  const ssize_t ignored = ::write(g_noted, &c, 1);
  (void)ignored;
}

}  // namespace

TEST_CASE("every signal that ends the process during the write removes the temporary file",
          "[files]") {
  const TempDir d;
  const std::string path = d / "out.npy";
  write_file_atomically(path, {"the good old file"});
  std::vector<int> signals = {SIGINT,  SIGTERM, SIGHUP,  SIGALRM,     SIGQUIT, SIGUSR1,
                              SIGUSR2, SIGPIPE, SIGXCPU, SIGXFSZ,     SIGABRT, SIGVTALRM,
                              SIGPROF, SIGIO,   SIGSYS,  SIGRTMIN + 2};
  // Those taken over even from a handler the process had; the others keep such a handler (a
  // profiler's SIGPROF returns, and the write goes on).
  const auto taken_over = [](int sig) {
    return sig != SIGVTALRM && sig != SIGPROF && sig != SIGIO && sig != SIGSYS &&
           sig != SIGRTMIN + 2;
  };
  for (const bool llvm_like : {false, true}) {
    for (const int sig : signals) {
      if (llvm_like && !taken_over(sig)) continue;
      CAPTURE(sig, llvm_like);
      int ready[2], noted[2];
      REQUIRE(::pipe(ready) == 0);
      REQUIRE(::pipe(noted) == 0);
      const pid_t child = ::fork();
      REQUIRE(child >= 0);
      if (child == 0) {
        ::close(ready[0]);
        ::close(noted[0]);
        g_ready = ready[1];
        g_noted = noted[1];
        const struct rlimit no_core { 0, 0 };
        ::setrlimit(RLIMIT_CORE, &no_core);
        // clreduce's actions: the default, or a handler that returns (LLVM's, for some of them);
        // not the test framework's.
        for (int s = 1; s < NSIG; ++s)
          if (s != SIGKILL && s != SIGSTOP) ::signal(s, SIG_DFL);
        if (llvm_like) ::signal(sig, note_and_return);
        g_calls = 0;
        try {
          write_file_atomically(path, {"new header", std::string(100000, 'y')},
                                waits_in_second_call);
        } catch (...) {
        }
        ::_exit(3);
      }
      ::close(ready[1]);
      ::close(noted[1]);
      char c = 0;
      CHECK(::read(ready[0], &c, 1) == 1);  // the child is inside the write, its temporary exists
      CHECK(names(d.dir).size() == 2);
      ::kill(child, sig);
      int status = 0;
      REQUIRE(::waitpid(child, &status, 0) == child);
      INFO("exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1));
      CHECK(WIFSIGNALED(status));
      if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == sig);
      // The handler the process had ran first.
      if (llvm_like) CHECK(::read(noted[0], &c, 1) == 1);
      CHECK(slurp(path) == "the good old file");
      CHECK(names(d.dir) == std::vector<std::string>{"out.npy"});
      for (const std::string& n : names(d.dir))
        if (n != "out.npy") fs::remove(d.dir / n);
      ::close(ready[0]);
      ::close(noted[0]);
    }
  }
}
