// transfer.hpp: every fill, write, read and copy of device memory goes through here, split into
// pieces well under 2^31 bytes and 2^31 pattern elements: one NVIDIA driver hangs the GPU on a
// fill of 2^31 to 2^32-1 pattern elements and silently fills too little above. Waits poll the
// event status against a time limit instead of blocking forever, and ask the program's
// interrupt check (set_interrupt_check) whether to stop.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/error.hpp"

namespace clreduce {

// The default and largest piece: 2^30 bytes (a quarter of the smallest size that hangs).
constexpr std::size_t kMaxTransferPiece = std::size_t{1} << 30;

// Splits [offset, offset + bytes) into pieces of at most `piece` bytes (piece rounded down to a
// multiple of `align`, at least align) and calls f(piece_offset, piece_bytes) for each in order.
template <class F>
void for_each_piece(std::size_t offset, std::size_t bytes, std::size_t piece, std::size_t align,
                    F&& f) {
  piece = piece / align * align;
  if (piece == 0) piece = align;
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t len = bytes - done < piece ? bytes - done : piece;
    f(offset + done, len);
    done += len;
  }
}

// Enqueues zeroing of buf[offset, offset + bytes) in pieces (a 4-byte pattern where offset and
// bytes allow, else 1-byte). Appends one event per piece to events when given.
void enqueue_zero(cl::CommandQueue& q, const cl::Buffer& buf, std::size_t offset, std::size_t bytes,
                  std::size_t piece, std::vector<cl::Event>* events = nullptr);
// Enqueues a write of host src to buf[offset, offset + bytes) in pieces, non-blocking: src must
// stay alive until the queue has finished. Appends one event per piece when events is given;
// the first piece waits for `waits` when given (the rest follow it on the in-order queue).
void enqueue_write(cl::CommandQueue& q, const cl::Buffer& buf, std::size_t offset,
                   std::size_t bytes, const void* src, std::size_t piece,
                   std::vector<cl::Event>* events = nullptr,
                   const std::vector<cl::Event>* waits = nullptr);
// Enqueues a read of buf[offset, offset + bytes) into host dst in pieces, non-blocking.
void enqueue_read(cl::CommandQueue& q, const cl::Buffer& buf, std::size_t offset, std::size_t bytes,
                  void* dst, std::size_t piece, std::vector<cl::Event>* events = nullptr,
                  const std::vector<cl::Event>* waits = nullptr);
// Enqueues a device-to-device copy in pieces, non-blocking.
void enqueue_copy(cl::CommandQueue& q, const cl::Buffer& src, const cl::Buffer& dst,
                  std::size_t src_offset, std::size_t dst_offset, std::size_t bytes,
                  std::size_t piece, std::vector<cl::Event>* events = nullptr);

// A wait's time limit: seconds (0: none) and, when the user set it (--timeout, the timeout
// knob), the default limit of the same work (default_timeout_s()), so the message of a wait past
// it can tell a limit the user set short (raise --timeout) from a device that may have stopped
// responding. From a plain number: a limit the user did not set.
struct TimeLimit {
  double s = 0;
  double user_default_s = 0;  // > 0: s is the user's; the default limit it replaced
  TimeLimit(double seconds = 0) : s(seconds) {}  // NOLINT: a number is a limit of clreduce's own
  bool users() const { return user_default_s > 0; }
};

// The limit for work that moves `bytes`: the timeout knob's `timeout_s` when set (> 0), else
// default_timeout_s(bytes).
TimeLimit time_limit(double timeout_s, double bytes);

// Waits until event e has completed, polling its status; past the limit (0: no limit) throws
// Error(Errc::kTimeout) saying `what` did not finish, and what to do about it. Once the wait has
// lasted 5 ms it asks interrupt_requested(); when that says stop, it waits for everything
// enqueued on e's queue (drain()) and throws Error(Errc::kInterrupted). On a CPU device
// (its threads share the host's cores with this one) so does a command seen complete whose
// device clock says it took longer, from the enqueue of `since` (a command earlier on the same
// queue: the run's first) or else of e itself to e's end, whenever the poll saw it (on queues
// that profile). A command that ended in an error throws Error(Errc::kRuntime). The event's
// queue must have been flushed.
void wait(const cl::Event& e, TimeLimit limit, const std::string& what,
          const cl::Event* since = nullptr);

// Flushes q and waits until everything enqueued on it has completed, as wait() on a marker
// enqueued last (`since`: the first command of the work waited for, on q).
void finish(cl::CommandQueue& q, TimeLimit limit, const std::string& what,
            const cl::Event* since = nullptr);

// Whether the program's interrupt check (set_interrupt_check) asks to stop work that began at
// `since` on this thread: asked once the work has lasted 5 ms, at most every 20 ms per thread, and
// never while the thread drains queues after an interrupt (false there, and without a check).
bool interrupt_requested(std::chrono::steady_clock::time_point since);
// Whether an interrupt check is set: chunk loops then keep only a few chunks enqueued ahead of
// the device, so that an interrupt waits for those alone.
bool interrupt_check_set();
// Waits for everything enqueued so far on each queue (null or empty ones skipped), within the
// limit and asking no interrupt check: what an interrupted call does before it unwinds, since its
// commands may still read or write the caller's memory and the call's buffers.
void drain(const std::vector<cl::CommandQueue*>& queues, TimeLimit limit, const std::string& what);
// The Error an interrupted call throws: Errc::kInterrupted, "interrupted: " + what.
Error interrupted(const std::string& what);
// Runs f(); where it throws Error(Errc::kInterrupted), first drains `queues` (the other queues of
// the work, whose commands may still use the caller's memory), then lets the Error go on.
template <class F>
void drain_on_interrupt(const std::vector<cl::CommandQueue*>& queues, TimeLimit limit,
                        const std::string& what, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.category() == Errc::kInterrupted)
      drain(queues, limit, what + " (stopping after an interrupt)");
    throw;
  }
}

// A generous time limit for work that moves `bytes` bytes: 60 s plus 1 s per 256 MiB (a host
// link at 0.25 GB/s would still finish), so only a device that stopped making progress trips it.
double default_timeout_s(double bytes);

}  // namespace clreduce
