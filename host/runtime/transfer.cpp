// transfer.cpp: transfers in pieces, and waits that poll instead of blocking forever.
#include "runtime/transfer.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "clreduce/error.hpp"

namespace clreduce {
namespace {

cl::Event* next(std::vector<cl::Event>* events, cl::Event& scratch) {
  if (!events) return &scratch;
  events->emplace_back();
  return &events->back();
}

}  // namespace

void enqueue_zero(cl::CommandQueue& q, const cl::Buffer& buf, std::size_t offset, std::size_t bytes,
                  std::size_t piece, std::vector<cl::Event>* events) {
  cl::Event e;
  if (offset % 4 == 0 && bytes % 4 == 0) {
    for_each_piece(offset, bytes, piece, 4, [&](std::size_t off, std::size_t len) {
      q.enqueueFillBuffer(buf, cl_uint{0}, off, len, nullptr, next(events, e));
    });
  } else {
    for_each_piece(offset, bytes, piece, 1, [&](std::size_t off, std::size_t len) {
      q.enqueueFillBuffer(buf, cl_uchar{0}, off, len, nullptr, next(events, e));
    });
  }
}

void enqueue_write(cl::CommandQueue& q, const cl::Buffer& buf, std::size_t offset,
                   std::size_t bytes, const void* src, std::size_t piece,
                   std::vector<cl::Event>* events, const std::vector<cl::Event>* waits) {
  cl::Event e;
  const auto* p = static_cast<const unsigned char*>(src);
  bool first = true;
  for_each_piece(offset, bytes, piece, 1, [&](std::size_t off, std::size_t len) {
    q.enqueueWriteBuffer(buf, CL_FALSE, off, len, p + (off - offset),
                         first && waits && !waits->empty() ? waits : nullptr, next(events, e));
    first = false;
  });
}

void enqueue_read(cl::CommandQueue& q, const cl::Buffer& buf, std::size_t offset, std::size_t bytes,
                  void* dst, std::size_t piece, std::vector<cl::Event>* events,
                  const std::vector<cl::Event>* waits) {
  cl::Event e;
  auto* p = static_cast<unsigned char*>(dst);
  bool first = true;
  for_each_piece(offset, bytes, piece, 1, [&](std::size_t off, std::size_t len) {
    q.enqueueReadBuffer(buf, CL_FALSE, off, len, p + (off - offset),
                        first && waits && !waits->empty() ? waits : nullptr, next(events, e));
    first = false;
  });
}

void enqueue_copy(cl::CommandQueue& q, const cl::Buffer& src, const cl::Buffer& dst,
                  std::size_t src_offset, std::size_t dst_offset, std::size_t bytes,
                  std::size_t piece, std::vector<cl::Event>* events) {
  cl::Event e;
  for_each_piece(0, bytes, piece, 1, [&](std::size_t off, std::size_t len) {
    q.enqueueCopyBuffer(src, dst, src_offset + off, dst_offset + off, len, nullptr,
                        next(events, e));
  });
}

namespace {
std::atomic<TimeoutHandler> timeout_handler{nullptr};

// Seconds the device took from the enqueue of `since` (or of e) to e's end, by its own clock;
// negative where the queue does not profile (or reports no enqueue time).
double device_seconds(const cl::Event& e, const cl::Event* since) {
  cl_ulong queued = 0, end = 0;
  if (clGetEventProfilingInfo(since ? (*since)() : e(), CL_PROFILING_COMMAND_QUEUED, sizeof queued,
                              &queued, nullptr) != CL_SUCCESS ||
      clGetEventProfilingInfo(e(), CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) !=
          CL_SUCCESS ||
      queued == 0 || end < queued)
    return -1.0;
  return static_cast<double>(end - queued) * 1e-9;
}

}  // namespace

void set_timeout_handler(TimeoutHandler handler) { timeout_handler.store(handler); }

void wait(const cl::Event& e, double timeout_s, const std::string& what, const cl::Event* since) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto timed_out = [&] {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", timeout_s);
    const Error error(Errc::kTimeout, what + " did not finish within " + limit +
                                          " s (--timeout); the device may have stopped responding");
    if (const TimeoutHandler handler = timeout_handler.load()) handler(error);
    throw error;
  };
  // Short waits (most launches) are caught by yielding polls for the first 2 ms; after that the
  // poll sleeps, backing off to 5 ms, so a long wait costs no CPU.
  auto sleep = std::chrono::microseconds(50);
  for (;;) {
    const cl_int status = e.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>();
    if (status == CL_COMPLETE) {
      // A command that ended is judged by the device's own clock where its queue profiles: on a
      // loaded host this thread can be held up (before the wait, or in it) past the end of work
      // that itself ran late, and the verdict must not depend on when it was scheduled.
      const double took = device_seconds(e, since);
      if (timeout_s > 0 && took > timeout_s) timed_out();
      return;
    }
    if (status < 0)
      throw Error(Errc::kRuntime, what + " failed on the device: " + cl_error_name(status) + " (" +
                                      std::to_string(status) + ")");
    const double waited = std::chrono::duration<double>(clock::now() - start).count();
    if (timeout_s > 0 && waited > timeout_s) timed_out();
    if (waited < 2e-3) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(sleep);
    if (sleep < std::chrono::milliseconds(5)) sleep *= 2;
  }
}

void finish(cl::CommandQueue& q, double timeout_s, const std::string& what,
            const cl::Event* since) {
  cl::Event marker;
  q.enqueueMarkerWithWaitList(nullptr, &marker);
  q.flush();
  wait(marker, timeout_s, what, since);
}

double default_timeout_s(double bytes) { return 60.0 + bytes / double(std::size_t{1} << 28); }

}  // namespace clreduce
