// clreduce.hpp: clreduce's public API. Open an OpenCL device, reduce or scan a host array or a
// cl::Buffer of that device with a named variant, and get the value, timings, the plan and the
// verdict against the sequential reference. A program includes this header and nothing else of
// clreduce's; everything behind it (variants, sessions, probes) is private and may change.
//
// Thread safety, object by object:
// - the free functions (Device::list(), result_dtype(), the variant name lists, save_npy(),
//   version(), build_options() and those of types.hpp, options.hpp and error.hpp, including
//   set_timeout_handler()) may be called from several threads at once;
// - values (Options, Result, DeviceSummary, Tuning, Value, HostArray, Bytes, Error) are as safe
//   as a standard library value: any number of readers, or one writer, at a time;
// - opening Devices is safe from several threads at once: the library serialises OpenCL's
//   platform and device enumeration and its context creation, which some runtimes (PoCL) do not
//   make thread-safe;
// - a Device is used by one thread at a time: threads may each use their own Device at once,
//   two Devices on one OpenCL device too, but never share one without a mutex of their own;
// - a plan (Reduction, Scan, Compaction) belongs to its Device: the Device and its plans are
//   used by one thread at a time, as one object (they share the Device's queue and state).
//   The events a plan returns may be waited for from any thread, as any OpenCL event.
// The library takes none of its settings from the environment unless the program asks it to
// (Device::from_environment(), tuning_from_env()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/error.hpp"
#include "clreduce/export.hpp"
#include "clreduce/options.hpp"
#include "clreduce/types.hpp"
#include "clreduce/version.hpp"

namespace clreduce {

// One OpenCL device, as Device::list() reports it.
struct CLREDUCE_API DeviceSummary {
  std::size_t index = 0;  // global index across platforms, what Device(index) takes
  std::string name;       // CL_DEVICE_NAME
  std::string platform;   // platform name
  std::string vendor;
  std::string type;      // "GPU", "CPU", "ACCELERATOR", ...
  std::string version;   // CL_DEVICE_VERSION
  std::string opencl_c;  // CL_DEVICE_OPENCL_C_VERSION
  unsigned compute_units = 0;
  std::uint64_t global_mem = 0;  // bytes
  std::uint64_t max_alloc = 0;   // bytes, the largest single buffer
  std::uint64_t local_mem = 0;   // bytes
  std::size_t max_wg_size = 0;
  bool fp64 = false;
};

// How one reduce or scan runs.
struct CLREDUCE_API Options {
  std::string variant;  // variant name; "" picks "fast" (reduce) or "scan-fast" (scan)
  std::string acc;      // accumulator type name for sum and prod; "" NumPy's (int32 -> int64),
                        // "int32"/"uint32" keeps 32 bits, wrapping
  std::size_t local_size = 0;  // work-group size override; 0 the variant's choice
  int warmup = 0;              // untimed runs before the timed ones
  int repeat = 1;              // timed runs; timings are their medians
  // Check the result against the sequential reference on the host: a copy of a host array (a
  // device buffer is read back) and a sequential pass over it, many times the reduction's own
  // cost. Off unless the caller asks; Result::checked and verified say what happened.
  bool verify = false;
  // Derived ops and user expressions (reduce(Derived, ...), reduce(const Expression&, ...)).
  std::string where;  // an OpenCL C predicate over x, y, z, w (the inputs' elements at one index):
                      // where it is false the element is left out, as NumPy's where=; "" none
  double ddof = 0;    // var, std: the divisor is count - ddof (NumPy's ddof)
  // Scans only.
  bool exclusive = false;              // element i combines the elements before it (identity first)
  std::vector<std::uint8_t> segments;  // empty, or one flag per element: nonzero starts a segment
};

// The outcome of one reduce or scan.
struct CLREDUCE_API Result {
  std::string variant;         // the variant that ran ("expr" for derived ops and user expressions)
  std::string name;            // the op's name: op_name(op), derived_name(), or "expr"
  Op op = Op::kSum;            // the built-in op (kSum for derived ops and user expressions)
  DType type = DType::kInt32;  // element type
  DType acc = DType::kInt64;   // accumulator type: the type of value and of a scan's output
  std::size_t n = 0;
  // A reduction's result (value.index: argmin/argmax's first index of the extreme); a scan's
  // last output element. For n = 0: the identity (sum, prod), or for a scan nothing.
  Value value;
  std::string plan;  // the launch plan: "wg=256 groups=4 items=1 vec=4 path=..."
  // Where the input lay (reductions and scans of host arrays; a device buffer's range): "whole,
  // in place" (the caller's memory read where it lies, no copy: CPU devices), "whole, copied",
  // "4 chunks of 1048576, resident" (copied chunk by chunk), "streamed: ...", "range copied" (a
  // buffer's range the variant cannot read where it starts), or "" (a device buffer read where
  // it lies).
  std::string layout;
  double kernel_ms = 0.0;  // median over the timed runs of the summed kernel times of all launches
  double kernel_ms_min = 0.0;  // fastest and slowest timed run
  double kernel_ms_max = 0.0;  // (all three NaN on a program's queue without profiling that the
                               // Device runs on itself: QueueUse::kProgram)
  double wall_ms = 0.0;  // median host-clock time of upload (host arrays), launches and read-back
  std::size_t launches = 0;  // kernel launches in one run
  std::size_t builds = 0;    // programs compiled during this call (0 once the device has them)
  bool checked = false;      // the result was compared with the sequential reference
  bool verified =
      false;            // checked and equal (floats: within the stated bound; `exact`: bit for bit)
  std::string verdict;  // "verified", "not checked", why it failed, or "verified as an overflow:
                        // ..." (±inf or NaN where an order of float operations may overflow)
  Value expected;       // the reference's value (checked only)

  // The index of argmin/argmax's extreme (first one; first NaN if any); -1 for other ops.
  std::int64_t index() const { return value.index; }
};

// The DType of a C++ element type: 32- and 64-bit integers, float, double.
template <class T> constexpr DType dtype_of() {
  static_assert(
      std::is_arithmetic_v<T> && !std::is_same_v<T, bool> && (sizeof(T) == 4 || sizeof(T) == 8),
      "clreduce takes 32- and 64-bit integers, float and double");
  if constexpr (std::is_floating_point_v<T>) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "no long double");
    return std::is_same_v<T, float> ? DType::kFloat : DType::kDouble;
  } else if constexpr (sizeof(T) == 4) {
    return std::is_signed_v<T> ? DType::kInt32 : DType::kUInt32;
  } else {
    return std::is_signed_v<T> ? DType::kInt64 : DType::kUInt64;
  }
}

// The type of op's result on elements of type t (a scan's output element): NumPy's rule, or
// acc (Options::acc) where it is allowed. Throws Error for an accumulator the op cannot take.
CLREDUCE_API DType result_dtype(Op op, DType t, const std::string& acc = "");

// Variant names, in the order the CLI's --variant all runs them.
CLREDUCE_API std::vector<std::string> reduce_variant_names();
CLREDUCE_API std::vector<std::string> scan_variant_names();

// Writes n elements of type t as a 1-D little-endian .npy (NumPy's format), through a temporary
// file renamed into place: `path` never holds a partial file. Throws Error(Errc::kInput) when
// it cannot.
CLREDUCE_API void save_npy(const std::string& path, DType t, const void* data, std::size_t n);

// ---- Reductions beyond the six ops: derived ops, the user's own expressions, segments, axes.

// The derived ops, each one pass of the reduction engine with an accumulator of one to four
// values (the command's --op dot ... logsumexp), verified against the host's reference in higher
// precision within the op's bound (docs/LIBRARY.md lists them):
// - kDot: sum of x*y over two arrays; floats as a compensated sum of exact products, integers
//   wrapping modulo 2^64 (int64, or uint64 when both are unsigned);
// - kNorm2: sqrt(sum x^2), scaled as BLAS nrm2 (no overflow or underflow the norm has not);
// - kMean, kVar, kStd: one pass, partial moments combined pairwise (Chan et al.); Options::ddof;
//   NaN for no element (NumPy's, without its warning);
// - kCount: the elements where Options::where holds (all of them without it); kAny, kAll:
//   whether any or all (of those) are nonzero, 0 or 1;
// - kLogSumExp: log(sum exp x), max-shifted, in one pass.
// Float results are in the working type: double, or float on a device without fp64 (int32 and
// other integers are read as that type); kCount, kAny, kAll give int64.
enum class Derived { kDot, kNorm2, kMean, kVar, kStd, kCount, kAny, kAll, kLogSumExp };
CLREDUCE_API std::string derived_name(Derived op);  // "dot", "norm2", ..., "logsumexp"
// Parses a name; throws Error(kUsage) listing the valid names when unknown.
CLREDUCE_API Derived parse_derived(const std::string& name);
CLREDUCE_API const std::vector<Derived>& all_derived();

// A user-defined reduction in OpenCL C (the command's --map, --reduce, --identity, --post, --acc;
// docs/CLI.md "User-defined reductions"). Each field is one expression: text that would end it
// or add code (';', braces, '#', comment markers) is refused (Errc::kUsage) before any build, and
// one that does not compile is Errc::kUsage with the compiler's message pointing into the text.
// Before its first launch on a call's data, a check on the device refuses (Errc::kUsage, saying
// which law failed on which values) a reduce that is not associative or commutative on sample
// values, or an identity that is not neutral. Built once per distinct text on a Device.
struct CLREDUCE_API Expression {
  std::string map;       // over x, y, z, w: the elements of input arrays 0 to 3 at one index
  std::string reduce;    // over a and b, two accumulator values
  std::string identity;  // the neutral element: reduce(identity, a) == a
  std::string post;      // over a (the reduced value) and n (the element count, a long); "" none
  // The accumulator type's name (as dtype_name()), the type of every expression's value and of
  // the result; "" picks double if an input is double, else float if one is float, else int64
  // if one is signed, else uint64.
  std::string acc;
};

// One input array of a derived op or a user expression: elements of `type` in host memory, or
// in a buffer created in the Device's context. The n of the call is every array's length.
struct CLREDUCE_API ArrayRef {
  ArrayRef(DType t, const void* host) : type(t), data(host) {}
  ArrayRef(DType t, const cl::Buffer& device_buffer) : type(t), buffer(device_buffer) {}
  template <class T>
  ArrayRef(const std::vector<T>& v) : type(dtype_of<T>()), data(v.data()) {}  // NOLINT: implicit

  DType type;
  const void* data = nullptr;  // host memory, or null for a buffer
  cl::Buffer buffer;
};

// Which elements each result of a segmented reduction combines.
struct CLREDUCE_API Segments {
  // S + 1 offsets (S >= 0), ascending, within [0, n]: result s combines elements [offsets[s],
  // offsets[s+1]) (CUB's begin = offsets[s], end = offsets[s+1]); an empty segment gives the
  // identity (min, max and the arg ops have none: Errc::kUsage naming it).
  static Segments from_offsets(std::vector<std::int64_t> offsets);
  // An N-dimensional C-order array of `shape` (n is the product) reduced along `axes` (negative
  // from the end, as NumPy; each at most once): one result per element of the kept axes, in C
  // order, the result's shape NumPy's (keepdims: the reduced axes kept as 1). Arg ops take one
  // axis and give the index along it. Reduced axes may form at most two runs between kept ones
  // (Errc::kUsage beyond).
  static Segments along_axes(std::vector<std::uint64_t> shape, std::vector<std::int64_t> axes,
                             bool keepdims = false);

  bool by_axes = false;
  std::vector<std::int64_t> offsets;  // from_offsets
  std::vector<std::uint64_t> shape;   // along_axes
  std::vector<std::int64_t> axes;
  bool keepdims = false;
};

// The outcome of one segmented reduction: every result, in C order.
struct CLREDUCE_API SegmentedResult {
  std::string name;            // the op's name, as Result::name
  DType type = DType::kInt32;  // the (first) input's element type
  DType acc = DType::kInt64;   // the results' type (arg ops: the element type of the extremes)
  std::size_t n = 0;
  std::vector<std::uint64_t> shape;   // the results' shape: (S,), or NumPy's for axes
  HostArray values;                   // one value of acc per result
  std::vector<std::int64_t> indices;  // arg ops: each extreme's first index within its segment
                                      // or along the axis (NumPy's); else empty
  std::string plan;
  double kernel_ms = 0.0;  // median over the timed runs of the launches' kernel time (NaN as
                           // Result::kernel_ms)
  double wall_ms = 0.0;    // median host-clock time of upload, launches and read-back
  std::size_t launches = 0;
  std::size_t builds = 0;
  bool checked = false;  // every result compared with its own segment's reference
  bool verified = false;
  std::string verdict;  // "verified", "not checked", or the first result that failed and why

  std::size_t results() const { return values.n; }
};

// Every wait on the device has a time limit (a minute plus a second per 256 MiB moved): past it
// a call throws Error(Errc::kTimeout); the device may then be hung, and destroying its Device may
// block, so a program may prefer to exit at once.
//
// An open device: its OpenCL context and profiling queue, and the programs built on it. Built
// programs, start-up probes and scratch buffers are kept for the Device's life, so calling
// reduce or scan again builds nothing. Thread safety: a Device, its queue and its tuning are
// used by one thread at a time; opening, using and destroying separate Devices from several
// threads at once is safe (see the top of this file).
class Reduction;
class Scan;
class Compaction;

// Where a Device made of the program's own objects runs its commands.
enum class QueueUse {
  // A queue of clreduce's own in the program's context (in order, profiling), after a marker
  // on the program's queue: any queue of the program's works, in order or out of order, and
  // Result::kernel_ms is always measured; each call pays for the hop between the two queues.
  kOwn,
  // The program's queue itself, which must be in order (an out-of-order one is Errc::kUsage):
  // a plan's commands follow the program's earlier ones on it with no marker, barrier or second
  // queue, and the program's later commands follow them; its events are that queue's. Where the
  // queue does not profile, Result::kernel_ms (and _min, _max, SegmentedResult::kernel_ms) is
  // NaN: no kernel time is measured (wall_ms is). Making a plan may wait for the queue (its
  // start-up checks run there).
  kProgram,
};

class CLREDUCE_API Device {
 public:
  // Every device of every platform under one global index. Throws Error when OpenCL has no
  // platform. Safe from any thread.
  static std::vector<DeviceSummary> list();

  // Opens device `spec`: a global index ("0") or a case-insensitive substring of its platform,
  // name, vendor or version ("nvidia", "pocl"). kernel_dir: where the .cl sources are; "" looks
  // beside the installed library (share/clreduce/cl), then in the source tree it was built
  // from. tuning: the knobs of options.hpp, by default their defaults. No environment variable
  // is read (from_environment() reads them). Throws Error when no device matches
  // (Errc::kUsage) or no kernels are found (kBuild). Safe from several threads at once.
  explicit Device(const std::string& spec = "0", const std::string& kernel_dir = "",
                  const Tuning& tuning = {});
  explicit Device(std::size_t index, const std::string& kernel_dir = "", const Tuning& tuning = {});
  // A Device on the program's own OpenCL objects: `context`, which must hold `device`, and
  // `queue`, of that context and device (in order or out of order, profiling or not). Buffers
  // of `context` are reduced and scanned where they are, with no copy; context() and queue()
  // return these objects. Each call first waits for every command the program enqueued on
  // `queue` before it (a marker; with no time limit: they are the program's), then runs on a
  // queue of clreduce's own in `context` (in order, profiling, for Result::kernel_ms) and
  // returns when its work is done, so the program's next commands see its results. The
  // objects are kept (retained) for the Device's life. kernel_dir and tuning as above. Throws
  // Error(Errc::kUsage) when they do not belong together. summary().index is the device's
  // global index, or Device::list().size() for one the list does not name (a sub-device).
  Device(const cl::Context& context, const cl::Device& device, const cl::CommandQueue& queue,
         const std::string& kernel_dir = "", const Tuning& tuning = {});
  // The same with a choice of queue (QueueUse): kOwn is the constructor above; kProgram runs
  // every call's commands on `queue` itself, in order with the program's (Errc::kUsage for an
  // out-of-order queue), the blocking calls too (each still waits for the program's earlier
  // commands first, with no time limit, then for its own within the limit).
  Device(const cl::Context& context, const cl::Device& device, const cl::CommandQueue& queue,
         QueueUse use, const std::string& kernel_dir = "", const Tuning& tuning = {});
  // Opens device `spec` with the settings the clreduce command takes from its environment, for
  // a program that wants its users to steer clreduce as they steer the command: the kernel
  // directory from CLREDUCE_KERNEL_DIR when it is set (else as above) and the knobs from the
  // CLREDUCE_<KEY> variables (tuning_from_env()). Throws Error(Errc::kUsage) naming the
  // variable whose value is out of range, and as the constructor.
  static Device from_environment(const std::string& spec = "0");
  ~Device();
  Device(Device&&) noexcept;
  Device& operator=(Device&&) noexcept;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceSummary& summary() const;
  const std::string& kernel_dir() const;
  // The device's OpenCL objects (the program's own, for a Device made of them). Create the
  // buffers you pass in context(); enqueue writes to them on queue() (in order with clreduce's
  // work) or finish your own queue first.
  cl::Context& context();
  cl::CommandQueue& queue();
  cl::Device device() const;
  // Where calls run: kOwn for every Device but one made with QueueUse::kProgram.
  QueueUse queue_use() const;
  // The tuning knobs; read when a plan is made, so a change applies to the next call.
  Tuning& tuning();

  // Reduces n elements of `type` at `data` (host memory, aligned at least to the element's size,
  // as a C++ array is). Arrays of any size: past one allocation (or tuning().max_chunk bytes)
  // they run in chunks, folded in order; past device memory (or with tuning().stream "on") they
  // stream through a few device buffers. On a CPU device (tuning().in_place "auto", or "on"
  // anywhere) the caller's memory is used in place, not copied (Result::layout says "in place"):
  // at any element alignment with the variants fast and exact, whose kernels read any start, at
  // a multiple of 128 bytes (and the device's base alignment) with the others; elsewhere, and
  // with in_place "off", it is copied. The array must not change until the call returns. Throws
  // Error: Errc::kUsage for an unknown variant or n = 0 with an op that has no identity (min,
  // max, argmin, argmax); kUnsupported for doubles on a device without fp64, or a variant whose
  // chunks' results cannot be folded (an array in chunks).
  // The engine's input types (float16, bool, int8, uint8, int16, uint16), which no variant
  // takes, run as the reduction engine's row for the op (the command line's, variant "expr"),
  // host arrays copied whole and in one piece, as a derived op's (Options::variant must be ""):
  // sum and prod accumulate as acc_dtype() says, float16 in float (Result::value is the float
  // accumulator's, a compensated sum; result_dtype() names NumPy's float16); min, max and the
  // arg ops give the element exactly (value.type the element type). Buffer ranges as below.
  Result reduce(Op op, DType type, const void* data, std::size_t n, const Options& options = {});
  template <class T> Result reduce(Op op, const std::vector<T>& data, const Options& options = {}) {
    return reduce(op, dtype_of<T>(), data.data(), data.size(), options);
  }
  // Reduces the first n elements of `type` of a buffer created in context(). Nothing is copied
  // to the host unless options.verify is true. A buffer of another context, or smaller than n
  // elements, is Errc::kUsage.
  Result reduce(Op op, DType type, const cl::Buffer& data, std::size_t n,
                const Options& options = {});
  // Reduces elements [first, first + n) of a buffer created in context(), at any element
  // offset: read where they lie by fast and exact (their kernels take the first element), and
  // by the others where the range starts at a multiple of the device's base alignment (a
  // sub-buffer); else the range is copied on the device first (Result::layout "range copied").
  // argmin/argmax's index counts from first. A range past the buffer's end is Errc::kUsage.
  Result reduce(Op op, DType type, const cl::Buffer& data, std::size_t first, std::size_t n,
                const Options& options = {});

  // Scans n elements of `type` at `in` into `out`: n elements of out_type, which must be
  // result_dtype(op, type, options.acc). Scans take sum, prod, min and max (else Errc::kUsage);
  // segment flags of another length than n are Errc::kInput. Arrays of any size, as reduce():
  // in chunks (each takes the running value of those before it) or streamed; on a CPU device
  // `in`, `out` (and the segment flags) are used in place where each starts at a multiple of
  // 128 bytes (and the device's base alignment), else copied (Result::layout says which).
  Result scan(Op op, DType type, const void* in, std::size_t n, DType out_type, void* out,
              const Options& options = {});
  template <class T, class A>
  Result scan(Op op, const std::vector<T>& in, std::vector<A>& out, const Options& options = {}) {
    out.resize(in.size());
    return scan(op, dtype_of<T>(), in.data(), in.size(), dtype_of<A>(), out.data(), options);
  }
  // Scans the first n elements of `type` of buffer `in` into buffer `out` (n elements of
  // result_dtype(op, type, options.acc)), both created in context().
  Result scan(Op op, DType type, const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
              const Options& options = {});
  // Scans elements [first, first + n) of `type` of buffer `in` into elements [out_first,
  // out_first + n) of buffer `out` (of result_dtype(op, type, options.acc)), at any element
  // offsets: a range that starts at a multiple of the device's base alignment is read or written
  // where it lies (a sub-buffer), another is copied on the device into scratch first (the input)
  // or after (the output; Result::layout names what was copied). Options::segments holds the
  // range's n flags. A range past its buffer's end is Errc::kUsage.
  Result scan(Op op, DType type, const cl::Buffer& in, std::size_t first, std::size_t n,
              const cl::Buffer& out, std::size_t out_first, const Options& options = {});

  // A derived op over `inputs` (kDot takes two, the others one; Options::where may name up to
  // four), each of n elements. Result::value is the result (acc: its type); Options::verify
  // checks it against the host's reference within the op's bound. Throws Error: Errc::kUsage for
  // the wrong number of arrays, a buffer of another context or too small, a `where` that is not
  // an expression or does not compile; kUnsupported as reduce().
  Result reduce(Derived op, const std::vector<ArrayRef>& inputs, std::size_t n,
                const Options& options = {});
  // A user expression over 1 to 4 arrays of n elements (the map names x to w: as many arrays).
  // Result::value is post(reduce of the mapped elements, n), or the reduced value without a
  // post; n = 0 gives post(identity, 0). Options::where leaves elements out; Options::verify
  // checks the value before post against one work-item applying the expressions in index order
  // (floats: within (gamma_depth + gamma_n) times the fold of |map|).
  Result reduce(const Expression& expression, const std::vector<ArrayRef>& inputs, std::size_t n,
                const Options& options = {});

  // Segmented reductions: every segment, or every line along the axes, reduced in one launch
  // (docs/LIBRARY.md, "Segments and axes"). A built-in op over n elements of `type` (host
  // memory or a buffer of context()); Options::acc as reduce(); Options::verify checks every
  // result against its own segment's sequential reference.
  SegmentedResult reduce_segments(Op op, DType type, const void* data, std::size_t n,
                                  const Segments& segments, const Options& options = {});
  SegmentedResult reduce_segments(Op op, DType type, const cl::Buffer& data, std::size_t n,
                                  const Segments& segments, const Options& options = {});
  // A derived op per segment (an empty one: mean, var and std give NaN, the others their value
  // for no element).
  SegmentedResult reduce_segments(Derived op, const std::vector<ArrayRef>& inputs, std::size_t n,
                                  const Segments& segments, const Options& options = {});
  // A user expression per segment: post(a, n) with n the segment's length.
  SegmentedResult reduce_segments(const Expression& expression, const std::vector<ArrayRef>& inputs,
                                  std::size_t n, const Segments& segments,
                                  const Options& options = {});

 private:
  friend class Reduction;
  friend class Scan;
  friend class Compaction;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- Calls that only enqueue. ----
// A plan is made once for a Device, an operation, an element type and the largest n it will
// take (max_n): its kernels are built and its scratch allocated then, so enqueue() allocates
// nothing and builds nothing. enqueue() checks its arguments, then enqueues its commands on
// the Device's clreduce queue (in order, profiling) after the events of `wait` (of the Device's
// context; a user event, a kernel of the program's, another plan's event), and, on a Device made
// of the program's own queue, after every command enqueued there before the call (a marker);
// on a Device made with QueueUse::kProgram, on the program's in-order queue itself, after the
// commands enqueued there before (and, where `wait` is not empty, a barrier on its events); it
// flushes that queue and returns at once with the event of its last command, complete when
// every result is written. Results stay on the device. Any argument error is thrown
// (clreduce::Error) before a command is enqueued: nothing is written. The Device must outlive
// its plans; a plan and its Device are used by one thread at a time (see the top of this file).

// What a plan is made with.
struct CLREDUCE_API PlanOptions {
  std::string variant;         // reductions: as Options::variant ("" picks "fast"); scans: any scan
                               // variant ("" picks scan-fast, whose path suits the device)
  std::string acc;             // the accumulator, as Options::acc
  std::size_t local_size = 0;  // work-group size override; 0 the variant's choice
  bool exclusive = false;      // scans: element i combines the elements before it
  bool segmented = false;      // scans: enqueue_segmented() takes one flag byte per element
  bool any_offset = false;     // scans: enqueue() takes ranges at any element offset (scratch
                               // for a copy of each array's range, max_n elements, made with the
                               // plan)
};

// A reduction that only enqueues: the result of in's first n elements (n <= max_n) written
// to a device buffer at a byte offset: result_bytes() bytes, the value of result_type(), and
// for argmin/argmax the first index of the extreme as an int64 at byte 8 after it (16 bytes
// in all, as the kernels' {value; index} struct: bytes 4-7 after a 4-byte value are padding,
// written with no meaning). For n = 0, sum and prod write
// their identity; min, max, argmin and argmax throw Errc::kUsage.
class CLREDUCE_API Reduction {
 public:
  // Throws Error as Device::reduce() does for the op, type, variant and accumulator.
  Reduction(Device& device, Op op, DType type, std::size_t max_n, const PlanOptions& options = {});
  ~Reduction();
  Reduction(Reduction&&) noexcept;
  Reduction& operator=(Reduction&&) noexcept;
  Reduction(const Reduction&) = delete;
  Reduction& operator=(const Reduction&) = delete;

  Op op() const;
  DType type() const;
  DType result_type() const;  // result_dtype(op, type, options.acc)
  std::size_t max_n() const;
  std::size_t result_bytes() const;  // the result type's size; 16 for argmin and argmax
  std::string plan() const;          // the launch plan ("wg=256 groups=4 ... path=...")

  // Reduces in[0, n) into out[out_offset, out_offset + result_bytes()). Throws Error
  // (Errc::kUsage) for n > max_n(), a buffer of another context or too small, an event of
  // another context.
  cl::Event enqueue(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                    std::size_t out_offset = 0, const std::vector<cl::Event>& wait = {});
  // Reduces in[first, first + n) (argmin/argmax's index counts from first) into out as above.
  // Plans of fast (the default) and exact read a range at any element; other variants only
  // where first * element size is a multiple of the device's base alignment (CL_DEVICE_MEM_
  // BASE_ADDR_ALIGN; else Errc::kUsage: a plan copies nothing).
  cl::Event enqueue(const cl::Buffer& in, std::size_t first, std::size_t n, const cl::Buffer& out,
                    std::size_t out_offset = 0, const std::vector<cl::Event>& wait = {});
  // The same with the event given back the OpenCL way: the last command's in *event, or, for
  // event = nullptr on a Device of QueueUse::kProgram, no event made at all (NVIDIA's driver
  // spends about 2 us a call making one; the program's in-order queue orders what follows).
  // On a Device of clreduce's own queue an event is made and dropped.
  void enqueue(const cl::Buffer& in, std::size_t first, std::size_t n, const cl::Buffer& out,
               std::size_t out_offset, const std::vector<cl::Event>& wait, cl::Event* event);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A scan that only enqueues: in's first n elements (n <= max_n) into out's first n, or any
// range of in into any range of out, elements of result_type(); segmented plans read one flag
// byte per element (cl_uchar, nonzero: a segment starts there) from a device buffer.
class CLREDUCE_API Scan {
 public:
  // Scans take sum, prod, min and max (else Errc::kUsage).
  Scan(Device& device, Op op, DType type, std::size_t max_n, const PlanOptions& options = {});
  ~Scan();
  Scan(Scan&&) noexcept;
  Scan& operator=(Scan&&) noexcept;
  Scan(const Scan&) = delete;
  Scan& operator=(const Scan&) = delete;

  Op op() const;
  DType type() const;
  DType result_type() const;
  std::size_t max_n() const;
  std::string plan() const;

  // An unsegmented plan's scan (a segmented one throws Errc::kUsage). n = 0 enqueues only the
  // gate (the returned event completes with the wait list).
  cl::Event enqueue(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                    const std::vector<cl::Event>& wait = {});
  // A segmented plan's scan, flags[0, n) read on the device (an unsegmented one throws).
  cl::Event enqueue_segmented(const cl::Buffer& in, std::size_t n, const cl::Buffer& flags,
                              const cl::Buffer& out, const std::vector<cl::Event>& wait = {});
  // The scan of in[first, first + n) into out[out_first, out_first + n) (segmented: flags read
  // over in's range, flags[first, first + n)). Each array's range is read or written where it
  // lies when it starts at a multiple of the device's base alignment (CL_DEVICE_MEM_BASE_ADDR_
  // ALIGN; a sub-buffer); elsewhere a plan made with PlanOptions::any_offset copies it on the
  // device through its own scratch (the input and flags before the scan, the output after it),
  // and one made without throws Errc::kUsage. A range past its buffer's end is Errc::kUsage.
  cl::Event enqueue(const cl::Buffer& in, std::size_t first, std::size_t n, const cl::Buffer& out,
                    std::size_t out_first, const std::vector<cl::Event>& wait = {});
  // An unsegmented scan with the event given back as Reduction's enqueue(..., cl::Event*):
  // nullptr on a Device of QueueUse::kProgram makes none.
  void enqueue(const cl::Buffer& in, std::size_t first, std::size_t n, const cl::Buffer& out,
               std::size_t out_first, const std::vector<cl::Event>& wait, cl::Event* event);
  cl::Event enqueue_segmented(const cl::Buffer& in, std::size_t first, std::size_t n,
                              const cl::Buffer& flags, const cl::Buffer& out, std::size_t out_first,
                              const std::vector<cl::Event>& wait = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// How an element x compares with a value.
enum class Cmp { kLess, kLessEqual, kGreater, kGreaterEqual, kEqual, kNotEqual };

// What a compaction keeps: the elements x where `x cmp value` holds (Predicate{Cmp::kGreater,
// 0.5}), compared exactly in the element's type (an int32 x > 0.5 is x > 0; a NaN element
// passes only kNotEqual, as in C); or, when expr is set, where that OpenCL C expression over x
// is true (the language of the command's --where: "x > 0.5f && x < 2"; checked as text first,
// and Errc::kUsage with the compiler's message when it does not compile).
struct CLREDUCE_API Predicate {
  Predicate() = default;
  Predicate(Cmp c, double v) : cmp(c), value(v) {}

  Cmp cmp = Cmp::kNotEqual;
  double value = 0.0;
  std::string expr;

  // The predicate of an expression over x.
  static Predicate where(const std::string& expression);
};

// Stream compaction that only enqueues, built on the scan: in's first n elements where the
// predicate holds, in order, to out[0, kept) (partition: the others after them, in order, to
// out[kept, n)), and kept, a uint64 (8 bytes, little-endian, any alignment), to count at byte
// count_offset. out holds n elements of type() (select: at least kept; the rest of out is left as
// it was); out may not overlap in.
class CLREDUCE_API Compaction {
 public:
  enum class Mode { kSelect, kPartition };
  // Throws Error(Errc::kUsage) for an expression that is not one or does not compile,
  // kUnsupported for doubles on a device without fp64.
  Compaction(Device& device, DType type, std::size_t max_n, const Predicate& predicate,
             Mode mode = Mode::kSelect, const PlanOptions& options = {});
  ~Compaction();
  Compaction(Compaction&&) noexcept;
  Compaction& operator=(Compaction&&) noexcept;
  Compaction(const Compaction&) = delete;
  Compaction& operator=(const Compaction&) = delete;

  DType type() const;
  std::size_t max_n() const;
  Mode mode() const;
  std::string plan() const;  // the scan's path

  cl::Event enqueue(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                    const cl::Buffer& count, std::size_t count_offset = 0,
                    const std::vector<cl::Event>& wait = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clreduce
