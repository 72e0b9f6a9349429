// dijkstra.cpp: single-source shortest paths with the next node chosen by clreduce's argmin on
// the device, as in the seeds' "Using Parallel Reduction to Optimize Dijkstra". The distances
// stay on the device: each step takes the argmin of a key array (a node's tentative distance,
// or the largest int64 once visited) through clreduce, then a small kernel of this program's
// own relaxes the chosen node's arcs (CSR arrays on the device). A binary-heap Dijkstra on the
// host checks every distance. Each step is O(N) work, so O(N^2) overall: for small graphs.
//
// Exit codes: 0 distances verified, 1 device and host distances differ, 2 bad input or usage,
// 3 OpenCL or clreduce error (no device, kernels not found, a build failed), 5 the graph needs
// more memory than the host or the device has.
#include <clreduce/clreduce.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <new>
#include <queue>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max();

const char* kUsage =
    "usage: dijkstra GRAPH.gr --source S [--device D] [--output DIST.npy] [--variant V]\n"
    "\n"
    "Single-source shortest paths on a DIMACS .gr graph (9th DIMACS challenge: 'c' comments,\n"
    "'p sp N M', then M arcs 'a U V W' with 1-based nodes and integer weights W >= 0), a\n"
    "regular file. Distances are int64: (N-1) x the largest weight, or the sum of the weights,\n"
    "must stay below 2^63-1.\n"
    "The distances live on the OpenCL device; each step picks the unvisited node of least\n"
    "distance by clreduce's argmin on the device and relaxes its arcs with a small kernel.\n"
    "A binary-heap Dijkstra on the host checks every distance; both are timed.\n"
    "Each step scans all N nodes, so the whole run is O(N^2): meant for small graphs\n"
    "(thousands of nodes), not road networks.\n"
    "\n"
    "  --source S         the source node, 1..N\n"
    "  --device D         device index or name substring (default 0; see clreduce --list-devices)\n"
    "  --output DIST.npy  write the distances (int64, -1 for unreachable nodes; node i at i-1)\n"
    "  --variant V        clreduce's reduction variant for the argmin (default fast)\n"
    "\n"
    "Exit codes: 0 distances verified, 1 device and host distances differ,\n"
    "2 bad input or usage, 3 OpenCL or clreduce error, 5 not enough memory for the graph.\n";

// A problem with the command line or the graph file: exit 2.
struct InputError {
  std::string what;
};

// A graph larger than the host or the device can hold: exit 5.
struct MemoryError {
  std::string what;
};

// Text from the command line or the graph file, safe to put in a one-line message: every byte
// outside printable ASCII (control characters, escape sequences, non-ASCII bytes) as \xNN, and
// backslash as \\; at most 200 bytes shown.
std::string printable(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < 200; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02X", static_cast<unsigned>(c));
      out += b;
    }
  }
  return s.size() > 200 ? out + "..." : out;
}

struct Arc {
  std::int32_t u, v;  // 0-based
  std::int64_t w;
};

struct Graph {
  std::int32_t n = 0;
  std::vector<Arc> arcs;
};

// Parses a whole decimal integer token; false on anything else or overflow.
bool parse_int(const std::string& s, std::int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0') return false;
  *out = v;
  return true;
}

// The graph file, line by line. Only a regular file is read: a FIFO would block the open (or the
// reads) forever and a device such as /dev/zero never ends, so the path is checked before the open
// (opened without blocking, and checked again on the open file, as the path may have changed).
// A NUL byte means a binary file, and no DIMACS line is longer than kMaxLine bytes: both are
// refused at once rather than read to the end.
class GraphFile {
 public:
  static constexpr std::size_t kMaxLine = 4096;

  explicit GraphFile(const std::string& path) : name_(printable(path)) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw InputError{name_ + ": cannot open: " + why(errno)};
    check_regular(st);
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) throw InputError{name_ + ": cannot open: " + why(errno)};
    const int flags = ::fcntl(fd_, F_GETFL);
    if (::fstat(fd_, &st) != 0 || flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      const int err = errno;
      ::close(fd_);
      throw InputError{name_ + ": cannot open: " + why(err)};
    }
    try {
      check_regular(st);
    } catch (...) {
      ::close(fd_);
      throw;
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~GraphFile() { ::close(fd_); }
  GraphFile(const GraphFile&) = delete;
  GraphFile& operator=(const GraphFile&) = delete;

  const std::string& name() const { return name_; }
  std::uint64_t size() const { return size_; }
  std::int64_t line_no() const { return line_no_; }

  // The next line, without its newline; false at the end of the file.
  bool next(std::string& line) {
    line.clear();
    for (;;) {
      if (at_ == end_ && !fill()) {
        if (line.empty()) return false;
        ++line_no_;  // a last line without a newline
        return true;
      }
      const char* p = buf_ + at_;
      const std::size_t left = end_ - at_;
      const void* nl = std::memchr(p, '\n', left);
      const std::size_t take =
          nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - p) : left;
      if (std::memchr(p, '\0', take))
        throw InputError{name_ + ":" + std::to_string(line_no_ + 1) +
                         ": a NUL byte: a binary file, not a DIMACS graph"};
      if (line.size() + take > kMaxLine)
        throw InputError{name_ + ":" + std::to_string(line_no_ + 1) + ": a line longer than " +
                         std::to_string(kMaxLine) + " bytes: not a DIMACS graph"};
      line.append(p, take);
      at_ += take;
      if (nl) {
        ++at_;
        ++line_no_;
        return true;
      }
    }
  }

 private:
  static std::string why(int err) { return std::strerror(err); }

  void check_regular(const struct stat& st) const {
    if (S_ISDIR(st.st_mode)) throw InputError{name_ + ": a directory, not a graph file"};
    if (!S_ISREG(st.st_mode))
      throw InputError{name_ + ": not a regular file (" +
                       (S_ISFIFO(st.st_mode)   ? "a FIFO"
                        : S_ISCHR(st.st_mode)  ? "a character device"
                        : S_ISBLK(st.st_mode)  ? "a block device"
                        : S_ISSOCK(st.st_mode) ? "a socket"
                                               : "not a file") +
                       std::string("); give a .gr file")};
  }

  bool fill() {
    for (;;) {
      const ssize_t r = ::read(fd_, buf_, sizeof buf_);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0)
        throw InputError{name_ + ":" + std::to_string(line_no_ + 1) +
                         ": read error: " + why(errno)};
      at_ = 0;
      end_ = static_cast<std::size_t>(r);
      return r > 0;
    }
  }

  std::string name_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::int64_t line_no_ = 0;
  char buf_[1 << 16];
  std::size_t at_ = 0, end_ = 0;
};

// Reads a DIMACS shortest-path graph. Every problem names the file and line; text from the file
// is shown escaped.
Graph read_dimacs(const std::string& path) {
  GraphFile f(path);
  Graph g;
  bool have_p = false;
  std::int64_t promised = 0, p_line = 0, line_no = 0;
  std::string line;
  const auto fail = [&](const std::string& what) {
    throw InputError{f.name() + ":" + std::to_string(line_no) + ": " + what};
  };
  const auto quoted = [](const std::string& text) { return "'" + printable(text) + "'"; };
  while (f.next(line)) {
    line_no = f.line_no();
    std::istringstream in(line);
    std::vector<std::string> tok;
    for (std::string t; in >> t;) tok.push_back(t);
    if (tok.empty() || tok[0] == "c") continue;
    if (tok[0] == "p") {
      std::int64_t n = 0, m = 0;
      if (have_p) fail("a second 'p' line (the first is line " + std::to_string(p_line) + ")");
      if (tok.size() != 4 || tok[1] != "sp" || !parse_int(tok[2], &n) || !parse_int(tok[3], &m))
        fail("expected 'p sp N M', got " + quoted(line));
      if (n < 1 || n > std::numeric_limits<std::int32_t>::max() || m < 0)
        fail("'p sp N M' needs 1 <= N <= 2^31-1 nodes and M >= 0 arcs, got " + quoted(line));
      // Each arc line takes at least 8 bytes ("a 1 2 3\n"): a larger M cannot be in the file.
      if (static_cast<std::uint64_t>(m) > f.size() / 8)
        fail("'p sp' promises " + std::to_string(m) + " arcs, more than a file of " +
             std::to_string(f.size()) + " bytes can hold");
      have_p = true;
      p_line = line_no;
      promised = m;
      g.n = static_cast<std::int32_t>(n);
      g.arcs.reserve(static_cast<std::size_t>(m));
    } else if (tok[0] == "a") {
      if (!have_p) fail("an arc before the 'p sp N M' line");
      std::int64_t u = 0, v = 0, w = 0;
      if (tok.size() != 4 || !parse_int(tok[1], &u) || !parse_int(tok[2], &v) ||
          !parse_int(tok[3], &w))
        fail("expected 'a U V W' with integers U, V, W, got " + quoted(line));
      for (std::int64_t x : {u, v})
        if (x < 1 || x > g.n)
          fail("arc " + tok[1] + " -> " + tok[2] + " names node " + std::to_string(x) +
               ", outside 1.." + std::to_string(g.n) + " of 'p sp " + std::to_string(g.n) + " " +
               std::to_string(promised) + "'");
      if (w < 0)
        fail("arc " + tok[1] + " -> " + tok[2] + " has negative weight " + tok[3] +
             " (Dijkstra needs W >= 0)");
      g.arcs.push_back({static_cast<std::int32_t>(u - 1), static_cast<std::int32_t>(v - 1), w});
    } else {
      fail("expected a 'c', 'p sp N M' or 'a U V W' line, got " + quoted(line));
    }
  }
  if (f.line_no() == 0) throw InputError{f.name() + ": an empty file (no 'p sp N M' line)"};
  if (!have_p) {
    line_no = f.line_no() + 1;
    fail("end of file with no 'p sp N M' line");
  }
  if (static_cast<std::int64_t>(g.arcs.size()) != promised) {
    line_no = p_line;
    fail("'p sp' promises " + std::to_string(promised) + " arcs, the file has " +
         std::to_string(g.arcs.size()));
  }
  return g;
}

// a + b for b >= 0, saturating at kInf.
std::int64_t add_sat(std::int64_t a, std::int64_t b) { return b > kInf - a ? kInf : a + b; }

// The textbook check: a binary heap with lazy deletion over adjacency lists of the raw arcs.
// reached says which nodes a path from the source reaches, whatever its length: a path of
// length kInf or more (which read_dimacs's caller refuses to run) is then a distance of kInf at
// a reached node, which no device distance matches, rather than "unreachable".
struct HostDistances {
  std::vector<std::int64_t> dist;  // kInf where unreached
  std::vector<bool> reached;
};

HostDistances host_dijkstra(const Graph& g, std::int32_t source) {
  std::vector<std::vector<std::pair<std::int32_t, std::int64_t>>> adj(
      static_cast<std::size_t>(g.n));
  for (const Arc& a : g.arcs) adj[static_cast<std::size_t>(a.u)].emplace_back(a.v, a.w);
  HostDistances h;
  h.dist.assign(static_cast<std::size_t>(g.n), kInf);
  h.reached.assign(static_cast<std::size_t>(g.n), false);
  using Item = std::pair<std::int64_t, std::int32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  h.dist[static_cast<std::size_t>(source)] = 0;
  h.reached[static_cast<std::size_t>(source)] = true;
  heap.push({0, source});
  while (!heap.empty()) {
    const auto [d, u] = heap.top();
    heap.pop();
    if (d != h.dist[static_cast<std::size_t>(u)]) continue;
    for (const auto& [v, w] : adj[static_cast<std::size_t>(u)]) {
      const auto at = static_cast<std::size_t>(v);
      const std::int64_t nd = add_sat(d, w);
      if (!h.reached[at] || nd < h.dist[at]) {
        h.reached[at] = true;
        h.dist[at] = nd;
        heap.push({nd, v});
      }
    }
  }
  return h;
}

// Arcs by tail, as the device reads them: row[u]..row[u+1] index col and wt. Self-loops never
// shorten a path and are dropped; parallel arcs keep the lightest, so that each head appears at
// most once per row and the relax kernel's work-items never write the same node.
struct Csr {
  std::vector<std::int64_t> row;
  std::vector<std::int32_t> col;
  std::vector<std::int64_t> wt;
};

Csr to_csr(const Graph& g) {
  std::vector<Arc> arcs;
  for (const Arc& a : g.arcs)
    if (a.u != a.v) arcs.push_back(a);
  std::sort(arcs.begin(), arcs.end(), [](const Arc& a, const Arc& b) {
    return a.u != b.u ? a.u < b.u : a.v != b.v ? a.v < b.v : a.w < b.w;
  });
  arcs.erase(std::unique(arcs.begin(), arcs.end(),
                         [](const Arc& a, const Arc& b) { return a.u == b.u && a.v == b.v; }),
             arcs.end());
  Csr c;
  c.row.assign(static_cast<std::size_t>(g.n) + 1, 0);
  for (const Arc& a : arcs) {
    ++c.row[static_cast<std::size_t>(a.u) + 1];
    c.col.push_back(a.v);
    c.wt.push_back(a.w);
  }
  for (std::size_t i = 1; i < c.row.size(); ++i) c.row[i] += c.row[i - 1];
  return c;
}

// One step after an argmin: `best` holds the argmin's result as clreduce writes it (the least
// key, a long, then its node's index, a long). A least key of LONG_MAX means every node left is
// unreachable (or none is left): the step does nothing. Else it counts the step, marks node u
// visited (its key becomes the largest long, so argmin never picks it again) and lowers each
// out-neighbour's distance to d + w where that is shorter. A visited neighbour already has a
// distance <= d, so it is never lowered.
const char* kRelaxSource = R"CL(
__kernel void relax(__global const long* row, __global const int* col, __global const long* wt,
                    __global long* dist, __global long* key, __global const long* best,
                    __global long* steps) {
  const long d = best[0];
  if (d == LONG_MAX) return;
  const int u = (int)best[1];
  const long begin = row[u], end = row[u + 1];
  if (get_global_id(0) == 0) {
    key[u] = LONG_MAX;
    ++*steps;
  }
  for (long e = begin + (long)get_global_id(0); e < end; e += (long)get_global_size(0)) {
    const int v = col[e];
    const long w = wt[e];
    const long nd = w > LONG_MAX - d ? LONG_MAX : d + w;
    if (nd < dist[v]) {
      dist[v] = nd;
      key[v] = nd;
    }
  }
}
)CL";

// a * b, saturating at UINT64_MAX.
std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b) {
  return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}
std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) {
  return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

std::string mib(std::uint64_t bytes) {
  return std::to_string(bytes / 1048576 + (bytes % 1048576 != 0)) + " MiB";
}

// The memory this process can still allocate, as far as can be told: the machine's available
// memory and free swap, and no more than the address-space limit (ulimit -v) leaves.
std::uint64_t host_memory_left() {
  std::uint64_t left = UINT64_MAX;
  std::ifstream meminfo("/proc/meminfo");
  std::uint64_t avail = 0, swap = 0;
  bool found = false;
  for (std::string key; meminfo >> key;) {
    std::uint64_t kb = 0;
    meminfo >> kb;
    if (key == "MemAvailable:") found = true, avail = kb << 10;
    if (key == "SwapFree:") swap = kb << 10;
    meminfo.ignore(256, '\n');
  }
  if (found) left = avail + swap;
  struct rlimit as {};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::uint64_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const std::uint64_t mapped = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const auto limit = static_cast<std::uint64_t>(as.rlim_cur);
    left = std::min(left, limit > mapped ? limit - mapped : 0);
  }
  return left;
}

// Refuses (exit 5) a graph whose arrays cannot fit, before any of them is allocated: on the host
// the CSR arrays, the host check's adjacency lists, heap and distances (about 64 bytes a node and
// 92 an arc, counting vectors' growth); on the device the CSR arrays, distances and keys (24 bytes
// a node, 12 an arc), each buffer within the device's largest allocation; and on a CPU device
// those buffers are host memory too.
void check_memory(const std::string& name, std::int32_t n, std::size_t m,
                  const clreduce::DeviceSummary& dev) {
  const auto nodes = static_cast<std::uint64_t>(n);
  const std::uint64_t device_bytes = add_sat(mul_sat(nodes, 24) + 8, mul_sat(m, 12));
  std::uint64_t host_bytes = add_sat(mul_sat(nodes, 64), mul_sat(m, 92));
  if (dev.type == "CPU") host_bytes = add_sat(host_bytes, device_bytes);
  const std::string graph =
      name + ": " + std::to_string(n) + " nodes and " + std::to_string(m) + " arcs need about ";
  const std::uint64_t largest = std::max(mul_sat(nodes + 1, 8), mul_sat(m, 8));
  if (largest > dev.max_alloc)
    throw MemoryError{graph + mib(largest) + " in one device buffer; " + dev.name +
                      "'s largest allocation is " + mib(dev.max_alloc)};
  if (device_bytes > dev.global_mem)
    throw MemoryError{graph + mib(device_bytes) + " of device memory; " + dev.name + " has " +
                      mib(dev.global_mem)};
  const std::uint64_t left = host_memory_left();
  if (host_bytes > left)
    throw MemoryError{graph + mib(host_bytes) + " of host memory" +
                      (dev.type == "CPU" ? " (with the CPU device's buffers)" : "") + "; " +
                      mib(left) + " is available"};
}

// Refuses (exit 2) weights whose shortest paths could reach kInf: the argmin's keys and the
// distances are int64, and kInf marks a node unreached. A shortest path has at most n - 1 arcs
// and uses each arc once, so it is no longer than (n - 1) x the largest weight, nor than the sum
// of the weights (of the arcs the run uses: no self-loops, the lightest of parallel arcs).
void check_weights(const std::string& name, const Csr& c, std::int32_t n) {
  std::uint64_t largest = 0, sum = 0;
  for (std::int64_t w : c.wt) {
    largest = std::max(largest, static_cast<std::uint64_t>(w));
    sum = add_sat(sum, static_cast<std::uint64_t>(w));
  }
  const std::uint64_t bound = std::min(mul_sat(static_cast<std::uint64_t>(n) - 1, largest), sum);
  if (bound >= static_cast<std::uint64_t>(kInf))
    throw InputError{name + ": weights too large: a shortest path could reach 2^63-1, past int64 " +
                     "distances (largest weight " + std::to_string(largest) + ", sum " +
                     (sum == UINT64_MAX ? std::string("over 2^64") : std::to_string(sum)) +
                     "; (N-1) x the largest weight or the sum of the weights must stay below " +
                     "2^63-1)"};
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

template <class T> cl::Buffer upload(clreduce::Device& dev, const std::vector<T>& v) {
  const std::size_t bytes = std::max<std::size_t>(v.size() * sizeof(T), sizeof(T));
  cl::Buffer b(dev.context(), CL_MEM_READ_WRITE, bytes);
  if (!v.empty()) dev.queue().enqueueWriteBuffer(b, CL_TRUE, 0, v.size() * sizeof(T), v.data());
  return b;
}

struct DeviceRun {
  std::vector<std::int64_t> dist;
  std::int64_t steps = 0;
  double plan_ms = 0.0;  // making the argmin's plan: clreduce's program builds and scratch
  double wall_ms = 0.0;  // every step, from the first to the distances read back
  std::size_t reads = 0;  // times the host read the last argmin back to see if it was done
  std::string plan;
};

// The steps go in batches with no wait between them: each argmin (clreduce's Reduction, which
// only enqueues) writes its result into the `best` buffer, and the relax kernel after it reads
// the node from there. After a batch the host reads the last argmin's key back once, to learn
// whether every reachable node is done; batches double from 1 up to 256 steps, so a graph
// of N reachable nodes takes about log2(N) + N / 256 reads instead of N.
DeviceRun device_dijkstra(clreduce::Device& dev, const Csr& csr, std::int32_t n,
                          std::int32_t source, const std::string& variant) {
  const auto un = static_cast<std::size_t>(n);
  std::vector<std::int64_t> init(un, kInf);
  init[static_cast<std::size_t>(source)] = 0;
  cl::Buffer row = upload(dev, csr.row), col = upload(dev, csr.col), wt = upload(dev, csr.wt);
  cl::Buffer dist = upload(dev, init), key = upload(dev, init);
  cl::Buffer best = upload(dev, std::vector<std::int64_t>{0, 0});
  cl::Buffer steps = upload(dev, std::vector<std::int64_t>{0});
  dev.queue().finish();

  cl::Program program(dev.context(), kRelaxSource);
  try {
    program.build(std::vector<cl::Device>{dev.device()});
  } catch (const cl::Error&) {
    throw std::runtime_error("relax kernel failed to build:\n" +
                             program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(dev.device()));
  }
  cl::Kernel relax(program, "relax");
  relax.setArg(0, row);
  relax.setArg(1, col);
  relax.setArg(2, wt);
  relax.setArg(3, dist);
  relax.setArg(4, key);
  relax.setArg(5, best);
  relax.setArg(6, steps);

  clreduce::PlanOptions opts;
  opts.variant = variant;
  DeviceRun run;
  double t0 = now_ms();
  clreduce::Reduction argmin(dev, clreduce::Op::kArgMin, clreduce::DType::kInt64, un, opts);
  run.plan_ms = now_ms() - t0;
  run.plan = argmin.plan();

  t0 = now_ms();
  cl::Event last;
  std::size_t batch = 1;
  for (std::size_t done = 0; done < un; done += batch, batch = std::min<std::size_t>(2 * batch, 256)) {
    for (std::size_t k = 0; k < batch && done + k < un; ++k) {
      std::vector<cl::Event> after;
      if (last()) after.push_back(last);
      const cl::Event picked = argmin.enqueue(key, un, best, 0, after);
      std::vector<cl::Event> after_pick = {picked};
      dev.queue().enqueueNDRangeKernel(relax, cl::NullRange, cl::NDRange(256), cl::NullRange,
                                       &after_pick, &last);
    }
    std::int64_t least = 0;
    std::vector<cl::Event> after = {last};
    dev.queue().enqueueReadBuffer(best, CL_TRUE, 0, sizeof least, &least, &after);
    ++run.reads;
    if (least == kInf) break;  // every node left is unreachable (or none is left)
  }
  run.dist.resize(un);
  std::vector<cl::Event> after = {last};
  dev.queue().enqueueReadBuffer(dist, CL_TRUE, 0, un * sizeof(std::int64_t), run.dist.data(),
                                &after);
  dev.queue().enqueueReadBuffer(steps, CL_TRUE, 0, sizeof run.steps, &run.steps);
  run.wall_ms = now_ms() - t0;
  return run;
}

int run(int argc, char** argv) {
  std::string graph_path, device = "0", output, variant;
  std::int64_t source = 0;
  bool have_source = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError{printable(a) + " needs a value (see --help)"};
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--source") {
      const std::string s = value();
      if (!parse_int(s, &source))
        throw InputError{"--source needs a node number, not '" + printable(s) + "'"};
      have_source = true;
    } else if (a == "--device") {
      device = value();
    } else if (a == "--output") {
      output = value();
    } else if (a == "--variant") {
      variant = value();
    } else if (!a.empty() && a[0] == '-') {
      throw InputError{"unknown option " + printable(a) + " (see --help)"};
    } else if (graph_path.empty()) {
      graph_path = a;
    } else {
      throw InputError{"one graph file only, got " + printable(graph_path) + " and " +
                       printable(a)};
    }
  }
  if (graph_path.empty()) throw InputError{"no graph file given (see --help)"};
  if (!have_source) throw InputError{"--source S is required (see --help)"};

  const Graph g = read_dimacs(graph_path);
  const std::string name = printable(graph_path);
  if (source < 1 || source > g.n)
    throw InputError{"--source " + std::to_string(source) + " is outside 1.." +
                     std::to_string(g.n) + " of " + name};
  const auto src = static_cast<std::int32_t>(source - 1);

  clreduce::Device dev = clreduce::Device::from_environment(device);  // as the clreduce command
  check_memory(name, g.n, g.arcs.size(), dev.summary());
  const Csr csr = to_csr(g);
  check_weights(name, csr, g.n);
  std::cout << "graph " << name << ": " << g.n << " nodes, " << g.arcs.size() << " arcs ("
            << csr.col.size() << " after dropping self-loops and merging parallel arcs), source "
            << source << "\n";
  std::cout << "device " << dev.summary().index << ": " << dev.summary().name << " ("
            << dev.summary().platform << "), kernels " << dev.kernel_dir() << "\n";

  const DeviceRun d = device_dijkstra(dev, csr, g.n, src, variant);
  double t0 = now_ms();
  const HostDistances host = host_dijkstra(g, src);
  const double host_ms = now_ms() - t0;

  // A node is verified when both say it is unreached, or both give it the same distance below
  // kInf: a reached node at kInf (a path too long for int64) never verifies.
  std::size_t reached = 0, differ = 0, first = 0;
  const auto words = [](std::int64_t x, bool is_reached) {
    return !is_reached ? std::string("unreached")
           : x == kInf ? std::string("reached at 2^63-1 or more, past int64")
                       : std::to_string(x);
  };
  for (std::size_t i = 0; i < host.dist.size(); ++i) {
    reached += host.reached[i];
    const bool same =
        host.reached[i] ? host.dist[i] != kInf && host.dist[i] == d.dist[i] : d.dist[i] == kInf;
    if (!same && differ++ == 0) first = i;
  }
  std::cout << "device dijkstra: " << d.wall_ms << " ms, " << d.steps << " steps, " << d.reads
            << " reads of the argmin (its plan made in " << d.plan_ms << " ms with program builds; "
            << d.plan << ")\n";
  std::cout << "host binary-heap dijkstra: " << host_ms << " ms\n";
  if (differ) {
    std::cerr << "dijkstra: distances differ at " << differ << " nodes; first node " << first + 1
              << ": device " << words(d.dist[first], d.dist[first] != kInf) << ", host "
              << words(host.dist[first], host.reached[first]) << "\n";
    return 1;
  }
  std::cout << "distances: verified (" << reached << " of " << g.n << " nodes reachable)\n";
  if (!output.empty()) {
    std::vector<std::int64_t> out(host.dist.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = d.dist[i] == kInf ? -1 : d.dist[i];
    clreduce::save_npy(output, clreduce::DType::kInt64, out.data(), out.size());
    std::cout << "wrote " << printable(output) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::cerr << "dijkstra: " << e.what << "\n";
    return 2;
  } catch (const MemoryError& e) {
    std::cerr << "dijkstra: " << e.what << "\n";
    return 5;
  } catch (const std::bad_alloc&) {
    std::cerr << "dijkstra: out of host memory\n";
    return 5;
  } catch (const clreduce::Error& e) {
    std::cerr << "dijkstra: " << e.what() << "\n";
    const clreduce::Errc c = e.category();
    return c == clreduce::Errc::kUsage || c == clreduce::Errc::kInput ? 2 : 3;
  } catch (const cl::Error& e) {
    std::cerr << "dijkstra: OpenCL error: " << e.what() << ": " << clreduce::cl_error_name(e.err())
              << " (" << e.err() << ")\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "dijkstra: " << e.what() << "\n";
    return 3;
  }
}
