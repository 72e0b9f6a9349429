// transfer.cpp: transfers in pieces, and waits that poll instead of blocking forever.
#include "runtime/transfer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
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
std::atomic<InterruptCheck> interrupt_check{nullptr};
// When this thread last asked the interrupt check; above 0 while it drains queues after one.
thread_local std::chrono::steady_clock::time_point last_asked{};
thread_local int draining = 0;

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

// Set by the runtime's completion callback; the waiting thread sleeps on it.
struct Completion {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
};

void CL_CALLBACK on_complete(cl_event, cl_int, void* hold) {
  auto* c = static_cast<std::shared_ptr<Completion>*>(hold);
  {
    const std::lock_guard<std::mutex> lock((*c)->m);
    (*c)->done = true;
  }
  (*c)->cv.notify_all();
  delete c;  // the waiter may be gone (a timeout): the callback owns its share of the flag
}

// Whether e's queue belongs to a CPU device: one that runs its kernels on this host's cores.
bool on_cpu(const cl::Event& e) {
  cl_command_queue q = nullptr;
  cl_device_id d = nullptr;
  cl_device_type type = 0;
  return clGetEventInfo(e(), CL_EVENT_COMMAND_QUEUE, sizeof q, &q, nullptr) == CL_SUCCESS && q &&
         clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof d, &d, nullptr) == CL_SUCCESS &&
         clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS &&
         (type & CL_DEVICE_TYPE_CPU);
}

// A flag the runtime sets when e completes; null where the callback cannot be set. For CPU
// devices: a thread that yields in a loop takes turns with the device's own threads, and one that
// sleeps between looks sees the end late (up to 5 ms). Woken by the callback, scan-fast at 2^24
// int32 on 2 cores took 6.11 ms of wall time for 6.00 ms of kernel, against 6.52 for 6.04
// polling (docs/PERF.md, "2 cores").
std::shared_ptr<Completion> completion(const cl::Event& e) {
  auto c = std::make_shared<Completion>();
  auto* hold = new std::shared_ptr<Completion>(c);
  if (clSetEventCallback(e(), CL_COMPLETE, on_complete, hold) != CL_SUCCESS) {
    delete hold;
    return nullptr;
  }
  return c;
}

}  // namespace

void set_timeout_handler(TimeoutHandler handler) { timeout_handler.store(handler); }

void set_interrupt_check(InterruptCheck check) { interrupt_check.store(check); }

bool interrupt_check_set() { return interrupt_check.load() != nullptr; }

bool interrupt_requested(std::chrono::steady_clock::time_point since) {
  const InterruptCheck check = interrupt_check.load();
  if (!check || draining > 0) return false;
  // Short work never asks (a check may cost a lock: Python's takes the GIL), long work every
  // 20 ms: an interrupt is seen within a few tens of milliseconds at a negligible cost.
  const auto now = std::chrono::steady_clock::now();
  if (now - since < std::chrono::milliseconds(5) ||
      now - last_asked < std::chrono::milliseconds(20))
    return false;
  last_asked = now;
  return check();
}

Error interrupted(const std::string& what) {
  return Error(Errc::kInterrupted, "interrupted: " + what);
}

void drain(const std::vector<cl::CommandQueue*>& queues, TimeLimit limit, const std::string& what) {
  struct Draining {  // no interrupt check meanwhile, even where finish() throws
    Draining() { ++draining; }
    ~Draining() { --draining; }
  } guard;
  for (cl::CommandQueue* q : queues)
    if (q && (*q)()) finish(*q, limit, what);
}

TimeLimit time_limit(double timeout_s, double bytes) {
  TimeLimit t(default_timeout_s(bytes));
  if (timeout_s > 0) {
    t.user_default_s = t.s;
    t.s = timeout_s;
  }
  return t;
}

void wait(const cl::Event& e, TimeLimit limit, const std::string& what, const cl::Event* since) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const double timeout_s = limit.s;
  auto timed_out = [&] {
    char secs[32], dflt[32];
    std::snprintf(secs, sizeof secs, "%g", timeout_s);
    std::snprintf(dflt, sizeof dflt, "%.0f", limit.user_default_s);
    // A limit the user set below the default one is the likelier cause than a hung device.
    const std::string why =
        !limit.users() ? std::string(
                             " s (the default limit; --timeout sets another); the device "
                             "may have stopped responding")
        : timeout_s < limit.user_default_s
            ? std::string(" s; raise --timeout (the default limit here is ") + dflt + " s)"
            : std::string(" s; the device may have stopped responding");
    const Error error(Errc::kTimeout, what + " did not finish within " +
                                          (limit.users() ? "--timeout " : "") + secs + why);
    if (const TimeoutHandler handler = timeout_handler.load()) handler(error);
    throw error;
  };
  // On a CPU device this thread sleeps until the completion callback wakes it (reading the
  // status again at least every 5 ms). Elsewhere short waits (most launches) are caught by
  // yielding polls for the first 2 ms; after that the poll sleeps, backing off to 5 ms, so a long
  // wait costs no CPU.
  const bool cpu = on_cpu(e);
  const std::shared_ptr<Completion> woken = cpu ? completion(e) : nullptr;
  auto sleep = std::chrono::microseconds(50);
  for (;;) {
    const cl_int status = e.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>();
    if (status == CL_COMPLETE) {
      // On a CPU device a command that ended is judged by the device's own clock where its queue
      // profiles: the device's threads and this one share the cores, so this thread can be held
      // up (before the wait, or in it) past the end of work that itself ran late, and the verdict
      // must not depend on when it was scheduled. (PoCL's markers and kernels were seen to give
      // their enqueue and end times in one time base; GPUs keep the host's look, their enqueue
      // times not having been checked against their end times.)
      if (cpu && timeout_s > 0 && device_seconds(e, since) > timeout_s) timed_out();
      return;
    }
    if (status < 0)
      throw Error(Errc::kRuntime, what + " failed on the device: " + cl_error_name(status) + " (" +
                                      std::to_string(status) + ")");
    const double waited = std::chrono::duration<double>(clock::now() - start).count();
    if (timeout_s > 0 && waited > timeout_s) timed_out();
    if (interrupt_requested(start)) {
      // Everything enqueued on e's queue ends first (the commands after e too): they may use the
      // caller's memory, which unwinding hands back to it. Within what is left of the limit.
      TimeLimit rest = limit;
      if (rest.s > 0) rest.s = std::max(rest.s - waited, 1e-3);
      cl::CommandQueue q = e.getInfo<CL_EVENT_COMMAND_QUEUE>();  // a command's: it has one
      drain({&q}, rest, what + " (stopping after an interrupt)");
      throw interrupted(what);
    }
    if (woken) {
      const double left = timeout_s > 0 ? timeout_s - waited : 5e-3;
      std::unique_lock<std::mutex> lock(woken->m);
      woken->cv.wait_for(lock, std::chrono::duration<double>(std::clamp(left, 5e-5, 5e-3)),
                         [&] { return woken->done; });
      continue;
    }
    if (waited < 2e-3) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(sleep);
    if (sleep < std::chrono::milliseconds(5)) sleep *= 2;
  }
}

void finish(cl::CommandQueue& q, TimeLimit limit, const std::string& what, const cl::Event* since) {
  cl::Event marker;
  q.enqueueMarkerWithWaitList(nullptr, &marker);
  q.flush();
  wait(marker, limit, what, since);
}

double default_timeout_s(double bytes) { return 60.0 + bytes / double(std::size_t{1} << 28); }

}  // namespace clreduce
