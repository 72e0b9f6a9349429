// cub_peer.cu: the CUB baseline for clreduce's benchmark. Generates clreduce's --seed/--size data,
// runs one cub::DeviceReduce / cub::DeviceScan call (or a device-to-device copy, the bandwidth
// ceiling), verifies it against a host loop and prints one JSON line in clreduce's format.
#include <cub/cub.cuh>
#include <cub/version.cuh>
#include <cuda/std/functional>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
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
    "usage: cub_peer --op sum|min|argmin|scan-inclusive|scan-exclusive|copy --type int32|float\n"
    "                --size N [--seed S] [--warmup W] [--repeat R] [--acc int32|int64]\n"
    "  --size   N, 2^K or NeK elements        --seed    data seed (default 1)\n"
    "  --warmup untimed runs (default 1)      --repeat  timed runs, medians reported (default 5)\n"
    "  --acc    accumulator and output type of int32 sum and scans (default int64, as NumPy)\n"
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

// int32 data: uniform in [-1000, 1000].
std::int32_t make_value(std::uint64_t z, std::int32_t*) {
  return static_cast<std::int32_t>(z % 2001) - 1000;
}
// float data: uniform in [-1, 1) on a 2^-23 grid.
float make_value(std::uint64_t z, float*) {
  return static_cast<float>(static_cast<double>(z >> 40) * 0x1p-24 * 2.0 - 1.0);
}

// Fills x[0, n) with the generator, on all host cores (order does not matter).
template <class T>
std::vector<T> generate(std::size_t n, std::uint64_t seed) {
  std::vector<T> x(n);
  const unsigned nt = std::max(1u, std::min(std::thread::hardware_concurrency(), 64u));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nt; ++t) {
    pool.emplace_back([&x, n, nt, t, seed] {
      const std::size_t lo = n / nt * t;
      const std::size_t hi = t + 1 == nt ? n : n / nt * (t + 1);
      for (std::size_t i = lo; i < hi; ++i) x[i] = make_value(data_bits(seed, i), static_cast<T*>(nullptr));
    });
  }
  for (auto& th : pool) th.join();
  return x;
}

// ---- command line ----

enum class Op { kSum, kMin, kArgMin, kScanInclusive, kScanExclusive, kCopy };

struct Args {
  std::string op_name;
  Op op = Op::kSum;
  std::string type;  // "int32" or "float"
  std::size_t n = 0;
  std::uint64_t seed = 1;
  int warmup = 1;
  int repeat = 5;
  bool acc64 = true;  // int32 sum and scans: accumulate and output in int64
  bool acc_given = false;
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
std::size_t parse_size(const std::string& s) {
  const std::string bad = "invalid size '" + s + "' (expected N, 2^K or NeK, e.g. 1000000, 2^20, 1e6)";
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

Args parse_args(int argc, char** argv) {
  Args a;
  bool have_op = false, have_type = false, have_size = false;
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
               flag == "--warmup" || flag == "--repeat" || flag == "--acc") {
      usage_error("missing value for " + flag);
    }
    if (flag == "--op") {
      static const struct { const char* name; Op op; } kOps[] = {
          {"sum", Op::kSum}, {"min", Op::kMin}, {"argmin", Op::kArgMin},
          {"scan-inclusive", Op::kScanInclusive}, {"scan-exclusive", Op::kScanExclusive},
          {"copy", Op::kCopy}};
      have_op = false;
      for (const auto& o : kOps)
        if (value == o.name) { a.op = o.op; have_op = true; }
      if (!have_op)
        usage_error("unknown op '" + value + "' (sum, min, argmin, scan-inclusive, scan-exclusive, copy)");
      a.op_name = value;
    } else if (flag == "--type") {
      if (value != "int32" && value != "float") usage_error("unknown type '" + value + "' (int32, float)");
      a.type = value;
      have_type = true;
    } else if (flag == "--size") {
      a.n = parse_size(value);
      have_size = true;
    } else if (flag == "--seed") {
      if (!parse_u64(value, &a.seed)) usage_error("invalid seed '" + value + "'");
    } else if (flag == "--warmup") {
      a.warmup = parse_int(flag, value, 0);
    } else if (flag == "--repeat") {
      a.repeat = parse_int(flag, value, 1);
    } else if (flag == "--acc") {
      if (value != "int32" && value != "int64") usage_error("unknown accumulator '" + value + "' (int32, int64)");
      a.acc64 = value == "int64";
      a.acc_given = true;
    } else {
      usage_error("unknown flag '" + flag + "'");
    }
  }
  if (!have_op || !have_type || !have_size) usage_error("--op, --type and --size are required");
  if (a.acc_given && a.type != "int32") usage_error("--acc applies to --type int32 only");
  if ((a.op == Op::kMin || a.op == Op::kArgMin) && a.n == 0)
    usage_error(a.op_name + " of an empty array has no answer");
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
  double kernel_ms = 0.0;  // median of the device call alone (cudaEvents)
  double wall_ms = 0.0;    // median of upload + call + read-back (host clock)
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
  return Timing{median(kernel), median(wall)};
}

// Times fn() `repeat` times on the host; the median in ms.
template <class Fn>
double time_host(int repeat, Fn fn) {
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    const double t0 = now_ms();
    fn();
    t.push_back(now_ms() - t0);
  }
  return median(t);
}

// CUB's offset type follows num_items: 32-bit counts where they fit (CUB's fast path).
template <class F>
cudaError_t with_count(std::size_t n, F f) {
  if (n <= std::numeric_limits<std::uint32_t>::max()) return f(static_cast<std::uint32_t>(n));
  return f(static_cast<std::uint64_t>(n));
}

// Device buffer freed on scope exit.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 1))); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(p); }
};

// Asks a CUB call for its temporary storage size and allocates it, outside any timing.
template <class Call>
DeviceBuffer make_temp(Call call, std::size_t* bytes) {
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
std::string value_str(float v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", static_cast<double>(v));
  return b;
}

struct Report {
  std::string result, expected;  // JSON values
  std::int64_t index = -1, expected_index = -1;  // argmin only
  bool verified = false;
  std::string error;  // why verification failed
  Timing t;
  double bytes = 0.0;  // bytes moved for gbps
  double seq_ms = 0.0;
  std::string acc;  // accumulator / output type, where it applies
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

int print_report(const Args& a, const DeviceDesc& d, const Report& r) {
  std::string s = "{\"variant\":\"cub\",\"op\":\"" + a.op_name + "\",\"type\":\"" + a.type +
                  "\",\"n\":" + std::to_string(a.n) + ",\"device\":\"" + json_escape(d.name) +
                  "\",\"driver\":" + std::to_string(d.driver) +
                  ",\"cub_version\":" + std::to_string(CUB_VERSION);
  if (!r.acc.empty()) s += ",\"acc\":\"" + r.acc + "\"";
  s += ",\"result\":" + r.result;
  if (a.op == Op::kArgMin) s += ",\"index\":" + std::to_string(r.index);
  s += ",\"expected\":" + r.expected;
  if (a.op == Op::kArgMin) s += ",\"expected_index\":" + std::to_string(r.expected_index);
  s += std::string(",\"verified\":") + (r.verified ? "true" : "false");
  if (!r.verified) s += ",\"error\":\"" + json_escape(r.error) + "\"";
  const double gbps = r.t.kernel_ms > 0 ? r.bytes / (r.t.kernel_ms * 1e6) : 0.0;
  const double speedup = r.t.kernel_ms > 0 ? r.seq_ms / r.t.kernel_ms : 0.0;
  s += ",\"kernel_ms\":" + num(r.t.kernel_ms) + ",\"wall_ms\":" + num(r.t.wall_ms) +
       ",\"gbps\":" + num(gbps) + ",\"seq_ms\":" + num(r.seq_ms) + ",\"speedup\":" + num(speedup) + "}";
  std::printf("%s\n", s.c_str());
  return r.verified ? 0 : kExitVerify;
}

// ---- host references ----

// Wrapping add in the accumulator type (unsigned arithmetic, so int overflow is defined).
template <class Acc>
Acc wrap_add(Acc a, std::int32_t v) {
  using U = std::make_unsigned_t<Acc>;
  return static_cast<Acc>(static_cast<U>(a) + static_cast<U>(static_cast<Acc>(v)));
}
inline float wrap_add(float a, float v) { return a + v; }

// Float tolerance of a sum of k terms: k * eps * sum|x|.
bool within(double got, long double exact, std::size_t k, long double abs_sum) {
  const long double bound = static_cast<long double>(k) * std::numeric_limits<float>::epsilon() * abs_sum;
  return std::fabs(static_cast<long double>(got) - exact) <= bound;
}

// ---- the operations ----

// cub::DeviceReduce::Sum of In into Out (int32 -> int64 accumulates in int64: CUB takes the
// accumulator from the output type).
template <class In, class Out>
Report run_sum(const Args& a, const std::vector<In>& x) {
  Report r;
  const std::size_t n = a.n;
  DeviceBuffer d_in(n * sizeof(In)), d_out(sizeof(Out));
  auto call = [&](void* tmp, std::size_t& bytes) {
    return with_count(n, [&](auto count) {
      return cub::DeviceReduce::Sum(tmp, bytes, d_in.as<const In>(), d_out.as<Out>(), count);
    });
  };
  std::size_t temp_bytes = 0;
  DeviceBuffer temp = make_temp(call, &temp_bytes);
  Out got{};
  r.t = time_runs(
      a, x.data(), d_in.p, n * sizeof(In), [&] { CUDA_CHECK(cudaMemset(d_out.p, 0xA5, sizeof(Out))); },
      [&] { return call(temp.p, temp_bytes); },
      [&] { CUDA_CHECK(cudaMemcpy(&got, d_out.p, sizeof(Out), cudaMemcpyDeviceToHost)); });
  // The sequential loop in the accumulator type, timed like clreduce's seq_ms.
  Out seq{};
  r.seq_ms = time_host(a.repeat, [&] {
    Out acc{};
    for (std::size_t i = 0; i < n; ++i) acc = wrap_add(acc, x[i]);
    seq = acc;
  });
  r.bytes = static_cast<double>(n * sizeof(In));
  r.result = value_str(got);
  if constexpr (std::is_floating_point_v<Out>) {
    long double exact = 0.0L, abs_sum = 0.0L;
    for (In v : x) {
      exact += v;
      abs_sum += std::fabs(static_cast<long double>(v));
    }
    r.expected = value_str(static_cast<Out>(exact));
    r.verified = within(got, exact, n, abs_sum);
    if (!r.verified) r.error = "float sum outside n*eps*sum|x| of the exact sum";
    r.acc = "float";
  } else {
    r.expected = value_str(seq);
    r.verified = got == seq;
    if (!r.verified) r.error = "integer sum differs";
    r.acc = sizeof(Out) == 8 ? "int64" : "int32";
  }
  return r;
}

// cub::DeviceReduce::Min.
template <class T>
Report run_min(const Args& a, const std::vector<T>& x) {
  Report r;
  const std::size_t n = a.n;
  DeviceBuffer d_in(n * sizeof(T)), d_out(sizeof(T));
  auto call = [&](void* tmp, std::size_t& bytes) {
    return with_count(n, [&](auto count) {
      return cub::DeviceReduce::Min(tmp, bytes, d_in.as<const T>(), d_out.as<T>(), count);
    });
  };
  std::size_t temp_bytes = 0;
  DeviceBuffer temp = make_temp(call, &temp_bytes);
  T got{};
  r.t = time_runs(
      a, x.data(), d_in.p, n * sizeof(T), [&] { CUDA_CHECK(cudaMemset(d_out.p, 0xA5, sizeof(T))); },
      [&] { return call(temp.p, temp_bytes); },
      [&] { CUDA_CHECK(cudaMemcpy(&got, d_out.p, sizeof(T), cudaMemcpyDeviceToHost)); });
  T seq{};
  r.seq_ms = time_host(a.repeat, [&] {
    T m = x[0];
    for (std::size_t i = 1; i < n; ++i) m = x[i] < m ? x[i] : m;
    seq = m;
  });
  r.bytes = static_cast<double>(n * sizeof(T));
  r.result = value_str(got);
  r.expected = value_str(seq);
  r.verified = got == seq;
  if (!r.verified) r.error = "minimum differs";
  return r;
}

// cub::DeviceReduce::ArgMin, the CCCL 3 overload writing the value and the int64 index to two
// outputs (the cub::KeyValuePair overload is deprecated). Index of the first minimum.
template <class T>
Report run_argmin(const Args& a, const std::vector<T>& x) {
  Report r;
  const std::size_t n = a.n;
  DeviceBuffer d_in(n * sizeof(T)), d_min(sizeof(T)), d_idx(sizeof(std::int64_t));
  auto call = [&](void* tmp, std::size_t& bytes) {
    return cub::DeviceReduce::ArgMin(tmp, bytes, d_in.as<const T>(), d_min.as<T>(),
                                     d_idx.as<::cuda::std::int64_t>(),
                                     static_cast<::cuda::std::int64_t>(n));
  };
  std::size_t temp_bytes = 0;
  DeviceBuffer temp = make_temp(call, &temp_bytes);
  T got{};
  std::int64_t got_idx = -1;
  r.t = time_runs(
      a, x.data(), d_in.p, n * sizeof(T),
      [&] {
        CUDA_CHECK(cudaMemset(d_min.p, 0xA5, sizeof(T)));
        CUDA_CHECK(cudaMemset(d_idx.p, 0xA5, sizeof(std::int64_t)));
      },
      [&] { return call(temp.p, temp_bytes); },
      [&] {
        CUDA_CHECK(cudaMemcpy(&got, d_min.p, sizeof(T), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&got_idx, d_idx.p, sizeof(std::int64_t), cudaMemcpyDeviceToHost));
      });
  T seq{};
  std::int64_t seq_idx = 0;
  r.seq_ms = time_host(a.repeat, [&] {
    T m = x[0];
    std::size_t k = 0;
    for (std::size_t i = 1; i < n; ++i)
      if (x[i] < m) {
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
  if (!r.verified) r.error = "minimum or its first index differs";
  return r;
}

// Widening int32 -> int64 scans: CUB's InclusiveSum/ExclusiveSum take the accumulator from the
// input type (int32 partials would overflow), so these use the scan-with-init forms with an
// int64 zero, which makes the accumulator int64 while reading the int32 input directly.
template <class In, class Out>
constexpr bool kWidening = !std::is_same_v<In, Out>;

// cub::DeviceScan inclusive or exclusive prefix sum of In into Out (n elements).
template <class In, class Out>
Report run_scan(const Args& a, const std::vector<In>& x, bool inclusive) {
  Report r;
  const std::size_t n = a.n;
  DeviceBuffer d_in(n * sizeof(In)), d_out(n * sizeof(Out));
  auto call = [&](void* tmp, std::size_t& bytes) {
    return with_count(n, [&](auto count) {
      const In* in = d_in.as<const In>();
      Out* out = d_out.as<Out>();
      if constexpr (kWidening<In, Out>) {
        if (inclusive)
          return cub::DeviceScan::InclusiveScanInit(tmp, bytes, in, out, ::cuda::std::plus<>{}, Out{0}, count);
        return cub::DeviceScan::ExclusiveScan(tmp, bytes, in, out, ::cuda::std::plus<>{}, Out{0}, count);
      } else {
        if (inclusive) return cub::DeviceScan::InclusiveSum(tmp, bytes, in, out, count);
        return cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, count);
      }
    });
  };
  std::size_t temp_bytes = 0;
  DeviceBuffer temp = make_temp(call, &temp_bytes);
  std::vector<Out> got(n);
  r.t = time_runs(
      a, x.data(), d_in.p, n * sizeof(In), [&] { CUDA_CHECK(cudaMemset(d_out.p, 0xA5, n * sizeof(Out))); },
      [&] { return call(temp.p, temp_bytes); },
      [&] { CUDA_CHECK(cudaMemcpy(got.data(), d_out.p, n * sizeof(Out), cudaMemcpyDeviceToHost)); });
  std::vector<Out> seq(n);
  r.seq_ms = time_host(a.repeat, [&] {
    Out acc{};
    if (inclusive) {
      for (std::size_t i = 0; i < n; ++i) seq[i] = acc = wrap_add(acc, x[i]);
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        seq[i] = acc;
        acc = wrap_add(acc, x[i]);
      }
    }
  });
  r.bytes = static_cast<double>(n * (sizeof(In) + sizeof(Out)));
  // The result shown is the last element of the scan (0 for an empty array).
  r.result = value_str(n ? got[n - 1] : Out{});
  std::size_t bad = n;
  if constexpr (std::is_floating_point_v<Out>) {
    // Element i sums k = i + 1 (inclusive) or i (exclusive) terms: within k*eps*sum|terms| of
    // the long double prefix; the expected value shown is the last exact prefix, rounded.
    long double exact = 0.0L, abs_sum = 0.0L, last = 0.0L;
    for (std::size_t i = 0; i < n; ++i) {
      if (inclusive) {
        exact += x[i];
        abs_sum += std::fabs(static_cast<long double>(x[i]));
      }
      if (bad == n && !within(got[i], exact, inclusive ? i + 1 : i, abs_sum)) bad = i;
      last = exact;
      if (!inclusive) {
        exact += x[i];
        abs_sum += std::fabs(static_cast<long double>(x[i]));
      }
    }
    r.expected = value_str(static_cast<Out>(last));
    r.acc = "float";
  } else {
    for (std::size_t i = 0; i < n; ++i)
      if (got[i] != seq[i]) {
        bad = i;
        break;
      }
    r.expected = value_str(n ? seq[n - 1] : Out{});
    r.acc = sizeof(Out) == 8 ? "int64" : "int32";
  }
  r.verified = bad == n;
  if (!r.verified) r.error = "element " + std::to_string(bad) + " differs from the host scan";
  return r;
}

// cudaMemcpy device-to-device of n elements: the bandwidth ceiling (gbps counts read + write).
template <class T>
Report run_copy(const Args& a, const std::vector<T>& x) {
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

template <class T>
Report run_op(const Args& a, const std::vector<T>& x) {
  const bool inclusive = a.op == Op::kScanInclusive;
  switch (a.op) {
    case Op::kSum:
      if constexpr (std::is_same_v<T, std::int32_t>)
        return a.acc64 ? run_sum<T, std::int64_t>(a, x) : run_sum<T, std::int32_t>(a, x);
      else
        return run_sum<T, T>(a, x);
    case Op::kMin:
      return run_min(a, x);
    case Op::kArgMin:
      return run_argmin(a, x);
    case Op::kScanInclusive:
    case Op::kScanExclusive:
      if constexpr (std::is_same_v<T, std::int32_t>)
        return a.acc64 ? run_scan<T, std::int64_t>(a, x, inclusive) : run_scan<T, std::int32_t>(a, x, inclusive);
      else
        return run_scan<T, T>(a, x, inclusive);
    case Op::kCopy:
      return run_copy(a, x);
  }
  return Report{};
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  const DeviceDesc dev = describe_device();
  CUDA_CHECK(cudaFree(nullptr));  // create the context before any timing
  if (a.type == "int32") return print_report(a, dev, run_op(a, generate<std::int32_t>(a.n, a.seed)));
  return print_report(a, dev, run_op(a, generate<float>(a.n, a.seed)));
}
