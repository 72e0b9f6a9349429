// dijkstra.cpp: single-source shortest paths with the next node chosen by clreduce's argmin on
// the device, as in the seeds' "Using Parallel Reduction to Optimize Dijkstra". The distances
// stay on the device: each step takes the argmin of a key array (a node's tentative distance,
// or the largest int64 once visited) through clreduce, then a small kernel of this program's
// own relaxes the chosen node's arcs (CSR arrays on the device). A binary-heap Dijkstra on the
// host checks every distance. Each step is O(N) work, so O(N^2) overall: for small graphs.
//
// Exit codes: 0 distances verified, 1 device and host distances differ, 2 bad input or usage,
// 3 OpenCL or clreduce error (no device, kernels not found, a build failed).
#include <clreduce/clreduce.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
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
    "'p sp N M', then M arcs 'a U V W' with 1-based nodes and integer weights W >= 0).\n"
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
    "2 bad input or usage, 3 OpenCL or clreduce error.\n";

// A problem with the command line or the graph file: exit 2.
struct InputError {
  std::string what;
};

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

// Reads a DIMACS shortest-path graph. Every problem names the file and line.
Graph read_dimacs(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError{path + ": cannot open"};
  Graph g;
  bool have_p = false;
  std::int64_t promised = 0, p_line = 0, line_no = 0;
  std::string line;
  const auto fail = [&](const std::string& what) {
    throw InputError{path + ":" + std::to_string(line_no) + ": " + what};
  };
  while (std::getline(f, line)) {
    ++line_no;
    std::istringstream in(line);
    std::vector<std::string> tok;
    for (std::string t; in >> t;) tok.push_back(t);
    if (tok.empty() || tok[0] == "c") continue;
    if (tok[0] == "p") {
      std::int64_t n = 0, m = 0;
      if (have_p) fail("a second 'p' line (the first is line " + std::to_string(p_line) + ")");
      if (tok.size() != 4 || tok[1] != "sp" || !parse_int(tok[2], &n) || !parse_int(tok[3], &m))
        fail("expected 'p sp N M', got '" + line + "'");
      if (n < 1 || n > std::numeric_limits<std::int32_t>::max() || m < 0)
        fail("'p sp N M' needs 1 <= N <= 2^31-1 nodes and M >= 0 arcs, got '" + line + "'");
      have_p = true;
      p_line = line_no;
      promised = m;
      g.n = static_cast<std::int32_t>(n);
      g.arcs.reserve(static_cast<std::size_t>(std::min<std::int64_t>(m, 1 << 24)));
    } else if (tok[0] == "a") {
      if (!have_p) fail("an arc before the 'p sp N M' line");
      std::int64_t u = 0, v = 0, w = 0;
      if (tok.size() != 4 || !parse_int(tok[1], &u) || !parse_int(tok[2], &v) ||
          !parse_int(tok[3], &w))
        fail("expected 'a U V W' with integers U, V, W, got '" + line + "'");
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
      fail("expected a 'c', 'p sp N M' or 'a U V W' line, got '" + line + "'");
    }
  }
  if (!have_p) {
    ++line_no;
    fail("end of file with no 'p sp N M' line");
  }
  if (static_cast<std::int64_t>(g.arcs.size()) != promised) {
    line_no = p_line;
    fail("'p sp' promises " + std::to_string(promised) + " arcs, the file has " +
         std::to_string(g.arcs.size()));
  }
  return g;
}

// a + b for b >= 0, saturating at kInf (a path that long counts as none).
std::int64_t add_sat(std::int64_t a, std::int64_t b) { return b > kInf - a ? kInf : a + b; }

// The textbook check: a binary heap with lazy deletion over adjacency lists of the raw arcs.
std::vector<std::int64_t> host_dijkstra(const Graph& g, std::int32_t source) {
  std::vector<std::vector<std::pair<std::int32_t, std::int64_t>>> adj(
      static_cast<std::size_t>(g.n));
  for (const Arc& a : g.arcs) adj[static_cast<std::size_t>(a.u)].emplace_back(a.v, a.w);
  std::vector<std::int64_t> dist(static_cast<std::size_t>(g.n), kInf);
  using Item = std::pair<std::int64_t, std::int32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  dist[static_cast<std::size_t>(source)] = 0;
  heap.push({0, source});
  while (!heap.empty()) {
    const auto [d, u] = heap.top();
    heap.pop();
    if (d != dist[static_cast<std::size_t>(u)]) continue;
    for (const auto& [v, w] : adj[static_cast<std::size_t>(u)]) {
      const std::int64_t nd = add_sat(d, w);
      if (nd < dist[static_cast<std::size_t>(v)]) {
        dist[static_cast<std::size_t>(v)] = nd;
        heap.push({nd, v});
      }
    }
  }
  return dist;
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

// Marks node u visited (its key becomes the largest long, so argmin never picks it again) and
// lowers each out-neighbour's distance to d + w where that is shorter. A visited neighbour
// already has a distance <= d, so it is never lowered.
const char* kRelaxSource = R"CL(
__kernel void relax(__global const long* row, __global const int* col, __global const long* wt,
                    __global long* dist, __global long* key, int u, long d) {
  const long begin = row[u], end = row[u + 1];
  if (get_global_id(0) == 0) key[u] = LONG_MAX;
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

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

template <class T> cl::Buffer upload(clreduce::Device& dev, const std::vector<T>& v) {
  const std::size_t bytes = std::max<std::size_t>(v.size() * sizeof(T), sizeof(T));
  cl::Buffer b(dev.context(), CL_MEM_READ_WRITE, bytes);
  if (!v.empty()) dev.queue().enqueueWriteBuffer(b, CL_FALSE, 0, v.size() * sizeof(T), v.data());
  return b;
}

struct DeviceRun {
  std::vector<std::int64_t> dist;
  std::size_t steps = 0;
  double first_call_ms = 0.0;     // the first argmin, with clreduce's program builds
  double wall_ms = 0.0;           // every step, from the first to the distances read back
  double argmin_kernel_ms = 0.0;  // the argmin kernels' time over all steps
  std::string plan;
};

DeviceRun device_dijkstra(clreduce::Device& dev, const Csr& csr, std::int32_t n,
                          std::int32_t source, const std::string& variant) {
  const auto un = static_cast<std::size_t>(n);
  std::vector<std::int64_t> init(un, kInf);
  init[static_cast<std::size_t>(source)] = 0;
  cl::Buffer row = upload(dev, csr.row), col = upload(dev, csr.col), wt = upload(dev, csr.wt);
  cl::Buffer dist = upload(dev, init), key = upload(dev, init);

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

  clreduce::Options opts;
  opts.variant = variant;
  DeviceRun run;
  // One untimed argmin first: clreduce builds its programs once per device.
  double t0 = now_ms();
  run.plan = dev.reduce(clreduce::Op::kArgMin, clreduce::DType::kInt64, key, un, opts).plan;
  run.first_call_ms = now_ms() - t0;

  t0 = now_ms();
  for (;;) {
    const clreduce::Result r =
        dev.reduce(clreduce::Op::kArgMin, clreduce::DType::kInt64, key, un, opts);
    if (r.value.i == kInf) break;  // every node left is unreachable (or none is left)
    const auto u = static_cast<std::int32_t>(r.index());
    run.argmin_kernel_ms += r.kernel_ms;
    const std::int64_t degree =
        csr.row[static_cast<std::size_t>(u) + 1] - csr.row[static_cast<std::size_t>(u)];
    const std::size_t items = std::min<std::size_t>(
        (static_cast<std::size_t>(std::max<std::int64_t>(degree, 1)) + 63) / 64 * 64,
        std::size_t{1} << 16);
    relax.setArg(5, static_cast<cl_int>(u));
    relax.setArg(6, static_cast<cl_long>(r.value.i));
    dev.queue().enqueueNDRangeKernel(relax, cl::NullRange, cl::NDRange(items), cl::NullRange);
    ++run.steps;
  }
  run.dist.resize(un);
  dev.queue().enqueueReadBuffer(dist, CL_TRUE, 0, un * sizeof(std::int64_t), run.dist.data());
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
      if (i + 1 >= argc) throw InputError{a + " needs a value (see --help)"};
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--source") {
      const std::string s = value();
      if (!parse_int(s, &source)) throw InputError{"--source needs a node number, not '" + s + "'"};
      have_source = true;
    } else if (a == "--device") {
      device = value();
    } else if (a == "--output") {
      output = value();
    } else if (a == "--variant") {
      variant = value();
    } else if (!a.empty() && a[0] == '-') {
      throw InputError{"unknown option " + a + " (see --help)"};
    } else if (graph_path.empty()) {
      graph_path = a;
    } else {
      throw InputError{"one graph file only, got " + graph_path + " and " + a};
    }
  }
  if (graph_path.empty()) throw InputError{"no graph file given (see --help)"};
  if (!have_source) throw InputError{"--source S is required (see --help)"};

  const Graph g = read_dimacs(graph_path);
  if (source < 1 || source > g.n)
    throw InputError{"--source " + std::to_string(source) + " is outside 1.." +
                     std::to_string(g.n) + " of " + graph_path};
  const auto src = static_cast<std::int32_t>(source - 1);
  const Csr csr = to_csr(g);

  clreduce::Device dev(device);
  std::cout << "graph " << graph_path << ": " << g.n << " nodes, " << g.arcs.size() << " arcs ("
            << csr.col.size() << " after dropping self-loops and merging parallel arcs), source "
            << source << "\n";
  std::cout << "device " << dev.summary().index << ": " << dev.summary().name << " ("
            << dev.summary().platform << "), kernels " << dev.kernel_dir() << "\n";

  const DeviceRun d = device_dijkstra(dev, csr, g.n, src, variant);
  double t0 = now_ms();
  const std::vector<std::int64_t> host = host_dijkstra(g, src);
  const double host_ms = now_ms() - t0;

  std::size_t reached = 0, differ = 0, first = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    reached += host[i] != kInf;
    if (host[i] != d.dist[i] && differ++ == 0) first = i;
  }
  std::cout << "device dijkstra: " << d.wall_ms << " ms, " << d.steps << " steps (argmin kernels "
            << d.argmin_kernel_ms << " ms; first argmin with program builds " << d.first_call_ms
            << " ms; argmin plan " << d.plan << ")\n";
  std::cout << "host binary-heap dijkstra: " << host_ms << " ms\n";
  if (differ) {
    std::cerr << "dijkstra: distances differ at " << differ << " nodes; first node " << first + 1
              << ": device " << d.dist[first] << ", host " << host[first] << "\n";
    return 1;
  }
  std::cout << "distances: verified (" << reached << " of " << g.n << " nodes reachable)\n";
  if (!output.empty()) {
    std::vector<std::int64_t> out(host.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = d.dist[i] == kInf ? -1 : d.dist[i];
    clreduce::save_npy(output, clreduce::DType::kInt64, out.data(), out.size());
    std::cout << "wrote " << output << "\n";
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
