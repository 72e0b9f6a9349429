// cub_peer.cu: the CUB baseline for clreduce's benchmark. Generates clreduce's --seed/--size data,
// runs one cub::DeviceReduce / cub::DeviceSegmentedReduce / cub::DeviceScan call (or a
// device-to-device copy, the bandwidth ceiling), verifies it against a host loop and prints one
// JSON line in clreduce's format. Every op and element type of clreduce's benchmark: sum, prod,
// min, max, argmin, argmax, minmax, dot (two arrays), segmented sums over an --offsets file,
// inclusive and exclusive prefix sums (segmented with --segment-length, as clreduce's), copy;
// int32, int64, float, double.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/tuple.h>
#include <cub/cub.cuh>
#include <cub/version.cuh>
#include <cuda/std/functional>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

// Exit codes, as clreduce's: 1 verification failed, 2 bad command line, 3 CUDA error.
constexpr int kExitVerify = 1;
constexpr int kExitUsage = 2;
constexpr int kExitCuda = 3;

// Prints one line for a failed CUDA call and exits 3.
void cuda_check(cudaError_t err, const char* what, int line) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "cub_peer: CUDA error at line %d: %s: %s (%s)\n", line, what,
               cudaGetErrorString(err), cudaGetErrorName(err));
  std::exit(kExitCuda);
}
#define CUDA_CHECK(call) cuda_check((call), #call, __LINE__)

// Prints one usage line and exits 2.
[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "cub_peer: %s (try --help)\n", msg.c_str());
  std::exit(kExitUsage);
}

const char kUsage[] =
    "usage: cub_peer --op OP --type TYPE --size N [--seed S] [--warmup W] [--repeat R]\n"
    "                [--acc int32|int64] [--segment-length L] [--offsets FILE.npy]\n"
    "  --op     sum, prod, min, max, argmin, argmax, minmax, dot, segsum, scan-inclusive,\n"
    "           scan-exclusive or copy\n"
    "  --type   int32, int64, float or double\n"
    "  --size   N, 2^K or NeK elements        --seed    data seed (default 1)\n"
    "  --warmup untimed runs (default 1)      --repeat  timed runs, medians reported (default 5)\n"
    "  --acc    accumulator and output type of int32 sum, prod and scans (default int64, as\n"
    "           NumPy)\n"
    "  --segment-length L  scans only: a segmented scan, a segment starting every L elements\n"
    "           (L >= 1, written as --size; clreduce's --segment-length)\n"
    "  --offsets FILE.npy  segsum only (and required there): S + 1 ascending int64 offsets from\n"
    "           0 to N, 1-D, as clreduce's --offsets; segment s is elements [off[s], off[s+1])\n"
    "Calls and accumulators (each as clreduce's for the same op and type):\n"
    "  sum        cub::DeviceReduce::Sum; int32 in int64 (or int32 with --acc int32), int64 in\n"
    "             int64 (integers wrap), float in float, double in double\n"
    "  prod       cub::DeviceReduce::TransformReduce (each element cast to the accumulator,\n"
    "             then multiplied; init 1): int32 in int64 (or int32 with --acc int32), int64\n"
    "             in int64 (integers wrap modulo their width, as clreduce's), float in float,\n"
    "             double in double\n"
    "  min, max   cub::DeviceReduce::Min / Max, in the element type\n"
    "  argmin, argmax  cub::DeviceReduce::ArgMin / ArgMax: the extreme and its int64 index; on\n"
    "             ties the lowest index\n"
    "  minmax     the least and the greatest element with their first indices in one pass:\n"
    "             cub::DeviceReduce::TransformReduce of the indices (a counting iterator) into\n"
    "             (min, its index, max, its index), ties to the lower index, as\n"
    "             thrust::minmax_element reduces (value, index) pairs; clreduce's --op minmax.\n"
    "             JSON: result and index_min the minimum, result_max and index_max the maximum\n"
    "  dot        sum of x[i] * y[i] over two arrays, x from seed S and y from seed S + 1 (as\n"
    "             clreduce's generated arrays): cub::DeviceReduce::TransformReduce over a\n"
    "             thrust::zip_iterator of the two arrays with a multiply transform and plus,\n"
    "             one pass: the CUB reduction thrust::inner_product itself runs (a reduce of\n"
    "             the zipped arrays through the product), without the temporary allocation and\n"
    "             synchronisation Thrust adds around each call. int32 products and sum in\n"
    "             int64, int64 in int64 (both wrapping modulo 2^64, as clreduce's); float in\n"
    "             float and double in double, as thrust::inner_product with an init of the\n"
    "             element type (clreduce's float dot is compensated, in double where the\n"
    "             device has fp64). GB/s counts both arrays\n"
    "  segsum     cub::DeviceSegmentedReduce::Sum over the --offsets segments (begin off[s],\n"
    "             end off[s+1]; an empty segment gives 0): int32 in int64 as NumPy, int64 in\n"
    "             int64, float in float, double in double. The offsets are read and uploaded\n"
    "             before any timing; GB/s counts the array alone, as clreduce's segments do.\n"
    "             A row-major R x C matrix's sum along axis 1 is segsum with offsets k*C\n"
    "             (k = 0..R); CUB has no call for axis 0\n"
    "  scan-inclusive, scan-exclusive  cub::DeviceScan prefix sums, accumulated and written in\n"
    "             the sum's accumulator; segmented: cub::DeviceScan::InclusiveSumByKey /\n"
    "             ExclusiveSumByKey with uint32 segment ids as keys (built before any timing)\n"
    "  copy       cudaMemcpy device to device, the bandwidth ceiling (GB/s: read + written)\n"
    "Integers are checked exactly; float and double sums, dots and scans within\n"
    "k * eps * sum|term| of a long double sum of the same k terms (eps: the accumulator's machine\n"
    "epsilon), each segment of a segsum on its own.\n"
    "Prints one JSON line. Exit codes: 0 ok, 1 verification failed, 2 usage, 3 CUDA error.\n";

// ---- the benchmark's data: element i of seed s depends only on (s, i) ----

// splitmix64 finaliser of (seed * golden + i), exactly as clreduce's data.cpp.
std::uint64_t data_bits(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + i;
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The formulas of clreduce's data.cpp, type by type.
constexpr std::uint64_t kWide = 1000000000000ull;
// int32 data: uniform in [-1000, 1000].
std::int32_t make_value(std::uint64_t z, std::int32_t*) {
  return static_cast<std::int32_t>(z % 2001) - 1000;
}
// int64 data: uniform in [-10^12, 10^12].
std::int64_t make_value(std::uint64_t z, std::int64_t*) {
  return static_cast<std::int64_t>(z % (2 * kWide + 1)) - static_cast<std::int64_t>(kWide);
}
// float data: uniform in [-1, 1) on a 2^-23 grid (2^24 values).
float make_value(std::uint64_t z, float*) {
  return static_cast<float>(static_cast<double>(z >> 40) * 0x1p-24 * 2.0 - 1.0);
}
// double data: uniform in [-1, 1) on a 2^-52 grid (2^53 values).
double make_value(std::uint64_t z, double*) {
  return static_cast<double>(z >> 11) * 0x1p-53 * 2.0 - 1.0;
}

// `arrays` arrays of n elements back to back, array k from seed + k as clreduce generates the
// arrays of --op dot; filled on all host cores (order does not matter).
template <class T> std::vector<T> generate(std::size_t n, std::uint64_t seed, unsigned arrays) {
  std::vector<T> x(n * arrays);
  const unsigned nt = std::max(1u, std::min(std::thread::hardware_concurrency(), 64u));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nt; ++t) {
    pool.emplace_back([&x, n, nt, t, seed, arrays] {
      const std::size_t lo = n / nt * t;
      const std::size_t hi = t + 1 == nt ? n : n / nt * (t + 1);
      for (unsigned k = 0; k < arrays; ++k)
        for (std::size_t i = lo; i < hi; ++i)
          x[k * n + i] = make_value(data_bits(seed + k, i), static_cast<T*>(nullptr));
    });
  }
  for (auto& th : pool) th.join();
  return x;
}

// ---- command line ----

enum class Op {
  kSum,
  kProd,
  kMin,
  kMax,
  kArgMin,
  kArgMax,
  kMinMax,
  kDot,
  kSegSum,
  kScanInclusive,
  kScanExclusive,
  kCopy
};
enum class Type { kInt32, kInt64, kFloat, kDouble };

struct Args {
  std::string op_name;
  Op op = Op::kSum;
  std::string type_name;  // "int32", "int64", "float" or "double"
  Type type = Type::kInt32;
  std::size_t n = 0;
  std::uint64_t seed = 1;
  int warmup = 1;
  int repeat = 5;
  bool acc64 = true;  // int32 sum and scans: accumulate and output in int64
  bool acc_given = false;
  std::size_t segment_length = 0;     // scans: a segment starts every L elements; 0: one segment
  std::string offsets_path;           // segsum: the .npy of S + 1 int64 offsets
  std::vector<std::int64_t> offsets;  // read and checked with the command line

  bool scan() const { return op == Op::kScanInclusive || op == Op::kScanExclusive; }
  bool arg() const { return op == Op::kArgMin || op == Op::kArgMax; }
};

// Parses an unsigned decimal of at most 19 digits; false on anything else.
bool parse_u64(const std::string& s, std::uint64_t* v) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  *v = std::strtoull(s.c_str(), nullptr, 10);
  return true;
}

// Parses N, 2^K or NeK as clreduce's --size does.
std::size_t parse_size(const std::string& flag, const std::string& s) {
  const std::string bad = "invalid value '" + s + "' for " + flag +
                          " (expected N, 2^K or NeK, e.g. 1000000, 2^20, 1e6)";
  std::uint64_t base = 0, exp = 0, mul = 10;
  const std::size_t caret = s.find('^');
  const std::size_t e = s.find_first_of("eE");
  if (caret != std::string::npos) {
    if (s.substr(0, caret) != "2" || !parse_u64(s.substr(caret + 1), &exp)) usage_error(bad);
    base = 1;
    mul = 2;
  } else if (e != std::string::npos) {
    if (!parse_u64(s.substr(0, e), &base) || !parse_u64(s.substr(e + 1), &exp)) usage_error(bad);
  } else {
    if (!parse_u64(s, &base)) usage_error(bad);
    return static_cast<std::size_t>(base);
  }
  for (std::uint64_t k = 0; k < exp; ++k) {
    if (base > std::numeric_limits<std::size_t>::max() / mul) usage_error(bad);
    base *= mul;
  }
  return static_cast<std::size_t>(base);
}

int parse_int(const std::string& flag, const std::string& s, int min) {
  std::uint64_t v = 0;
  if (!parse_u64(s, &v) || v > 1000000 || static_cast<int>(v) < min)
    usage_error("invalid value '" + s + "' for " + flag);
  return static_cast<int>(v);
}

// Reads --offsets: a .npy (format 1.0 to 3.0) of S + 1 int64 offsets, 1-D, little-endian, C
// order, ascending, from 0 to n. Anything else is a usage error naming what is wrong.
std::vector<std::int64_t> read_offsets(const std::string& path, std::size_t n) {
  const std::string where = "--offsets '" + path + "': ";
  std::ifstream f(path, std::ios::binary);
  if (!f) usage_error(where + "cannot open it");
  unsigned char pre[10] = {};
  f.read(reinterpret_cast<char*>(pre), 8);
  if (!f || std::memcmp(pre, "\x93NUMPY", 6) != 0 || pre[6] < 1 || pre[6] > 3)
    usage_error(where + "not a .npy file (format 1.0 to 3.0)");
  const int len_bytes = pre[6] == 1 ? 2 : 4;
  f.read(reinterpret_cast<char*>(pre + 8), len_bytes);
  if (!f) usage_error(where + "the header is cut short");
  std::size_t header_len = 0;
  for (int k = len_bytes - 1; k >= 0; --k) header_len = header_len * 256 + pre[8 + k];
  if (header_len > (1u << 20)) usage_error(where + "the header is too long");
  std::string header(header_len, '\0');
  f.read(header.data(), static_cast<std::streamsize>(header_len));
  if (!f) usage_error(where + "the header is cut short");
  // The header is a Python dict literal: 'descr', 'fortran_order' and 'shape'.
  auto value_of = [&](const std::string& key) {
    const std::size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) usage_error(where + "the header has no '" + key + "'");
    const std::size_t colon = header.find(':', k);
    if (colon == std::string::npos) usage_error(where + "the header is not a dict");
    return header.substr(colon + 1);
  };
  const std::string descr = value_of("descr");
  if (descr.find_first_not_of(' ') == std::string::npos ||
      descr.compare(descr.find_first_not_of(' '), 5, "'<i8'") != 0)
    usage_error(where + "the offsets must be int64 ('<i8')");
  const std::string fortran = value_of("fortran_order");
  if (fortran.find_first_not_of(' ') == std::string::npos ||
      fortran.compare(fortran.find_first_not_of(' '), 5, "False") != 0)
    usage_error(where + "the offsets must be in C order");
  const std::string shape = value_of("shape");
  const std::size_t open = shape.find('('), close = shape.find(')');
  if (open == std::string::npos || close == std::string::npos || close < open)
    usage_error(where + "the header's shape is not a tuple");
  std::string dims = shape.substr(open + 1, close - open - 1);
  dims.erase(std::remove(dims.begin(), dims.end(), ' '), dims.end());
  if (!dims.empty() && dims.back() == ',') dims.pop_back();
  std::uint64_t count = 0;
  if (!parse_u64(dims, &count)) usage_error(where + "the offsets must be 1-D (shape (S+1,))");
  if (count == 0) usage_error(where + "no offsets (S + 1 >= 1 are needed)");
  if (count > (std::uint64_t{1} << 40)) usage_error(where + "too many offsets");
  std::vector<std::int64_t> off(count);
  f.read(reinterpret_cast<char*>(off.data()), static_cast<std::streamsize>(count * 8));
  if (!f) usage_error(where + "the data is cut short");
  if (f.peek() != std::char_traits<char>::eof()) usage_error(where + "data past the offsets");
  for (std::size_t s = 0; s < count; ++s) {
    if (off[s] < 0 || static_cast<std::uint64_t>(off[s]) > n)
      usage_error(where + "offset " + std::to_string(s) + " (" + std::to_string(off[s]) +
                  ") is outside [0, " + std::to_string(n) + "]");
    if (s > 0 && off[s] < off[s - 1])
      usage_error(where + "offset " + std::to_string(s) + " (" + std::to_string(off[s]) +
                  ") is below the one before it");
  }
  return off;
}

Args parse_args(int argc, char** argv) {
  Args a;
  bool have_op = false, have_type = false, have_size = false, have_segments = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    const std::size_t eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else if (flag == "--op" || flag == "--type" || flag == "--size" || flag == "--seed" ||
               flag == "--warmup" || flag == "--repeat" || flag == "--acc" ||
               flag == "--segment-length" || flag == "--offsets") {
      usage_error("missing value for " + flag);
    }
    if (flag == "--op") {
      static const struct {
        const char* name;
        Op op;
      } kOps[] = {{"sum", Op::kSum},
                  {"prod", Op::kProd},
                  {"min", Op::kMin},
                  {"max", Op::kMax},
                  {"argmin", Op::kArgMin},
                  {"argmax", Op::kArgMax},
                  {"minmax", Op::kMinMax},
                  {"dot", Op::kDot},
                  {"segsum", Op::kSegSum},
                  {"scan-inclusive", Op::kScanInclusive},
                  {"scan-exclusive", Op::kScanExclusive},
                  {"copy", Op::kCopy}};
      have_op = false;
      for (const auto& o : kOps)
        if (value == o.name) {
          a.op = o.op;
          have_op = true;
        }
      if (!have_op)
        usage_error("unknown op '" + value +
                    "' (sum, min, max, argmin, argmax, minmax, dot, segsum, scan-inclusive, "
                    "scan-exclusive, copy)");
      a.op_name = value;
    } else if (flag == "--type") {
      static const struct {
        const char* name;
        Type type;
      } kTypes[] = {{"int32", Type::kInt32},
                    {"int64", Type::kInt64},
                    {"float", Type::kFloat},
                    {"double", Type::kDouble}};
      have_type = false;
      for (const auto& t : kTypes)
        if (value == t.name) {
          a.type = t.type;
          have_type = true;
        }
      if (!have_type) usage_error("unknown type '" + value + "' (int32, int64, float, double)");
      a.type_name = value;
    } else if (flag == "--size") {
      a.n = parse_size(flag, value);
      have_size = true;
    } else if (flag == "--seed") {
      if (!parse_u64(value, &a.seed)) usage_error("invalid seed '" + value + "'");
    } else if (flag == "--warmup") {
      a.warmup = parse_int(flag, value, 0);
    } else if (flag == "--repeat") {
      a.repeat = parse_int(flag, value, 1);
    } else if (flag == "--acc") {
      if (value != "int32" && value != "int64")
        usage_error("unknown accumulator '" + value + "' (int32, int64)");
      a.acc64 = value == "int64";
      a.acc_given = true;
    } else if (flag == "--segment-length") {
      a.segment_length = parse_size(flag, value);
      if (a.segment_length == 0)
        usage_error("invalid value '" + value + "' for --segment-length (L >= 1)");
      have_segments = true;
    } else if (flag == "--offsets") {
      if (value.empty()) usage_error("--offsets needs a file name");
      a.offsets_path = value;
    } else {
      usage_error("unknown flag '" + flag + "'");
    }
  }
  if (!have_op || !have_type || !have_size) usage_error("--op, --type and --size are required");
  if (a.acc_given && a.type != Type::kInt32)
    usage_error(
        "--acc applies to --type int32 only (int64, float and double accumulate in their "
        "own type)");
  if (a.acc_given && a.op != Op::kSum && a.op != Op::kProd && !a.scan())
    usage_error("--acc applies to sum, prod and the scans only (" + a.op_name +
                " keeps the element type)");
  if (have_segments && !a.scan())
    usage_error("--segment-length applies to scan-inclusive and scan-exclusive only");
  if (a.op == Op::kSegSum && a.offsets_path.empty())
    usage_error("--op segsum needs --offsets FILE.npy");
  if (a.op != Op::kSegSum && !a.offsets_path.empty())
    usage_error("--offsets applies to --op segsum only");
  if ((a.op == Op::kMin || a.op == Op::kMax || a.op == Op::kMinMax || a.arg()) && a.n == 0)
    usage_error(a.op_name + " of an empty array has no answer");
  if (a.op == Op::kSegSum) a.offsets = read_offsets(a.offsets_path, a.n);
  return a;
}

// ---- timing ----

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct Timing {
  double kernel_ms = 0.0;      // median of the device call alone (cudaEvents)
  double kernel_ms_min = 0.0;  // its fastest and slowest timed run
  double kernel_ms_max = 0.0;
  double wall_ms = 0.0;  // median of upload + call + read-back (host clock)
};

// One run as clreduce's runner does it: sentinel-fill the outputs (untimed), then upload the
// input, launch, read the result back. `launch` makes the device call and returns its status;
// `prefill` and `readback` handle the outputs. Warm-up runs are untimed.
template <class Prefill, class Launch, class Readback>
Timing time_runs(const Args& a, const void* h_in, void* d_in, std::size_t in_bytes, Prefill prefill,
                 Launch launch, Readback readback) {
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> kernel, wall;
  for (int r = 0; r < a.warmup + a.repeat; ++r) {
    prefill();
    CUDA_CHECK(cudaDeviceSynchronize());
    const double t0 = now_ms();
    CUDA_CHECK(cudaMemcpy(d_in, h_in, in_bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaEventRecord(e0));
    CUDA_CHECK(launch());
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(e1));
    readback();
    const double t1 = now_ms();
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= a.warmup) {
      kernel.push_back(ms);
      wall.push_back(t1 - t0);
    }
  }
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  return Timing{median(kernel), *std::min_element(kernel.begin(), kernel.end()),
                *std::max_element(kernel.begin(), kernel.end()), median(wall)};
}

// Times fn() `repeat` times on the host; the median in ms.
template <class Fn> double time_host(int repeat, Fn fn) {
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    const double t0 = now_ms();
    fn();
    t.push_back(now_ms() - t0);
  }
  return median(t);
}

// CUB's offset type follows num_items: 32-bit counts where they fit (CUB's fast path).
template <class F> cudaError_t with_count(std::size_t n, F f) {
  if (n <= std::numeric_limits<std::uint32_t>::max()) return f(static_cast<std::uint32_t>(n));
  return f(static_cast<std::uint64_t>(n));
}

// Device buffer freed on scope exit.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) {
    CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)));
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T> T* as() const { return static_cast<T*>(p); }
};

// Asks a CUB call for its temporary storage size and allocates it, outside any timing.
template <class Call> DeviceBuffer make_temp(Call call, std::size_t* bytes) {
  *bytes = 0;
  CUDA_CHECK(call(nullptr, *bytes));
  return DeviceBuffer(*bytes);
}

// ---- the JSON line ----

std::string num(double x) {
  if (!std::isfinite(x)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}
std::string value_str(std::int64_t v) { return std::to_string(v); }
std::string value_str(std::int32_t v) { return std::to_string(v); }
// Floats as clreduce prints them: enough digits to round-trip, "nan"/"inf" as strings.
std::string float_str(double v, int digits) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char b[40];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}
std::string value_str(float v) { return float_str(static_cast<double>(v), 9); }
std::string value_str(double v) { return float_str(v, 17); }

// clreduce's name of a type.
template <class T> const char* type_name() {
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  if constexpr (std::is_same_v<T, float>) return "float";
  return "double";
}

struct Report {
  std::string result, expected;                  // JSON values
  std::int64_t index = -1, expected_index = -1;  // argmin and argmax only
  bool verified = false;
  std::string error;  // why verification failed
  Timing t;
  double bytes = 0.0;  // bytes moved for gbps
  double seq_ms = 0.0;
  std::string acc;             // accumulator / output type, where it applies
  std::int64_t segments = -1;  // segsum: the number of segments
  std::string more;            // further JSON fields, each with its leading comma
};

struct DeviceDesc {
  std::string name;
  int driver = 0;
};

DeviceDesc describe_device() {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  DeviceDesc d;
  d.name = prop.name;
  CUDA_CHECK(cudaDriverGetVersion(&d.driver));
  return d;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o;
}

// The fields of clreduce's --format json that apply here (scans: "exclusive" and "segmented",
// as clreduce writes them; kernel_ms_min/max: the fastest and slowest timed run).
int print_report(const Args& a, const DeviceDesc& d, const Report& r) {
  std::string s = "{\"variant\":\"cub\",\"op\":\"" + a.op_name + "\",\"type\":\"" + a.type_name +
                  "\",\"n\":" + std::to_string(a.n) + ",\"device\":\"" + json_escape(d.name) +
                  "\",\"driver\":" + std::to_string(d.driver) +
                  ",\"cub_version\":" + std::to_string(CUB_VERSION);
  if (!r.acc.empty()) s += ",\"acc\":\"" + r.acc + "\"";
  if (a.scan())
    s += std::string(",\"exclusive\":") + (a.op == Op::kScanExclusive ? "true" : "false") +
         ",\"segmented\":" + (a.segment_length > 0 ? "true" : "false");
  if (r.segments >= 0) s += ",\"segments\":" + std::to_string(r.segments);
  s += ",\"result\":" + r.result;
  if (a.arg()) s += ",\"index\":" + std::to_string(r.index);
  s += ",\"expected\":" + r.expected;
  if (a.arg()) s += ",\"expected_index\":" + std::to_string(r.expected_index);
  s += r.more;
  s += std::string(",\"verified\":") + (r.verified ? "true" : "false");
  if (!r.verified) s += ",\"error\":\"" + json_escape(r.error) + "\"";
  const double gbps = r.t.kernel_ms > 0 ? r.bytes / (r.t.kernel_ms * 1e6) : 0.0;
  const double speedup = r.t.kernel_ms > 0 ? r.seq_ms / r.t.kernel_ms : 0.0;
  s += ",\"kernel_ms\":" + num(r.t.kernel_ms) + ",\"kernel_ms_min\":" + num(r.t.kernel_ms_min) +
       ",\"kernel_ms_max\":" + num(r.t.kernel_ms_max) + ",\"wall_ms\":" + num(r.t.wall_ms) +
       ",\"gbps\":" + num(gbps) + ",\"seq_ms\":" + num(r.seq_ms) + ",\"speedup\":" + num(speedup) +
       "}";
  std::printf("%s\n", s.c_str());
  return r.verified ? 0 : kExitVerify;
}

// ---- host references ----

// acc + v in the accumulator type; integers wrap (unsigned arithmetic, so overflow is defined),
// as clreduce's operator and NumPy's integers.
template <class Acc, class V> Acc wrap_add(Acc acc, V v) {
  if constexpr (std::is_integral_v<Acc>) {
    using U = std::make_unsigned_t<Acc>;
    return static_cast<Acc>(
        static_cast<U>(static_cast<U>(acc) + static_cast<U>(static_cast<Acc>(v))));
  } else {
    return acc + static_cast<Acc>(v);
  }
}

// Float tolerance of a sum of k terms in Acc (float or double): k * eps * sum|x|, eps Acc's
// machine epsilon (twice its unit roundoff), against the long double sum of the same terms.
template <class Acc> bool within(Acc got, long double exact, std::size_t k, long double abs_sum) {
  const long double bound =
      static_cast<long double>(k) * std::numeric_limits<Acc>::epsilon() * abs_sum;
  return std::fabs(static_cast<long double>(got) - exact) <= bound;
}

// ---- the operations ----

// One device call reducing n elements of In to one Out: uploads x, times the call (each run after
// a sentinel fill of the output) into r.t and returns the result. reduce(tmp, bytes, in, out,
// count) is the CUB call.
template <class In, class Out, class Reduce>
Out time_one_result(const Args& a, const std::vector<In>& x, Report& r, Reduce reduce) {
  const std::size_t n = a.n;
  DeviceBuffer d_in(n * sizeof(In)), d_out(sizeof(Out));
  auto call = [&](void* tmp, std::size_t& bytes) {
    return with_count(n, [&](auto count) {
      return reduce(tmp, bytes, d_in.as<const In>(), d_out.as<Out>(), count);
    });
  };
  std::size_t temp_bytes = 0;
  DeviceBuffer temp = make_temp(call, &temp_bytes);
  Out got{};
  r.t = time_runs(
      a, x.data(), d_in.p, n * sizeof(In),
      [&] { CUDA_CHECK(cudaMemset(d_out.p, 0xA5, sizeof(Out))); },
      [&] { return call(temp.p, temp_bytes); },
      [&] { CUDA_CHECK(cudaMemcpy(&got, d_out.p, sizeof(Out), cudaMemcpyDeviceToHost)); });
  return got;
}

// cub::DeviceReduce::Sum of In into Out (int32 -> int64 accumulates in int64: CUB takes the
// accumulator from the output type).
template <class In, class Out> Report run_sum(const Args& a, const std::vector<In>& x) {
  Report r;
  const std::size_t n = a.n;
  const Out got = time_one_result<In, Out>(
      a, x, r, [](void* tmp, std::size_t& bytes, const In* in, Out* out, auto count) {
        return cub::DeviceReduce::Sum(tmp, bytes, in, out, count);
      });
  // The sequential loop in the accumulator type, timed like clreduce's seq_ms.
  Out seq{};
  r.seq_ms = time_host(a.repeat, [&] {
    Out acc{};
    for (std::size_t i = 0; i < n; ++i) acc = wrap_add(acc, x[i]);
    seq = acc;
  });
  r.bytes = static_cast<double>(n * sizeof(In));
  r.result = value_str(got);
  r.acc = type_name<Out>();
  if constexpr (std::is_floating_point_v<Out>) {
    long double exact = 0.0L, abs_sum = 0.0L;
    for (In v : x) {
      exact += v;
      abs_sum += std::fabs(static_cast<long double>(v));
    }
    r.expected = value_str(static_cast<Out>(exact));
    r.verified = within(got, exact, n, abs_sum);
    if (!r.verified) r.error = "float sum outside n*eps*sum|x| of the exact sum";
  } else {
    r.expected = value_str(seq);
    r.verified = got == seq;
    if (!r.verified) r.error = "integer sum differs";
  }
  return r;
}

// The product's operator: integers multiply in uint64 (wrapping modulo 2^64, as clreduce's prod
// and NumPy's), floats in their own type.
template <class Acc> struct WrapMultiply {
  __host__ __device__ Acc operator()(Acc a, Acc b) const {
    if constexpr (std::is_integral_v<Acc>)
      return static_cast<Acc>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
    else
      return a * b;
  }
};
template <class Acc> struct CastTo {
  template <class V> __host__ __device__ Acc operator()(V v) const { return static_cast<Acc>(v); }
};

// The product of In in Out: cub::DeviceReduce::TransformReduce with a cast and WrapMultiply,
// init 1 (CUB has no Prod call). Integers are checked exactly; floats against the long double
// product within (n + 2) * eps * |exact| plus n times Out's smallest subnormal (the data lie in
// [-1, 1), so partial products only shrink and may underflow, never overflow).
template <class In, class Out> Report run_prod(const Args& a, const std::vector<In>& x) {
  Report r;
  const std::size_t n = a.n;
  const Out got = time_one_result<In, Out>(
      a, x, r, [](void* tmp, std::size_t& bytes, const In* in, Out* out, auto count) {
        return cub::DeviceReduce::TransformReduce(tmp, bytes, in, out, count, WrapMultiply<Out>{},
                                                  CastTo<Out>{}, Out{1});
      });
  Out seq{};
  r.seq_ms = time_host(a.repeat, [&] {
    Out acc{1};
    const WrapMultiply<Out> mul;
    for (std::size_t i = 0; i < n; ++i) acc = mul(acc, static_cast<Out>(x[i]));
    seq = acc;
  });
  r.bytes = static_cast<double>(n * sizeof(In));
  r.result = value_str(got);
  r.acc = type_name<Out>();
  if constexpr (std::is_floating_point_v<Out>) {
    long double exact = 1.0L;
    for (In v : x) exact *= static_cast<long double>(v);
    const long double bound =
        static_cast<long double>(n + 2) * std::numeric_limits<Out>::epsilon() * std::fabs(exact) +
        static_cast<long double>(n) * std::numeric_limits<Out>::denorm_min();
    r.expected = value_str(static_cast<Out>(exact));
    r.verified = std::fabs(static_cast<long double>(got) - exact) <= bound;
    if (!r.verified) r.error = "float product outside (n+2)*eps*|exact| + n*denorm_min";
  } else {
    r.expected = value_str(seq);
    r.verified = got == seq;
    if (!r.verified) r.error = "integer product differs";
  }
  return r;
}

// cub::DeviceReduce::Min or Max (kMax), in the element type.
template <class T, bool kMax> Report run_extreme(const Args& a, const std::vector<T>& x) {
  Report r;
  const std::size_t n = a.n;
  const T got = time_one_result<T, T>(
      a, x, r, [](void* tmp, std::size_t& bytes, const T* in, T* out, auto count) {
        if constexpr (kMax)
          return cub::DeviceReduce::Max(tmp, bytes, in, out, count);
        else
          return cub::DeviceReduce::Min(tmp, bytes, in, out, count);
      });
  T seq{};
  r.seq_ms = time_host(a.repeat, [&] {
    T m = x[0];
    for (std::size_t i = 1; i < n; ++i)
      if (kMax ? x[i] > m : x[i] < m) m = x[i];
    seq = m;
  });
  r.bytes = static_cast<double>(n * sizeof(T));
  r.result = value_str(got);
  r.expected = value_str(seq);
  r.verified = got == seq;
  if (!r.verified) r.error = kMax ? "maximum differs" : "minimum differs";
  return r;
}

// cub::DeviceReduce::ArgMin or ArgMax (kMax), the CCCL 3 overloads writing the value and the
// int64 index to two outputs (the cub::KeyValuePair ones are deprecated). On ties both keep the
// lowest index (cub::ArgMin / cub::ArgMax prefer the smaller offset), as clreduce's clr_op and
// its host loop do: the first index of the extreme. (clreduce also lets the first NaN win; CUB
// has no NaN rule, and the generated data has no NaN.)
template <class T, bool kMax> Report run_arg(const Args& a, const std::vector<T>& x) {
  Report r;
  const std::size_t n = a.n;
  DeviceBuffer d_in(n * sizeof(T)), d_val(sizeof(T)), d_idx(sizeof(std::int64_t));
  auto call = [&](void* tmp, std::size_t& bytes) {
    const auto count = static_cast<::cuda::std::int64_t>(n);
    if constexpr (kMax)
      return cub::DeviceReduce::ArgMax(tmp, bytes, d_in.as<const T>(), d_val.as<T>(),
                                       d_idx.as<::cuda::std::int64_t>(), count);
    else
      return cub::DeviceReduce::ArgMin(tmp, bytes, d_in.as<const T>(), d_val.as<T>(),
                                       d_idx.as<::cuda::std::int64_t>(), count);
  };
  std::size_t temp_bytes = 0;
  DeviceBuffer temp = make_temp(call, &temp_bytes);
  T got{};
  std::int64_t got_idx = -1;
  r.t = time_runs(
      a, x.data(), d_in.p, n * sizeof(T),
      [&] {
        CUDA_CHECK(cudaMemset(d_val.p, 0xA5, sizeof(T)));
        CUDA_CHECK(cudaMemset(d_idx.p, 0xA5, sizeof(std::int64_t)));
      },
      [&] { return call(temp.p, temp_bytes); },
      [&] {
        CUDA_CHECK(cudaMemcpy(&got, d_val.p, sizeof(T), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&got_idx, d_idx.p, sizeof(std::int64_t), cudaMemcpyDeviceToHost));
      });
  T seq{};
  std::int64_t seq_idx = 0;
  r.seq_ms = time_host(a.repeat, [&] {
    T m = x[0];
    std::size_t k = 0;
    for (std::size_t i = 1; i < n; ++i)
      if (kMax ? x[i] > m : x[i] < m) {  // strict: a tie keeps the earlier index
        m = x[i];
        k = i;
      }
    seq = m;
    seq_idx = static_cast<std::int64_t>(k);
  });
  r.bytes = static_cast<double>(n * sizeof(T));
  r.result = value_str(got);
  r.index = got_idx;
  r.expected = value_str(seq);
  r.expected_index = seq_idx;
  r.verified = got == seq && got_idx == seq_idx;
  if (!r.verified)
    r.error = kMax ? "maximum or its first index differs" : "minimum or its first index differs";
  return r;
}

// Widening int32 -> int64 scans: CUB's InclusiveSum/ExclusiveSum (and ...ByKey) take the
// accumulator from the input type (int32 partials would overflow). Unsegmented and exclusive
// segmented scans use the scan-with-init forms with an int64 zero, which makes the accumulator
// int64 while reading the int32 input directly. The inclusive scan by key has no init form: it
// reads the int32 input through a transform iterator that widens each element as it is loaded.
template <class In, class Out> constexpr bool kWidening = !std::is_same_v<In, Out>;

template <class Out> struct Widen {
  template <class V> __host__ __device__ Out operator()(const V& v) const {
    return static_cast<Out>(v);
  }
};

// Segment keys: a segmented scan restarts where the key changes (CUB compares neighbours with
// ==). key[i] = the number of segment starts at or before i, minus one: the segment id, i / L
// with a start every L elements. Kept in 32 bits: past 2^32 segments the ids wrap, and neighbours
// still differ.
using SegmentKey = std::uint32_t;

// The CUB scan of in into out, n elements; keys: null for one segment.
template <class In, class Out>
cudaError_t scan_call(void* tmp, std::size_t& bytes, const In* in, Out* out, const SegmentKey* keys,
                      std::size_t n, bool inclusive) {
  return with_count(n, [&](auto count) {
    if (keys) {
      if constexpr (kWidening<In, Out>) {
        if (inclusive)
          return cub::DeviceScan::InclusiveSumByKey(
              tmp, bytes, keys, thrust::make_transform_iterator(in, Widen<Out>{}), out, count);
        return cub::DeviceScan::ExclusiveScanByKey(tmp, bytes, keys, in, out, ::cuda::std::plus<>{},
                                                   Out{0}, count);
      } else {
        if (inclusive) return cub::DeviceScan::InclusiveSumByKey(tmp, bytes, keys, in, out, count);
        return cub::DeviceScan::ExclusiveSumByKey(tmp, bytes, keys, in, out, count);
      }
    }
    if constexpr (kWidening<In, Out>) {
      if (inclusive)
        return cub::DeviceScan::InclusiveScanInit(tmp, bytes, in, out, ::cuda::std::plus<>{},
                                                  Out{0}, count);
      return cub::DeviceScan::ExclusiveScan(tmp, bytes, in, out, ::cuda::std::plus<>{}, Out{0},
                                            count);
    } else {
      if (inclusive) return cub::DeviceScan::InclusiveSum(tmp, bytes, in, out, count);
      return cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, count);
    }
  });
}

// cub::DeviceScan inclusive or exclusive prefix sum of In into Out (n elements), segmented when
// a.segment_length > 0 (the running sum restarts at 0 every L elements, as clreduce's
// --segment-length; an exclusive scan writes 0 at each segment start).
template <class In, class Out>
Report run_scan(const Args& a, const std::vector<In>& x, bool inclusive) {
  Report r;
  const std::size_t n = a.n, len = a.segment_length;
  DeviceBuffer d_in(n * sizeof(In)), d_out(n * sizeof(Out));
  // The keys are built on the host and uploaded once, before the temporary storage is asked
  // for: neither is timed (clreduce's flags are an input of the problem too).
  std::unique_ptr<DeviceBuffer> d_keys;
  if (len > 0) {
    std::vector<SegmentKey> keys(n);
    for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<SegmentKey>(i / len);
    d_keys = std::make_unique<DeviceBuffer>(n * sizeof(SegmentKey));
    CUDA_CHECK(cudaMemcpy(d_keys->p, keys.data(), n * sizeof(SegmentKey), cudaMemcpyHostToDevice));
  }
  const SegmentKey* keys = d_keys ? d_keys->as<const SegmentKey>() : nullptr;
  auto call = [&](void* tmp, std::size_t& bytes) {
    return scan_call(tmp, bytes, d_in.as<const In>(), d_out.as<Out>(), keys, n, inclusive);
  };
  std::size_t temp_bytes = 0;
  DeviceBuffer temp = make_temp(call, &temp_bytes);
  std::vector<Out> got(n);
  r.t = time_runs(
      a, x.data(), d_in.p, n * sizeof(In),
      [&] { CUDA_CHECK(cudaMemset(d_out.p, 0xA5, n * sizeof(Out))); },
      [&] { return call(temp.p, temp_bytes); },
      [&] {
        CUDA_CHECK(cudaMemcpy(got.data(), d_out.p, n * sizeof(Out), cudaMemcpyDeviceToHost));
      });
  // The sequential loop; segmented, a countdown finds the segment starts.
  std::vector<Out> seq(n);
  r.seq_ms = time_host(a.repeat, [&] {
    Out acc{};
    std::size_t left = 0;  // elements left in the current segment
    for (std::size_t i = 0; i < n; ++i) {
      if (len > 0) {
        if (left == 0) {
          acc = Out{};
          left = len;
        }
        --left;
      }
      if (inclusive) {
        seq[i] = acc = wrap_add(acc, x[i]);
      } else {
        seq[i] = acc;
        acc = wrap_add(acc, x[i]);
      }
    }
  });
  // Bytes as clreduce counts them for this scan: input and output, and one flag byte per
  // element when segmented (CUB reads 4-byte keys instead; counting clreduce's bytes keeps GB/s
  // comparable across the tools the way their times are).
  r.bytes = static_cast<double>(n * (sizeof(In) + sizeof(Out) + (len > 0 ? 1 : 0)));
  // The result shown is the last element of the scan (0 for an empty array).
  r.result = value_str(n ? got[n - 1] : Out{});
  r.acc = type_name<Out>();
  std::size_t bad = n;
  if constexpr (std::is_floating_point_v<Out>) {
    // Element i sums the k elements of its segment before it (exclusive) or up to it
    // (inclusive): within k*eps*sum|terms| of the long double prefix; the expected value shown
    // is the last exact prefix, rounded.
    long double exact = 0.0L, abs_sum = 0.0L, last = 0.0L;
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (len > 0 && i % len == 0) {
        exact = abs_sum = 0.0L;
        k = 0;
      }
      if (inclusive) {
        exact += x[i];
        abs_sum += std::fabs(static_cast<long double>(x[i]));
        ++k;
      }
      if (bad == n && !within(got[i], exact, k, abs_sum)) bad = i;
      last = exact;
      if (!inclusive) {
        exact += x[i];
        abs_sum += std::fabs(static_cast<long double>(x[i]));
        ++k;
      }
    }
    r.expected = value_str(static_cast<Out>(last));
  } else {
    for (std::size_t i = 0; i < n; ++i)
      if (got[i] != seq[i]) {
        bad = i;
        break;
      }
    r.expected = value_str(n ? seq[n - 1] : Out{});
  }
  r.verified = bad == n;
  if (!r.verified)
    r.error = "element " + std::to_string(bad) + " differs from the host scan" +
              (std::is_floating_point_v<Out> ? " beyond k*eps*sum|x|" : "");
  return r;
}

// The least and greatest element with their first indices, folded by one TransformReduce.
template <class T> struct MinMax {
  T lo;
  std::int64_t ilo;
  T hi;
  std::int64_t ihi;
};

template <class T> struct ToMinMax {
  const T* x;
  __host__ __device__ MinMax<T> operator()(std::int64_t i) const { return {x[i], i, x[i], i}; }
};

// Associative and commutative: ties go to the lower index (the identity's index is the largest).
template <class T> struct CombineMinMax {
  __host__ __device__ MinMax<T> operator()(const MinMax<T>& a, const MinMax<T>& b) const {
    MinMax<T> r = a;
    if (b.lo < a.lo || (b.lo == a.lo && b.ilo < a.ilo)) {
      r.lo = b.lo;
      r.ilo = b.ilo;
    }
    if (b.hi > a.hi || (b.hi == a.hi && b.ihi < a.ihi)) {
      r.hi = b.hi;
      r.ihi = b.ihi;
    }
    return r;
  }
};

// One pass over the array for both extremes and their first indices (clreduce's --op minmax).
template <class T> Report run_minmax(const Args& a, const std::vector<T>& x) {
  Report r;
  const std::size_t n = a.n;
  DeviceBuffer d_in(n * sizeof(T)), d_out(sizeof(MinMax<T>));
  const MinMax<T> init{std::numeric_limits<T>::max(), std::numeric_limits<std::int64_t>::max(),
                       std::numeric_limits<T>::lowest(), std::numeric_limits<std::int64_t>::max()};
  auto call = [&](void* tmp, std::size_t& bytes) {
    return with_count(n, [&](auto count) {
      return cub::DeviceReduce::TransformReduce(
          tmp, bytes, thrust::counting_iterator<std::int64_t>(0), d_out.as<MinMax<T>>(), count,
          CombineMinMax<T>{}, ToMinMax<T>{d_in.as<const T>()}, init);
    });
  };
  std::size_t temp_bytes = 0;
  DeviceBuffer temp = make_temp(call, &temp_bytes);
  MinMax<T> got{};
  r.t = time_runs(
      a, x.data(), d_in.p, n * sizeof(T),
      [&] { CUDA_CHECK(cudaMemset(d_out.p, 0xA5, sizeof(MinMax<T>))); },
      [&] { return call(temp.p, temp_bytes); },
      [&] { CUDA_CHECK(cudaMemcpy(&got, d_out.p, sizeof(MinMax<T>), cudaMemcpyDeviceToHost)); });
  MinMax<T> seq{};
  r.seq_ms = time_host(a.repeat, [&] {
    MinMax<T> m{x[0], 0, x[0], 0};
    for (std::size_t i = 1; i < n; ++i) {  // strict: a tie keeps the earlier index
      if (x[i] < m.lo) {
        m.lo = x[i];
        m.ilo = static_cast<std::int64_t>(i);
      }
      if (x[i] > m.hi) {
        m.hi = x[i];
        m.ihi = static_cast<std::int64_t>(i);
      }
    }
    seq = m;
  });
  r.bytes = static_cast<double>(n * sizeof(T));
  r.result = value_str(got.lo);
  r.expected = value_str(seq.lo);
  r.more = ",\"index_min\":" + std::to_string(got.ilo) + ",\"result_max\":" + value_str(got.hi) +
           ",\"index_max\":" + std::to_string(got.ihi) +
           ",\"expected_index_min\":" + std::to_string(seq.ilo) +
           ",\"expected_max\":" + value_str(seq.hi) +
           ",\"expected_index_max\":" + std::to_string(seq.ihi);
  r.verified = got.lo == seq.lo && got.ilo == seq.ilo && got.hi == seq.hi && got.ihi == seq.ihi;
  if (!r.verified) r.error = "minimum, maximum or a first index differs";
  return r;
}

// ---- dot and segmented sums ----

// x * y in Acc; integers as uint64 (the product and the sum wrap modulo 2^64, as clreduce's
// integer dot: an int64 overflow would be undefined), floats in the element type.
template <class T> using DotAcc = std::conditional_t<std::is_integral_v<T>, std::uint64_t, T>;

template <class Acc> struct Multiply {
  template <class Tuple> __host__ __device__ Acc operator()(const Tuple& t) const {
    if constexpr (std::is_integral_v<Acc>)
      return static_cast<Acc>(static_cast<std::int64_t>(thrust::get<0>(t))) *
             static_cast<Acc>(static_cast<std::int64_t>(thrust::get<1>(t)));
    else
      return static_cast<Acc>(thrust::get<0>(t)) * static_cast<Acc>(thrust::get<1>(t));
  }
};

// The sum of x[i] * y[i]: cub::DeviceReduce::TransformReduce over a zip of the two arrays (x
// and y back to back in xy, so one upload per run as for the other ops). int32 and int64 report
// the int64 result (clreduce's integer dot); the arithmetic wraps in uint64.
template <class T> Report run_dot(const Args& a, const std::vector<T>& xy) {
  using Acc = DotAcc<T>;
  using Out = std::conditional_t<std::is_integral_v<T>, std::int64_t, T>;
  Report r;
  const std::size_t n = a.n;
  DeviceBuffer d_in(2 * n * sizeof(T)), d_out(sizeof(Acc));
  const T* d_x = d_in.as<const T>();
  auto zip = thrust::make_zip_iterator(thrust::make_tuple(d_x, d_x + n));
  auto call = [&](void* tmp, std::size_t& bytes) {
    return with_count(n, [&](auto count) {
      return cub::DeviceReduce::TransformReduce(tmp, bytes, zip, d_out.as<Acc>(), count,
                                                ::cuda::std::plus<>{}, Multiply<Acc>{}, Acc{0});
    });
  };
  std::size_t temp_bytes = 0;
  DeviceBuffer temp = make_temp(call, &temp_bytes);
  Acc got_acc{};
  r.t = time_runs(
      a, xy.data(), d_in.p, 2 * n * sizeof(T),
      [&] { CUDA_CHECK(cudaMemset(d_out.p, 0xA5, sizeof(Acc))); },
      [&] { return call(temp.p, temp_bytes); },
      [&] { CUDA_CHECK(cudaMemcpy(&got_acc, d_out.p, sizeof(Acc), cudaMemcpyDeviceToHost)); });
  const T* x = xy.data();
  const T* y = xy.data() + n;
  Acc seq{};
  r.seq_ms = time_host(a.repeat, [&] {
    Acc acc{};
    const Multiply<Acc> mul;
    for (std::size_t i = 0; i < n; ++i) acc += mul(thrust::make_tuple(x[i], y[i]));
    seq = acc;
  });
  const Out got = static_cast<Out>(got_acc);
  r.bytes = static_cast<double>(2 * n * sizeof(T));
  r.result = value_str(got);
  r.acc = type_name<Out>();
  if constexpr (std::is_floating_point_v<T>) {
    // Each product is rounded once and summed: within n * eps * sum|x*y| of the exact sum.
    long double exact = 0.0L, abs_sum = 0.0L;
    for (std::size_t i = 0; i < n; ++i) {
      const long double p = static_cast<long double>(x[i]) * static_cast<long double>(y[i]);
      exact += p;
      abs_sum += std::fabs(p);
    }
    r.expected = value_str(static_cast<Out>(exact));
    r.verified = within(got, exact, std::max<std::size_t>(n, 1), abs_sum);
    if (!r.verified) r.error = "float dot outside n*eps*sum|x*y| of the exact sum";
  } else {
    r.expected = value_str(static_cast<Out>(seq));
    r.verified = got_acc == seq;
    if (!r.verified) r.error = "integer dot differs";
  }
  return r;
}

// cub::DeviceSegmentedReduce::Sum of In into Out over the --offsets segments (begin off[s], end
// off[s + 1]). The offsets are uploaded once, before any timing; each run reads the whole output
// back. The row's result is the first segment's (clreduce's segments row shows the first too).
template <class In, class Out> Report run_segsum(const Args& a, const std::vector<In>& x) {
  Report r;
  const std::size_t n = a.n;
  const std::vector<std::int64_t>& off = a.offsets;
  const std::size_t segs = off.size() - 1;
  DeviceBuffer d_in(n * sizeof(In)), d_off(off.size() * sizeof(std::int64_t)),
      d_out(segs * sizeof(Out));
  CUDA_CHECK(
      cudaMemcpy(d_off.p, off.data(), off.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice));
  const std::int64_t* begin = d_off.as<const std::int64_t>();
  auto call = [&](void* tmp, std::size_t& bytes) {
    return cub::DeviceSegmentedReduce::Sum(tmp, bytes, d_in.as<const In>(), d_out.as<Out>(),
                                           static_cast<::cuda::std::int64_t>(segs), begin,
                                           begin + 1);
  };
  std::size_t temp_bytes = 0;
  DeviceBuffer temp = make_temp(call, &temp_bytes);
  std::vector<Out> got(segs);
  r.t = time_runs(
      a, x.data(), d_in.p, n * sizeof(In),
      [&] { CUDA_CHECK(cudaMemset(d_out.p, 0xA5, segs * sizeof(Out))); },
      [&] { return call(temp.p, temp_bytes); },
      [&] {
        CUDA_CHECK(cudaMemcpy(got.data(), d_out.p, segs * sizeof(Out), cudaMemcpyDeviceToHost));
      });
  std::vector<Out> seq(segs);
  r.seq_ms = time_host(a.repeat, [&] {
    for (std::size_t s = 0; s < segs; ++s) {
      Out acc{};
      for (auto i = off[s]; i < off[s + 1]; ++i) acc = wrap_add(acc, x[i]);
      seq[s] = acc;
    }
  });
  r.bytes = static_cast<double>(n * sizeof(In));
  r.segments = static_cast<std::int64_t>(segs);
  r.acc = type_name<Out>();
  std::size_t bad = segs;
  long double first = 0.0L;
  for (std::size_t s = 0; s < segs && bad == segs; ++s) {
    if constexpr (std::is_floating_point_v<Out>) {
      long double exact = 0.0L, abs_sum = 0.0L;
      for (auto i = off[s]; i < off[s + 1]; ++i) {
        exact += x[i];
        abs_sum += std::fabs(static_cast<long double>(x[i]));
      }
      if (s == 0) first = exact;
      const std::size_t k = static_cast<std::size_t>(off[s + 1] - off[s]);
      if (!within(got[s], exact, std::max<std::size_t>(k, 1), abs_sum)) bad = s;
    } else {
      if (got[s] != seq[s]) bad = s;
    }
  }
  r.result = segs ? value_str(got[0]) : "null";
  if constexpr (std::is_floating_point_v<Out>)
    r.expected = segs ? value_str(static_cast<Out>(first)) : "null";
  else
    r.expected = segs ? value_str(seq[0]) : "null";
  r.verified = bad == segs;
  if (!r.verified)
    r.error = "segment " + std::to_string(bad) + " differs from the host sum" +
              (std::is_floating_point_v<Out> ? " beyond k*eps*sum|x|" : "");
  return r;
}

// cudaMemcpy device-to-device of n elements: the bandwidth ceiling (gbps counts read + write).
template <class T> Report run_copy(const Args& a, const std::vector<T>& x) {
  Report r;
  const std::size_t n = a.n, bytes = n * sizeof(T);
  DeviceBuffer d_in(bytes), d_out(bytes);
  std::vector<T> got(n);
  r.t = time_runs(
      a, x.data(), d_in.p, bytes, [&] { CUDA_CHECK(cudaMemset(d_out.p, 0xA5, bytes)); },
      [&] { return cudaMemcpyAsync(d_out.p, d_in.p, bytes, cudaMemcpyDeviceToDevice, 0); },
      [&] { CUDA_CHECK(cudaMemcpy(got.data(), d_out.p, bytes, cudaMemcpyDeviceToHost)); });
  std::vector<T> seq(n);
  r.seq_ms = time_host(a.repeat, [&] {
    if (bytes) std::memcpy(seq.data(), x.data(), bytes);
  });
  r.bytes = 2.0 * static_cast<double>(bytes);
  r.result = value_str(n ? got[n - 1] : T{});
  r.expected = value_str(n ? x[n - 1] : T{});
  r.verified = bytes == 0 || std::memcmp(got.data(), x.data(), bytes) == 0;
  if (!r.verified) r.error = "copy differs from the input";
  return r;
}

template <class T> Report run_op(const Args& a, const std::vector<T>& x) {
  constexpr bool kInt32 = std::is_same_v<T, std::int32_t>;
  const bool inclusive = a.op == Op::kScanInclusive;
  switch (a.op) {
    case Op::kSum:
      if constexpr (kInt32)
        return a.acc64 ? run_sum<T, std::int64_t>(a, x) : run_sum<T, std::int32_t>(a, x);
      else
        return run_sum<T, T>(a, x);
    case Op::kProd:
      if constexpr (kInt32)
        return a.acc64 ? run_prod<T, std::int64_t>(a, x) : run_prod<T, std::int32_t>(a, x);
      else
        return run_prod<T, T>(a, x);
    case Op::kMin: return run_extreme<T, false>(a, x);
    case Op::kMax: return run_extreme<T, true>(a, x);
    case Op::kArgMin: return run_arg<T, false>(a, x);
    case Op::kArgMax: return run_arg<T, true>(a, x);
    case Op::kMinMax: return run_minmax(a, x);
    case Op::kDot: return run_dot(a, x);
    case Op::kSegSum:
      if constexpr (kInt32)
        return run_segsum<T, std::int64_t>(a, x);
      else
        return run_segsum<T, T>(a, x);
    case Op::kScanInclusive:
    case Op::kScanExclusive:
      if constexpr (kInt32)
        return a.acc64 ? run_scan<T, std::int64_t>(a, x, inclusive)
                       : run_scan<T, std::int32_t>(a, x, inclusive);
      else
        return run_scan<T, T>(a, x, inclusive);
    case Op::kCopy: return run_copy(a, x);
  }
  return Report{};
}

template <class T> int generate_and_run(const Args& a, const DeviceDesc& dev) {
  return print_report(a, dev, run_op(a, generate<T>(a.n, a.seed, a.op == Op::kDot ? 2 : 1)));
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);  // usage errors exit before any CUDA call
  const DeviceDesc dev = describe_device();
  CUDA_CHECK(cudaFree(nullptr));  // create the context before any timing
  switch (a.type) {
    case Type::kInt32: return generate_and_run<std::int32_t>(a, dev);
    case Type::kInt64: return generate_and_run<std::int64_t>(a, dev);
    case Type::kFloat: return generate_and_run<float>(a, dev);
    case Type::kDouble: break;
  }
  return generate_and_run<double>(a, dev);
}
