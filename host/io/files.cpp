// files.cpp: POSIX file handling. Reading: stat first (a FIFO is refused before open() could block
// on it), open with O_NONBLOCK, fstat again (the path may have changed in between), then clear
// O_NONBLOCK. Writing: a temporary file created with O_EXCL beside the target, every write checked,
// fsync, rename; a signal handler removes the temporary file if a signal ends the process
// mid-write.
#include "io/files.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/text.hpp"

namespace clreduce {
namespace {

// "a FIFO", "a directory", ...: what a non-regular file is.
std::string file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a file";
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

InputFile::InputFile(const std::string& path, Errc category, const std::string& role)
    : category_(category), name_(role.empty() ? printable(path) : role + " " + printable(path)) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(category_, "cannot open " + name_ + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) fail("not a regular file (" + file_kind(st.st_mode) + ")");
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) throw Error(category_, "cannot open " + name_ + ": " + errno_text(errno));
  const int flags = ::fcntl(fd_, F_GETFL);
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || flags < 0 ||
      ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (!S_ISREG(st.st_mode)) fail("not a regular file (" + file_kind(st.st_mode) + ")");
    throw Error(category_, "cannot open " + name_ + ": " + errno_text(err));
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::fail(const std::string& what) const { throw Error(category_, name_ + ": " + what); }

namespace {

// The live mappings of input files, for the SIGBUS handler: a page of a mapped file past its end
// (the file was truncated after it was mapped) faults with SIGBUS wherever it is read, in any
// thread, a kernel's included. A slot is free while begin is 0; it is filled (message, end, then
// begin) and emptied (begin first) under g_map_mutex, and read by the handler without a lock.
constexpr std::size_t kMaxMapped = 64;
struct MappedSlot {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  char message[1024];
  std::size_t message_len = 0;
};
MappedSlot g_mapped[kMaxMapped];
std::mutex g_map_mutex;
std::size_t g_live = 0;  // mappings watched
struct sigaction g_bus_previous;

// A fault inside a live mapping: one line and exit 2 (bad input; nothing the process holds can be
// trusted to unwind from inside a kernel). Any other SIGBUS: as before this handler was installed.
extern "C" void on_bus_fault(int sig, siginfo_t* info, void* /*context*/) {
  const auto at = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (MappedSlot& slot : g_mapped) {
    const std::uintptr_t begin = slot.begin.load();
    if (begin != 0 && at >= begin && at < slot.end.load()) {
      const ssize_t ignored = ::write(STDERR_FILENO, slot.message, slot.message_len);
      (void)ignored;
      ::_exit(2);
    }
  }
  ::sigaction(SIGBUS, &g_bus_previous, nullptr);
  // A signal sent by a process is raised again (delivered when this returns); a fault repeats
  // itself when the instruction runs again.
  if (info->si_code <= 0) ::raise(sig);
}

bool bus_handler_is_ours() {
  struct sigaction now {};
  return ::sigaction(SIGBUS, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
         now.sa_sigaction == on_bus_fault;
}

// Registers [p, p + n) as a mapping of the file `name`, installing the handler while the first
// mapping lives; false when every slot is taken.
bool watch_mapping(const unsigned char* p, std::size_t n, const std::string& name) {
  const std::lock_guard<std::mutex> lock(g_map_mutex);
  for (MappedSlot& slot : g_mapped) {
    if (slot.begin.load() != 0) continue;
    if (g_live == 0 && !bus_handler_is_ours()) {
      struct sigaction now {};
      now.sa_sigaction = on_bus_fault;
      now.sa_flags = SA_SIGINFO;
      sigemptyset(&now.sa_mask);
      if (::sigaction(SIGBUS, &now, &g_bus_previous) != 0) return false;
    }
    const std::string line =
        "clreduce: " + name.substr(0, 900) + ": the file changed size while being read\n";
    std::memcpy(slot.message, line.data(), line.size());
    slot.message_len = line.size();
    slot.end.store(reinterpret_cast<std::uintptr_t>(p) + n);
    slot.begin.store(reinterpret_cast<std::uintptr_t>(p));
    ++g_live;
    return true;
  }
  return false;
}

// Forgets the mapping at p; the last one gone, the previous SIGBUS action comes back (unless
// someone installed theirs over this one since: it keeps it, and calls this one, which passes
// every fault on).
void unwatch_mapping(const unsigned char* p) {
  const std::lock_guard<std::mutex> lock(g_map_mutex);
  for (MappedSlot& slot : g_mapped)
    if (slot.begin.load() == reinterpret_cast<std::uintptr_t>(p)) {
      slot.begin.store(0);
      if (--g_live == 0 && bus_handler_is_ours()) ::sigaction(SIGBUS, &g_bus_previous, nullptr);
    }
}

}  // namespace

bool InputFile::map(std::uint64_t offset, std::uint64_t n, Bytes& to) const {
  if (n == 0 || offset + n > size_) return false;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t start = offset / page * page, delta = offset - start;
  void* m = ::mmap(nullptr, static_cast<std::size_t>(n + delta), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE, fd_, static_cast<off_t>(start));
  if (m == MAP_FAILED) return false;
  if (!watch_mapping(static_cast<unsigned char*>(m), static_cast<std::size_t>(n + delta), name_)) {
    ::munmap(m, static_cast<std::size_t>(n + delta));
    return false;
  }
  to.adopt(
      static_cast<unsigned char*>(m) + delta, static_cast<std::size_t>(n),
      [](void* p, std::size_t len, void* arg) {
        const auto d = reinterpret_cast<std::uintptr_t>(arg);
        unwatch_mapping(static_cast<unsigned char*>(p) - d);
        ::munmap(static_cast<unsigned char*>(p) - d, len + d);
      },
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(delta)));
  return true;
}

void InputFile::read_at(std::uint64_t offset, void* dst, std::uint64_t n) const {
  auto* p = static_cast<unsigned char*>(dst);
  while (n > 0) {
    const std::size_t chunk =
        static_cast<std::size_t>(std::min<std::uint64_t>(n, std::uint64_t{1} << 30));
    const ssize_t r = ::pread(fd_, p, chunk, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("read error: " + errno_text(errno));
    if (r == 0)
      fail("read error: the file ended at byte " + std::to_string(offset) +
           " (it shrank while being read)");
    p += r;
    offset += static_cast<std::uint64_t>(r);
    n -= static_cast<std::uint64_t>(r);
  }
}

std::string InputFile::read_rest(std::uint64_t offset) const {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t r = ::pread(fd_, buf, sizeof buf, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("read error: " + errno_text(errno));
    if (r == 0) return out;
    out.append(buf, static_cast<std::size_t>(r));
    offset += static_cast<std::uint64_t>(r);
  }
}

std::string read_regular_file(const std::string& path, Errc category, const std::string& role) {
  return InputFile(path, category, role).read_rest(0);
}

}  // namespace clreduce

namespace clreduce {
namespace {

// The directory a path's file lives in ("." for a bare name).
std::string parent_dir(const std::string& path) {
  const std::string p = std::filesystem::path(path).parent_path().string();
  return p.empty() ? "." : p;
}

// Refuses a target that is not a regular file or not writable; false when it does not exist.
bool check_target(const std::string& path, struct stat& st) {
  const auto refuse = [&](const std::string& why) {
    throw Error(Errc::kUsage, "cannot write " + printable(path) + ": " + why);
  };
  if (path.empty()) throw Error(Errc::kUsage, "cannot write an output file with an empty name");
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    refuse(errno_text(errno));
  }
  if (S_ISDIR(st.st_mode)) refuse("it is a directory");
  if (!S_ISREG(st.st_mode)) refuse("not a regular file (" + file_kind(st.st_mode) + ")");
  if (::access(path.c_str(), W_OK) != 0) refuse(errno_text(errno));
  return true;
}

// The signals whose default action ends the process. Each removes the temporary file, then
// takes its effect: the action the process had for it, and then, if that returned, the default
// (the process dies by the signal). kAlways are taken over even from a handler someone installed
// (LLVM's, which turns a SIGQUIT into nothing); the others only where their action is the
// default, since a handler (a profiler's SIGPROF) may expect to return. Ignored signals stay so.
constexpr int kAlways[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGALRM, SIGUSR1, SIGUSR2, SIGPIPE,
                           SIGXCPU, SIGXFSZ, SIGABRT, SIGSEGV, SIGBUS,  SIGFPE,  SIGILL};
constexpr int kWhenDefault[] = {
    SIGTRAP,   SIGSYS, SIGVTALRM, SIGPROF, SIGIO,
#ifdef SIGPWR
    SIGPWR,
#endif
#ifdef SIGSTKFLT
    SIGSTKFLT,
#endif
};

// One atomic write at a time: the handler knows the temporary file by this global state.
std::mutex g_write_mutex;
char g_temp_path[8192];
std::atomic<int> g_temp_armed{0};
struct sigaction g_previous[NSIG];
bool g_installed[NSIG];

// A signal handler has C language linkage; static keeps it out of every symbol table.
extern "C" {
static void remove_temp_then_die(int sig, siginfo_t* info, void* context) {
  if (g_temp_armed.load()) ::unlink(g_temp_path);
  if (sig > 0 && sig < NSIG && g_installed[sig]) {
    const struct sigaction& prev = g_previous[sig];
    ::sigaction(sig, &prev, nullptr);
    if (prev.sa_flags & SA_SIGINFO) {
      if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler) {
      prev.sa_handler(sig);
    }
  }
  // The previous action returned, or was the default: the process dies by the signal.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  ::raise(sig);
}
}

// Installs the handler where it applies (kAlways, kWhenDefault, the real-time signals), restores
// the previous actions when destroyed.
class SignalGuard {
 public:
  SignalGuard() {
    for (int sig = 1; sig < NSIG; ++sig) g_installed[sig] = false;
    for (const int sig : kAlways) install(sig, false);
    for (const int sig : kWhenDefault) install(sig, true);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX && sig < NSIG; ++sig) install(sig, true);
  }
  ~SignalGuard() {
    g_temp_armed.store(0);
    for (int sig = 1; sig < NSIG; ++sig)
      if (g_installed[sig]) ::sigaction(sig, &g_previous[sig], nullptr);
  }
  // The temporary file the handler removes from now on (false when the path is too long to keep).
  bool arm(const std::string& temp) {
    g_temp_armed.store(0);
    if (temp.size() >= sizeof g_temp_path) return false;
    std::memcpy(g_temp_path, temp.c_str(), temp.size() + 1);
    g_temp_armed.store(1);
    return true;
  }
  void disarm() { g_temp_armed.store(0); }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  static void install(int sig, bool only_default) {
    if (sig <= 0 || sig >= NSIG || g_installed[sig]) return;
    struct sigaction& prev = g_previous[sig];
    if (::sigaction(sig, nullptr, &prev) != 0) return;
    const bool handled = (prev.sa_flags & SA_SIGINFO) != 0 || prev.sa_handler != SIG_DFL;
    if ((!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN) || (only_default && handled))
      return;
    struct sigaction now {};
    now.sa_sigaction = remove_temp_then_die;
    now.sa_flags = SA_SIGINFO;
    sigemptyset(&now.sa_mask);
    g_installed[sig] = true;
    if (::sigaction(sig, &now, nullptr) != 0) g_installed[sig] = false;
  }
};

// Creates a new file in dir named after base (O_EXCL: never an existing file); -1 and errno on
// failure. guard, when given, is armed with the name before the file can exist.
int create_temp(const std::string& dir, const std::string& base, std::string& temp,
                SignalGuard* guard) {
  static std::atomic<unsigned> counter{0};
  const std::string stem = "." + base.substr(0, 200) + ".tmp-" + std::to_string(::getpid()) + "-";
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = dir + "/" + stem + std::to_string(counter++);
    if (guard) guard->arm(temp);
    const int fd =
        ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

long default_write(int fd, const void* data, std::size_t n) {
  return static_cast<long>(::write(fd, data, n));
}

// Writes all n bytes; 0 on success, else the errno of the failure (a write of 0 bytes counts as
// a full disk).
int write_all(WriteFn write, int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const long r = write(fd, p, std::min<std::size_t>(n, std::size_t{1} << 30));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno ? errno : EIO;
    if (r == 0) return ENOSPC;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return 0;
}

}  // namespace

void check_output_path(const std::string& path) {
  struct stat st {};
  check_target(path, st);
  const std::string dir = parent_dir(path);
  const auto refuse = [&](const std::string& why) {
    throw Error(Errc::kUsage, "cannot write " + printable(path) + ": " + why);
  };
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0)
    refuse(errno == ENOENT ? "directory " + printable(dir) + " does not exist"
                           : "directory " + printable(dir) + ": " + errno_text(errno));
  if (!S_ISDIR(ds.st_mode)) refuse(printable(dir) + " is not a directory");
  std::string probe;
  const std::lock_guard<std::mutex> lock(g_write_mutex);
  SignalGuard guard;  // the probe is a temporary file too
  const int fd = create_temp(dir, std::filesystem::path(path).filename().string(), probe, &guard);
  if (fd < 0) refuse("cannot create a file in " + printable(dir) + ": " + errno_text(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

void write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces,
                           WriteFn write) {
  if (!write) write = default_write;
  struct stat st {};
  const bool exists = check_target(path, st);
  const std::string dir = parent_dir(path);
  const std::lock_guard<std::mutex> lock(g_write_mutex);
  SignalGuard guard;
  std::string temp;
  const int fd = create_temp(dir, std::filesystem::path(path).filename().string(), temp, &guard);
  if (fd < 0) {
    const int err = errno;
    struct stat ds {};
    throw Error(Errc::kInput,
                "cannot write " + printable(path) + ": " +
                    (err == ENOENT && ::stat(dir.c_str(), &ds) != 0
                         ? "directory " + printable(dir) + " does not exist"
                         : "cannot create a file in " + printable(dir) + ": " + errno_text(err)));
  }
  int err = 0;
  if (exists && ::fchmod(fd, st.st_mode & 07777) != 0) err = errno;
  for (const std::string_view& piece : pieces) {
    if (err) break;
    err = write_all(write, fd, piece.data(), piece.size());
  }
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(temp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(temp.c_str());
    throw Error(Errc::kInput, "cannot write " + printable(path) + ": " + errno_text(err) +
                                  (exists ? " (the file is unchanged)" : " (no file was written)"));
  }
  guard.disarm();
  // The rename itself is durable once the directory is synced (best effort: not every file system
  // can).
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace clreduce
