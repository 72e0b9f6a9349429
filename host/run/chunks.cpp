// chunks.cpp: layouts and the chunk driver (resident, streamed, in place).
#include "run/chunks.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>  // SSE2: streaming stores (every x86-64 has them)
#endif

#include "clreduce/error.hpp"
#include "core/checked.hpp"
#include "core/parallel.hpp"
#include "run/fold.hpp"
#include "run/timing.hpp"
#include "runtime/transfer.hpp"

namespace clreduce {

namespace {

constexpr std::size_t kGiB = std::size_t{1} << 30;
// Chunks past this many elements are cut at a multiple of it (aligned loads, whole groups).
constexpr std::size_t kChunkGrain = 4096;
// With an interrupt check set: the chunks a launch loop keeps enqueued ahead of the device.
constexpr std::size_t kInFlight = 4;

std::size_t round_chunk(std::size_t c) {
  return c > kChunkGrain ? c / kChunkGrain * kChunkGrain : c;
}

// Copies n bytes, in parallel for large n; `streaming`: with copy_streaming().
void parallel_copy(unsigned char* dst, const unsigned char* src, std::size_t n, bool streaming) {
  constexpr std::size_t kPiece = std::size_t{1} << 22;
  const std::size_t pieces = (n + kPiece - 1) / kPiece;
  parallel_for(pieces, pieces > 4, [&](std::size_t k) {
    const std::size_t at = k * kPiece;
    if (streaming)
      copy_streaming(dst + at, src + at, std::min(kPiece, n - at));
    else
      std::memcpy(dst + at, src + at, std::min(kPiece, n - at));
  });
}

}  // namespace

void copy_streaming(unsigned char* dst, const unsigned char* src, std::size_t n) {
#if defined(__x86_64__) || defined(_M_X64)
  // Unaligned 16-byte loads, aligned streaming stores; the ends by memcpy.
  const std::size_t head =
      std::min(n, (16 - reinterpret_cast<std::uintptr_t>(dst) % 16) % std::size_t{16});
  std::memcpy(dst, src, head);
  std::size_t i = head;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  for (; i + 16 <= n; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  std::memcpy(dst + i, src + i, n - i);
  _mm_sfence();  // the streaming stores visible before the caller hands the memory on
#else
  std::memcpy(dst, src, n);
#endif
}

std::string ChunkLayout::str() const {
  std::string s;
  if (chunks <= 1 && !streamed()) {
    s = "whole";
  } else {
    s = (streamed() ? "streamed: " : "") + std::to_string(chunks) + " chunk" +
        (chunks == 1 ? "" : "s") + " of " + std::to_string(chunk);
    if (streamed())
      s += ", " + std::to_string(slots) + " in flight, " + source;
    else
      s += ", resident";
  }
  if (in_place) s += ", in place";
  return s;
}

std::uint64_t planned_memory(const DeviceInfo& d, const Tuning& t) {
  return t.device_memory ? std::min<std::uint64_t>(d.global_mem, t.device_memory) : d.global_mem;
}

std::uint64_t device_bytes(const ChunkLayout& L, ElementBytes e) {
  if (L.in_place) return 0;
  const std::uint64_t elements = L.streamed() ? std::uint64_t{L.slots} * L.chunk : L.n;
  return elements * e.total();
}

std::size_t in_place_alignment(const DeviceInfo& d) {
  return std::max<std::size_t>(d.base_align, 128);
}

bool in_place_aligned(const DeviceInfo& d, const ChunkLayout& layout, ElementBytes e,
                      const HostArrays& host, std::size_t align) {
  if (align == 0) align = in_place_alignment(d);
  const auto aligned = [&](const void* p, std::size_t size) {
    if (!p || size == 0) return true;
    return reinterpret_cast<std::uintptr_t>(p) % align == 0 &&
           (layout.chunks <= 1 || layout.chunk * size % align == 0);
  };
  return aligned(host.in, e.in) && aligned(host.flags, e.flags) && aligned(host.out, e.out);
}

namespace {

ChunkLayout layout_for(const DeviceInfo& d, const Tuning& t, std::size_t n, ElementBytes e,
                       bool in_place) {
  ChunkLayout L;
  L.n = n;
  L.in_place = in_place;
  const std::size_t widest = std::max({e.in, e.flags, e.out, std::size_t{1}});
  std::size_t cap = std::max<std::size_t>(1, static_cast<std::size_t>(d.max_alloc) / widest);
  if (t.max_chunk) cap = std::min(cap, std::max<std::size_t>(1, t.max_chunk / e.in));
  const double need = static_cast<double>(n) * static_cast<double>(e.total());
  const auto memory = static_cast<double>(planned_memory(d, t));
  const bool stream =
      !L.in_place && (t.stream == "on" || (t.stream == "auto" && need > 0.85 * memory));
  if (!stream) {
    L.chunk = n <= cap ? std::max<std::size_t>(n, 1) : round_chunk(cap);
  } else {
    L.kind = ChunkLayout::Kind::kStreamed;
    L.slots = t.stream_slots;
    const std::size_t budget =
        t.stream_bytes ? t.stream_bytes
                       : std::min<std::size_t>(4 * kGiB, static_cast<std::size_t>(memory / 2));
    const std::size_t per = std::max<std::size_t>(1, budget / (L.slots * e.total()));
    L.chunk =
        std::max<std::size_t>(1, round_chunk(std::min({cap, per, std::max<std::size_t>(n, 1)})));
    // auto: through pinned staging buffers, the one source near the link's rate on NVIDIA's driver
    // (docs/PERF.md, "Large arrays": 0.81x the pinned copy, where a write from pageable memory
    // made 0.13x and a CL_MEM_USE_HOST_PTR copy 0.23x).
    L.source = t.stream_source == "auto" ? "stage" : t.stream_source;
  }
  L.chunks = n / L.chunk + (n % L.chunk != 0);  // n + chunk - 1 would wrap near 2^64
  if (L.streamed()) L.slots = std::min<std::size_t>(L.slots, std::max<std::size_t>(L.chunks, 1));
  return L;
}

}  // namespace

ChunkLayout choose_layout(const DeviceInfo& d, const Tuning& t, std::size_t n, ElementBytes e,
                          const HostArrays& host, std::size_t align) {
  const bool in_place = t.in_place == "on" || (t.in_place == "auto" && d.type == "CPU");
  ChunkLayout L = layout_for(d, t, n, e, in_place);
  L.align = align ? align : in_place_alignment(d);
  // Memory the kernels could not read where it lies (a .npy whose data starts at byte 70, a
  // share or chunk that starts off the alignment) is copied to the device instead.
  if (L.in_place && !in_place_aligned(d, L, e, host, L.align)) L = layout_for(d, t, n, e, false);
  return L;
}

void check_fits(const DeviceInfo& d, DType t, std::size_t n) {
  if (n > d.max_alloc / dtype_size(t))
    throw Error(Errc::kUnsupported, std::to_string(n) + " elements of " + dtype_name(t) +
                                        " exceed " + d.name + "'s largest allocation (" +
                                        std::to_string(d.max_alloc) + " bytes)");
}

ChunkedArray::ChunkedArray(Context& ctx, const ChunkLayout& layout, const HostArray& data,
                           const std::uint8_t* flags, unsigned char* out, ElementBytes e)
    : ctx_(ctx),
      layout_(layout),
      data_(data),
      flags_(flags),
      out_(out),
      e_(e),
      piece_(ctx.tuning().transfer_piece) {
  if (!flags_) e_.flags = 0;
  if (layout_.in_place &&
      !in_place_aligned(ctx.info(), layout_, e_, HostArrays{data.bytes.data(), flags, out},
                        layout_.align))
    throw Error(Errc::kInternal,
                "internal: host arrays used in place are not aligned to " +
                    std::to_string(layout_.align ? layout_.align : in_place_alignment(ctx.info())) +
                    " bytes (choose_layout() was not given them)");
  noflags_ = ctx.zeroed_buffer(1);
  if (layout_.chunks == 0) return;
  cl::Context& cc = ctx.context();
  try {
    if (layout_.streamed()) {
      xfer_ = cl::CommandQueue(cc, ctx.info().device, 0);
      slots_.resize(layout_.slots);
      for (Slot& s : slots_) {
        s.in = cl::Buffer(cc, CL_MEM_READ_ONLY, layout_.chunk * e_.in);
        if (e_.flags) s.flags = cl::Buffer(cc, CL_MEM_READ_ONLY, layout_.chunk * e_.flags);
        if (e_.out) s.out = cl::Buffer(cc, CL_MEM_READ_WRITE, layout_.chunk * e_.out);
        if (layout_.source == "stage" || layout_.source == "stage-memcpy") {
          s.stage = cl::Buffer(cc, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, layout_.chunk * e_.in);
          cl::Event mapped;
          s.stage_ptr = static_cast<unsigned char*>(ctx.queue().enqueueMapBuffer(
              s.stage, CL_FALSE, CL_MAP_WRITE, 0, layout_.chunk * e_.in, nullptr, &mapped));
          ctx.queue().flush();
          wait(mapped, timeout(static_cast<double>(layout_.chunk * e_.in)),
               "mapping a staging buffer");
        }
      }
      return;
    }
    slots_.resize(layout_.chunks);
    for (std::size_t c = 0; c < layout_.chunks; ++c) {
      Slot& s = slots_[c];
      const std::size_t at = layout_.begin(c), len = layout_.length(c);
      auto* in_host = const_cast<unsigned char*>(data_.bytes.data() + at * e_.in);
      if (layout_.in_place) {
        s.in = cl::Buffer(cc, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, len * e_.in, in_host);
        if (e_.flags)
          s.flags = cl::Buffer(cc, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, len,
                               const_cast<std::uint8_t*>(flags_ + at));
        if (e_.out)
          s.out = cl::Buffer(cc, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, len * e_.out,
                             out_ + at * e_.out);
      } else {
        s.in = cl::Buffer(cc, CL_MEM_READ_ONLY, len * e_.in);
        if (e_.flags) s.flags = cl::Buffer(cc, CL_MEM_READ_ONLY, len * e_.flags);
        if (e_.out) s.out = cl::Buffer(cc, CL_MEM_READ_WRITE, len * e_.out);
      }
    }
  } catch (const cl::Error& err) {
    throw Error(Errc::kRuntime, "cannot allocate the array's device buffers (" + layout_.str() +
                                    "): " + cl_error_name(err.err()) +
                                    "; try a smaller --max-chunk or --tune stream=on");
  }
}

ChunkedArray::~ChunkedArray() {
  try {
    for (Slot& s : slots_)
      if (s.stage_ptr) ctx_.queue().enqueueUnmapMemObject(s.stage, s.stage_ptr);
    if (!slots_.empty() && slots_.front().stage_ptr)  // no interrupt: nothing to stop here
      drain({&ctx_.queue()}, timeout(0), "unmapping the staging buffers");
  } catch (...) {  // a device that failed: nothing more to release here
  }
}

TimeLimit ChunkedArray::timeout(double bytes) const { return ctx_.time_limit(bytes); }

double ChunkedArray::upload(const std::string& what) {
  if (layout_.streamed() || layout_.in_place || layout_.chunks == 0) return 0.0;
  const double t0 = now_ms();
  double bytes = 0;
  for (std::size_t c = 0; c < layout_.chunks; ++c) {
    const std::size_t at = layout_.begin(c), len = layout_.length(c);
    enqueue_write(ctx_.queue(), slots_[c].in, 0, len * e_.in, data_.bytes.data() + at * e_.in,
                  piece_);
    if (e_.flags) enqueue_write(ctx_.queue(), slots_[c].flags, 0, len, flags_ + at, piece_);
    bytes += static_cast<double>(len * (e_.in + e_.flags));
  }
  finish(ctx_.queue(), timeout(bytes), what + " (upload)");
  return now_ms() - t0;
}

void ChunkedArray::stream_in(std::size_t c) {
  const std::size_t k = slots_.size();
  Slot& s = slots_[c % k];
  const std::size_t at = layout_.begin(c), len = layout_.length(c), bytes = len * e_.in;
  std::vector<cl::Event> waits;
  if (c >= k) waits.push_back(s.done);  // the slot's last kernel has read it
  std::vector<cl::Event> evs;
  const unsigned char* src = data_.bytes.data() + at * e_.in;
  if (layout_.source == "stage" || layout_.source == "stage-memcpy") {
    if (c >= k) wait(s.written, timeout(static_cast<double>(bytes)), "an upload");
    parallel_copy(s.stage_ptr, src, bytes, layout_.source == "stage");
    enqueue_write(xfer_, s.in, 0, bytes, s.stage_ptr, piece_, &evs, &waits);
  } else if (layout_.source == "host-ptr") {
    const cl::Buffer host(ctx_.context(), CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, bytes,
                          const_cast<unsigned char*>(src));
    bool first = true;
    for_each_piece(0, bytes, piece_, 1, [&](std::size_t off, std::size_t n) {
      evs.emplace_back();
      xfer_.enqueueCopyBuffer(host, s.in, off, off, n, first ? &waits : nullptr, &evs.back());
      first = false;
    });
  } else {
    enqueue_write(xfer_, s.in, 0, bytes, src, piece_, &evs, &waits);
  }
  if (e_.flags) enqueue_write(xfer_, s.flags, 0, len, flags_ + at, piece_, &evs, &waits);
  s.written = evs.back();
  xfer_.flush();
}

void ChunkedArray::prepare_reduce(std::size_t out_bytes, const std::string& what) {
  const std::size_t chunks = std::max<std::size_t>(layout_.chunks, 1);
  const std::size_t stride =
      (out_bytes + ctx_.base_align() - 1) / ctx_.base_align() * ctx_.base_align();
  if (stride != partial_stride_ || out_bytes != partial_bytes_) {
    partial_stride_ = stride;
    partial_bytes_ = out_bytes;
    partials_ = cl::Buffer(ctx_.context(), CL_MEM_READ_WRITE,
                           checked_bytes(chunks, stride, "the chunks' results"));
    partial_views_.clear();
    for (std::size_t c = 0; c < chunks; ++c)
      partial_views_.push_back(ctx_.view(partials_, c * stride, out_bytes));
  }
  // A sentinel, so an unwritten result cannot pass.
  partial_host_.assign(stride * chunks, 0xA5);
  enqueue_write(ctx_.queue(), partials_, 0, partial_host_.size(), partial_host_.data(), piece_);
  finish(ctx_.queue(), timeout(static_cast<double>(partial_host_.size())),
         what + " (result reset)");
}

void ChunkedArray::each_chunk(const std::vector<ChunkedArray*>& arrays, const ChunkLaunch& launch,
                              std::size_t upto) {
  if (arrays.empty()) return;
  ChunkedArray& first = *arrays.front();
  const ChunkLayout& L = first.layout_;
  for (const ChunkedArray* a : arrays)
    if (&a->ctx_ != &first.ctx_ || a->layout_.n != L.n || a->layout_.chunk != L.chunk ||
        a->layout_.streamed() != L.streamed() || a->slots_.size() != first.slots_.size())
      throw Error(Errc::kInternal, "internal: arrays of one launch laid out differently");
  cl::CommandQueue& q = first.ctx_.queue();
  const std::size_t chunks = std::min(L.chunks, upto);
  // With an interrupt check set, at most kInFlight chunks run ahead of the one launched: an
  // interrupt (asked between chunks and in the wait) then waits for those alone, not for every
  // chunk enqueued at once. ends[c % kInFlight]: the end of chunk c's kernels.
  const bool windowed = interrupt_check_set() && chunks > kInFlight;
  std::vector<cl::Event> ends(windowed ? kInFlight : 0);
  std::vector<cl::CommandQueue*> queues{&q};
  for (ChunkedArray* a : arrays) queues.push_back(&a->xfer_);  // streamed: the uploads'
  const TimeLimit limit = first.timeout(static_cast<double>(L.n * first.e_.in));
  const std::string what = "the launches of " + std::to_string(chunks) + " chunks";
  const auto since = std::chrono::steady_clock::now();
  const auto next_chunk = [&](std::size_t c) {
    if (windowed && c >= kInFlight) wait(ends[c % kInFlight], limit, what);
    if (interrupt_requested(since)) throw interrupted(what + " (after " + std::to_string(c) + ")");
  };
  std::vector<cl::Buffer> ins(arrays.size());
  drain_on_interrupt(queues, limit, what, [&] {
    if (!L.streamed()) {
      for (std::size_t c = 0; c < chunks; ++c) {
        next_chunk(c);
        for (std::size_t k = 0; k < arrays.size(); ++k) ins[k] = arrays[k]->slots_[c].in;
        launch(c, ins);
        if (windowed) {
          q.enqueueMarkerWithWaitList(nullptr, &ends[c % kInFlight]);
          q.flush();
        }
        if (first.progress_) first.progress_(c + 1, L.chunks);
      }
      q.flush();
      return;
    }
    const std::size_t k = first.slots_.size();
    std::size_t next_up = 0;
    for (std::size_t c = 0; c < chunks; ++c) {
      next_chunk(c);
      for (; next_up < chunks && next_up < c + k; ++next_up)
        for (ChunkedArray* a : arrays) a->stream_in(next_up);
      std::vector<cl::Event> ready;
      for (std::size_t j = 0; j < arrays.size(); ++j) {
        Slot& s = arrays[j]->slots_[c % k];
        ready.push_back(s.written);
        ins[j] = s.in;
      }
      q.enqueueBarrierWithWaitList(&ready);
      launch(c, ins);
      cl::Event done;
      q.enqueueMarkerWithWaitList(nullptr, &done);
      for (ChunkedArray* a : arrays) a->slots_[c % k].done = done;
      if (windowed) ends[c % kInFlight] = done;
      q.flush();
      if (first.progress_) first.progress_(c + 1, L.chunks);
    }
  });
}

Value ChunkedArray::reduce(ReducePlan& plan, std::vector<cl::Event>& events,
                           const std::string& what, ReduceFold* pieces) {
  cl::CommandQueue& q = ctx_.queue();
  const std::size_t chunks = layout_.chunks;
  each_chunk({this}, [&](std::size_t c, const std::vector<cl::Buffer>& in) {
    plan.enqueue(in.front(), 0, layout_.length(c), partial_views_[c], events);
  });
  enqueue_read(q, partials_, 0, partial_stride_ * chunks, partial_host_.data(), piece_);
  // The time limit counts on the device from the run's first launch: this thread may enqueue the
  // marker only after the kernels have ended (a loaded host).
  finish(q, timeout(static_cast<double>(layout_.n * e_.in)), what,
         events.empty() ? nullptr : &events.front());
  const ReduceProblem& p = plan.problem();
  if (pieces)
    for (std::size_t c = 0; c < chunks; ++c)
      pieces->add(partial_host_.data() + c * partial_stride_, layout_.begin(c));
  if (chunks == 1) {  // the plan's own result, whatever its out bytes hold beyond it
    Value v = Value::from_bytes(p.acc(), partial_host_.data());
    if (is_arg_op(p.op)) std::memcpy(&v.index, partial_host_.data() + 8, 8);
    return v;
  }
  // Correctly rounded plans (exact): their exact states added, rounded once.
  ReduceFold fold(p, plan.out_bytes(), plan.policy().correctly_rounded);
  for (std::size_t c = 0; c < chunks; ++c)
    fold.add(partial_host_.data() + c * partial_stride_, layout_.begin(c));
  return fold.result();
}

void ChunkedArray::prepare_scan(const std::string& what) {
  if (layout_.streamed() || layout_.in_place) return;
  double bytes = 0;
  for (std::size_t c = 0; c < layout_.chunks; ++c) {
    const std::size_t len = layout_.length(c);
    enqueue_write(ctx_.queue(), slots_[c].out, 0, len * e_.out, out_ + layout_.begin(c) * e_.out,
                  piece_);
    bytes += static_cast<double>(len * e_.out);
  }
  finish(ctx_.queue(), timeout(bytes), what + " (output reset)");
}

void ChunkedArray::scan(ScanPlan& plan, std::vector<cl::Event>& events, const std::string& what,
                        bool read_back, const Value* carry_in) {
  cl::CommandQueue& q = ctx_.queue();
  const ScanProblem& p = plan.problem();
  const std::size_t chunks = layout_.chunks;
  const double run_bytes = static_cast<double>(layout_.n * e_.total());
  Value carry;
  // The running value after chunk c - 1, whose output is in `out`: read back its last element.
  auto carry_after = [&](std::size_t c, const cl::Buffer& out) {
    const std::size_t len = layout_.length(c - 1), end = layout_.begin(c - 1) + len;
    unsigned char last[8] = {};
    q.enqueueReadBuffer(out, CL_FALSE, (len - 1) * e_.out, e_.out, last);
    finish(q, timeout(run_bytes), what);
    const Value last_out = Value::from_bytes(p.acc_type, last);
    const Value last_in = Value::from_bytes(data_.type, data_.bytes.data() + (end - 1) * e_.in);
    carry = scan_carry(p.op, p.acc_type, p.exclusive, last_out, last_in);
  };
  // Between chunks, an interrupt (set_interrupt_check) ends the scan; the kernels' queue and
  // the read-backs' (streamed) end first.
  const auto since = std::chrono::steady_clock::now();
  const auto next_chunk = [&](std::size_t c) {
    if (interrupt_requested(since))
      throw interrupted(what + " (after " + std::to_string(c) + " of " + std::to_string(chunks) +
                        " chunks)");
  };
  drain_on_interrupt({&q, &xfer_}, timeout(run_bytes), what, [&] {
    if (!layout_.streamed()) {
      for (std::size_t c = 0; c < chunks; ++c) {
        next_chunk(c);
        Slot& s = slots_[c];
        if (c > 0) carry_after(c, slots_[c - 1].out);
        plan.enqueue(s.in, e_.flags ? s.flags : noflags_, s.out, 0, layout_.length(c),
                     c > 0 ? &carry : carry_in, events);
        if (progress_) progress_(c + 1, chunks);
      }
      if (read_back)
        read_output(what);
      else
        q.flush();
      return;
    }
    const std::size_t k = slots_.size();
    std::size_t next_up = 0;
    for (std::size_t c = 0; c < chunks; ++c) {
      next_chunk(c);
      for (; next_up < chunks && next_up < c + k; ++next_up) stream_in(next_up);
      Slot& s = slots_[c % k];
      if (c > 0) carry_after(c, slots_[(c - 1) % k].out);
      const std::vector<cl::Event> ready{s.written};
      q.enqueueBarrierWithWaitList(&ready);
      plan.enqueue(s.in, e_.flags ? s.flags : noflags_, s.out, 0, layout_.length(c),
                   c > 0 ? &carry : carry_in, events);
      q.enqueueMarkerWithWaitList(nullptr, &s.done);
      q.flush();
      const std::vector<cl::Event> done{s.done};
      enqueue_read(xfer_, s.out, 0, layout_.length(c) * e_.out, out_ + layout_.begin(c) * e_.out,
                   piece_, nullptr, &done);
      xfer_.flush();
      if (progress_) progress_(c + 1, chunks);
    }
    finish(q, timeout(run_bytes), what);
    finish(xfer_, timeout(run_bytes), what + " (read-back)");
  });
}

void ChunkedArray::read_output(const std::string& what) {
  if (layout_.streamed() || layout_.chunks == 0) return;
  cl::CommandQueue& q = ctx_.queue();
  for (std::size_t c = 0; c < layout_.chunks; ++c) {
    const std::size_t len = layout_.length(c);
    if (layout_.in_place) {  // the host output is the device's: map it to see the writes
      void* m = q.enqueueMapBuffer(slots_[c].out, CL_FALSE, CL_MAP_READ, 0, len * e_.out);
      q.enqueueUnmapMemObject(slots_[c].out, m);
    } else {
      enqueue_read(q, slots_[c].out, 0, len * e_.out, out_ + layout_.begin(c) * e_.out, piece_);
    }
  }
  finish(q, timeout(static_cast<double>(layout_.n * e_.out)), what);
}

ScanCarry ChunkedArray::carry_out(const ScanPlan& plan, const std::string& what) {
  ScanCarry r;
  if (layout_.n == 0) return r;
  const ScanProblem& p = plan.problem();
  const std::size_t c = layout_.chunks - 1, len = layout_.length(c), end = layout_.n;
  unsigned char last[8] = {};
  if (layout_.streamed()) {  // the output is on the host already
    finish(xfer_, timeout(static_cast<double>(layout_.n * e_.out)), what + " (read-back)");
    std::memcpy(last, out_ + (end - 1) * e_.out, e_.out);
  } else {
    ctx_.queue().enqueueReadBuffer(slots_[c].out, CL_FALSE, (len - 1) * e_.out, e_.out, last);
    finish(ctx_.queue(), timeout(static_cast<double>(layout_.n * e_.out)), what);
  }
  const Value last_out = Value::from_bytes(p.acc_type, last);
  const Value last_in = Value::from_bytes(data_.type, data_.bytes.data() + (end - 1) * e_.in);
  r.value = scan_carry(p.op, p.acc_type, p.exclusive, last_out, last_in);
  r.reset = e_.flags && first_flag(flags_, layout_.n) < layout_.n;
  r.empty = false;
  return r;
}

void ChunkedArray::add_carry(ScanPlan& plan, const Value& carry, std::vector<cl::Event>& events,
                             const std::string& what) {
  if (layout_.n == 0) return;
  const ScanProblem& p = plan.problem();
  if (layout_.streamed()) {
    finish(xfer_, timeout(static_cast<double>(layout_.n * e_.out)), what + " (read-back)");
    apply_carry_host(p.op, p.acc_type, out_, layout_.n, e_.flags ? flags_ : nullptr, carry);
    return;
  }
  for (std::size_t c = 0; c < layout_.chunks; ++c) {
    Slot& s = slots_[c];
    const std::size_t len = layout_.length(c);
    plan.enqueue_carry(e_.flags ? s.flags : noflags_, s.out, 0, len, carry, events);
    // A segment start ends the carry's reach.
    if (e_.flags && first_flag(flags_ + layout_.begin(c), len) < len) break;
  }
  ctx_.queue().flush();
}

}  // namespace clreduce
