// chunks.hpp: one array on one device, whatever its size. It lies on the device whole or in
// chunks that each fit one allocation (resident: uploaded once, all on the device together), or
// streams through a few device buffers from host memory with uploads overlapped with kernels
// (streamed: for arrays past device memory); on CPU devices the host arrays are used in place.
// One driver for every plan: a reduction's chunks are folded in chunk order (run/fold.hpp), a
// scan carries its running value (and, segmented, the segment state) from chunk to chunk.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/types.hpp"
#include "reduce/variant.hpp"
#include "run/fold.hpp"
#include "runtime/context.hpp"
#include "scan/scan_variant.hpp"

namespace clreduce {

struct ChunkLayout {
  enum class Kind { kResident, kStreamed };
  Kind kind = Kind::kResident;
  bool in_place = false;   // device buffers over the host arrays (CL_MEM_USE_HOST_PTR)
  std::size_t n = 0;       // elements of the array
  std::size_t chunk = 0;   // elements per chunk (the last may be shorter); >= 1
  std::size_t chunks = 0;  // ceil(n / chunk); 0 for n = 0
  std::size_t slots = 0;   // streamed: chunks in flight (device buffer sets)
  std::string source;      // streamed: "write", "stage", "stage-memcpy" or "host-ptr"
  std::size_t align = 0;   // in place: the alignment the host arrays have (in_place_aligned())

  std::size_t begin(std::size_t c) const { return c * chunk; }
  std::size_t length(std::size_t c) const { return std::min(chunk, n - c * chunk); }
  bool streamed() const { return kind == Kind::kStreamed; }
  // "whole", "4 chunks of 536870912, resident", "streamed: 64 chunks of 268435456, 3 in
  // flight, stage", with ", in place" where it applies.
  std::string str() const;
};

// Element sizes of one run: the input, the segment flags (0 when none) and the output (scans;
// 0 for reductions), in bytes.
struct ElementBytes {
  std::size_t in = 4;
  std::size_t flags = 0;
  std::size_t out = 0;
  std::size_t total() const { return in + flags + out; }
};

// The host arrays a layout may use in place: the input, the segment flags and the output (null
// where there is none, or where the memory is yet to be allocated: the library's own allocations
// are page-aligned).
struct HostArrays {
  const void* in = nullptr;
  const void* flags = nullptr;
  const void* out = nullptr;
};

// The device memory a run on d plans to use: the device's global memory, or the device-memory
// knob where that is less.
std::uint64_t planned_memory(const DeviceInfo& d, const Tuning& t);

// The device memory a layout's buffers take for elements of sizes e: none in place (they are
// the host arrays), every chunk where resident, the slots in flight where streamed.
std::uint64_t device_bytes(const ChunkLayout& L, ElementBytes e);

// The alignment in bytes that host memory used in place on device d must have: the device's
// base address alignment (what its own buffers get, and what its kernels may assume: PoCL's
// vectorised loads fault on doubles 8 bytes off a 16-byte boundary), at least long16's 128 bytes,
// the least the OpenCL specification allows.
std::size_t in_place_alignment(const DeviceInfo& d);

// Whether every chunk of every array in host starts at a multiple of `align` (0:
// in_place_alignment(d)) under `layout` (a layout's chunks start at multiples of its chunk
// length).
bool in_place_aligned(const DeviceInfo& d, const ChunkLayout& layout, ElementBytes e,
                      const HostArrays& host, std::size_t align = 0);

// Chooses how n elements lie on device d under the tuning knobs (max-chunk, stream,
// stream-bytes, stream-slots, stream-source, in-place). Host arrays are used in place (CPU
// devices, or in-place=on) only where in_place_aligned(..., align) holds for them; otherwise the
// device gets copies, as on any other device. align: 0 for in_place_alignment(d), what every
// kernel may assume; a plan whose kernels read from any element (ReducePlan::any_start()) may
// pass the element size.
ChunkLayout choose_layout(const DeviceInfo& d, const Tuning& t, std::size_t n, ElementBytes e,
                          const HostArrays& host = {}, std::size_t align = 0);

// Copies n bytes from src to dst (any alignments) with streaming (non-temporal) stores on x86-64,
// memcpy elsewhere: a staging buffer that the device's DMA reads next is written without first
// reading its lines into the caches (three passes over host memory per element streamed, not
// four), and the stores are fenced before it returns.
void copy_streaming(unsigned char* dst, const unsigned char* src, std::size_t n);

// Throws Error(Errc::kUnsupported) when n elements of t exceed the device's largest allocation
// (for a caller's own device buffer, which cannot be chunked).
void check_fits(const DeviceInfo& d, DType t, std::size_t n);

// The device side of one array under a layout: buffers, uploads, and the chunked launches of any
// plan made for problems of layout.chunk elements (or fewer, when n is smaller). Made once per
// array and device, reused by every plan run on it. Waits poll with a time limit (Errc::kTimeout
// names `what`).
class ChunkedArray {
 public:
  // data: the input (alive as long as this); flags: n segment flags or null; out: the host
  // output of n elements of e.out bytes (scans; null for reductions). An in-place layout whose
  // host arrays are not aligned for it (in_place_aligned() at layout.align) is refused:
  // Error(Errc::kInternal).
  ChunkedArray(Context& ctx, const ChunkLayout& layout, const HostArray& data,
               const std::uint8_t* flags, unsigned char* out, ElementBytes e);
  ~ChunkedArray();
  ChunkedArray(const ChunkedArray&) = delete;
  ChunkedArray& operator=(const ChunkedArray&) = delete;

  const ChunkLayout& layout() const { return layout_; }
  // Resident layouts: uploads every chunk (input and flags) once and waits; returns the host
  // milliseconds it took (0 when in place or streamed, which upload inside each run).
  double upload(const std::string& what);
  // Called after each chunk's launches are enqueued (done, total): progress on long runs.
  void on_chunk(std::function<void(std::size_t, std::size_t)> f) { progress_ = std::move(f); }

  // A reduction over every chunk with `plan`; returns the folded result. Appends the plan's
  // launch events to events. The partial results are reset to a sentinel first (prepare()).
  // pieces: when given (a fold made for plan's problem, out_bytes() and kind), every chunk's
  // out bytes are added to it too, in chunk order, indices from the array's start: a caller
  // that folds this array with others (devices' shares) or combines its exact state (ranks).
  // what names the run in a timeout's message.
  void prepare_reduce(std::size_t out_bytes, const std::string& what);
  Value reduce(ReducePlan& plan, std::vector<cl::Event>& events, const std::string& what,
               ReduceFold* pieces = nullptr);

  // The chunks of several arrays made with one layout on one context (the inputs of one
  // reduction: chunk c is the same elements of each), in chunk order: launch(c, ins) enqueues
  // chunk c's kernels on the context's queue, ins[k] holding array k's elements of chunk c from
  // its element 0; the first `chunks` chunks (all: SIZE_MAX). Resident layouts are uploaded
  // first (upload()); streamed ones write each chunk of every array while the chunks before it
  // run, and a chunk's kernels wait for its writes. Returns with every launch enqueued and
  // flushed, not waited for. reduce() runs its chunks through it.
  using ChunkLaunch = std::function<void(std::size_t, const std::vector<cl::Buffer>&)>;
  static void each_chunk(const std::vector<ChunkedArray*>& arrays, const ChunkLaunch& launch,
                         std::size_t chunks = SIZE_MAX);

  // Writes the output's sentinel where the device will write (resident: the device outputs
  // from the host output, which the caller has filled).
  void prepare_scan(const std::string& what);
  // A scan over every chunk with `plan` (carry-in when there is more than one chunk), the
  // output read back into the host output. Appends the plan's launch events to events.
  // read_back = false leaves a resident output on the device, for add_carry() then
  // read_output() (a streamed output comes back chunk by chunk whatever it says).
  // carry_in: the running value that reaches the array from before it (not segmented; a plan
  // made with carry_in), taken by the first chunk's launch: no second pass over the output.
  void scan(ScanPlan& plan, std::vector<cl::Event>& events, const std::string& what,
            bool read_back = true, const Value* carry_in = nullptr);
  // After scan(): what this array passes on to the pieces after it (its last running value, read
  // from the device, and whether a segment starts in it). `plan` made the scan.
  ScanCarry carry_out(const ScanPlan& plan, const std::string& what);
  // After scan(): the carry-in pass for a running value that reaches this array from before it
  // (a plan made with carry_in), on the device where the output is still there (resident, in
  // place), else on the host output; only up to the first segment start. Appends the pass's
  // launch events to events.
  void add_carry(ScanPlan& plan, const Value& carry, std::vector<cl::Event>& events,
                 const std::string& what);
  // After scan(..., false): reads a resident output back into the host output (in place: makes
  // the device's writes visible there) and waits.
  void read_output(const std::string& what);

 private:
  struct Slot {
    cl::Buffer in, flags, out;
    cl::Event done;     // the last kernel that used the slot
    cl::Event written;  // the last upload into it
    cl::Buffer stage;   // stream-source=stage: pinned staging buffer, mapped at stage_ptr
    unsigned char* stage_ptr = nullptr;
  };
  cl::Buffer make_input(std::size_t c, const unsigned char* host, std::size_t bytes);
  // Streamed: enqueues the upload of chunk c into its slot (after the slot's last kernel).
  void stream_in(std::size_t c);
  TimeLimit timeout(double bytes) const;

  Context& ctx_;
  ChunkLayout layout_;
  const HostArray& data_;
  const std::uint8_t* flags_;
  unsigned char* out_;
  ElementBytes e_;
  std::size_t piece_;
  cl::CommandQueue xfer_;    // streamed: uploads and read-backs, beside the kernels' queue
  std::vector<Slot> slots_;  // resident: one per chunk; streamed: layout.slots
  cl::Buffer noflags_;
  // Reductions: each chunk's out bytes at a base-aligned stride in one buffer.
  cl::Buffer partials_;
  std::vector<cl::Buffer> partial_views_;
  std::size_t partial_stride_ = 0, partial_bytes_ = 0;
  std::vector<unsigned char> partial_host_;
  std::function<void(std::size_t, std::size_t)> progress_;
};

}  // namespace clreduce
