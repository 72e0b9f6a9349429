// queue_use_bench.cpp: the per-call cost of a small reduction on a program's own in-order queue,
// QueueUse::kOwn (clreduce's queue beside the program's: a marker, a barrier, the result read
// after the plan's event) against QueueUse::kProgram (the program's queue itself: the read right
// after the kernels), in one process, in alternating blocks (docs/PERF.md).
// One call: Reduction::enqueue (sum of n floats), a non-blocking read of the 4-byte result on
// the program's queue, a flush, and a spin on the read's status until it completes: what the
// Python package does for a pyopencl array. Beside them, the floors of the same queue: the
// plan's enqueue alone (no read, no wait: what the Python package does now for a pyopencl
// array, whose result stays on the device), and a trivial kernel of the program's own (one group
// of 64) enqueued with and without a flush, and with its 4-byte read and wait; and the parts of
// the library's enqueue beside the launch: an event, six kernel arguments, getInfo queries;
// and the plan's enqueue that makes no event (enqueue(..., wait, nullptr)).
// usage: queue_use_bench [DEVICE] [N] [CALLS] [ROUNDS]   (defaults 0, 1024, 2000, 5)
#include <clreduce/clreduce.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Times {
  double p10 = 0, median = 0;
};

Times one_block(clreduce::Reduction& plan, cl::CommandQueue& q, const cl::Buffer& in,
                const cl::Buffer& out, std::size_t n, int calls, bool direct) {
  std::vector<double> t;
  float v = 0;
  const int warmup = 50;
  for (int i = 0; i < warmup + calls; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const cl::Event done = plan.enqueue(in, n, out, 0);
    const std::vector<cl::Event> after = {done};
    cl::Event read;
    q.enqueueReadBuffer(out, CL_FALSE, 0, sizeof v, &v, direct ? nullptr : &after, &read);
    q.flush();
    while (read.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>() != CL_COMPLETE) {
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= warmup) t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  if (v != static_cast<float>(n)) {
    std::fprintf(stderr, "queue_use_bench: wrong sum %g (want %zu)\n", static_cast<double>(v), n);
    std::exit(1);
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 10], t[t.size() / 2]};
}

// Host time of `call` alone, calls back to back, the queue finished after each 100.
template <class Call> Times enqueue_block(cl::CommandQueue& q, int calls, Call&& call) {
  std::vector<double> t;
  const int warmup = 50;
  for (int i = 0; i < warmup + calls; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= warmup) t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (i % 100 == 99) q.finish();
  }
  q.finish();
  std::sort(t.begin(), t.end());
  return {t[t.size() / 10], t[t.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string spec = argc > 1 ? argv[1] : "0";
    const std::size_t n = argc > 2 ? std::stoul(argv[2]) : 1024;
    const int calls = argc > 3 ? std::stoi(argv[3]) : 2000;
    const int rounds = argc > 4 ? std::stoi(argv[4]) : 5;
    if (n == 0 || calls < 1 || rounds < 1) {
      std::fprintf(stderr, "usage: queue_use_bench [DEVICE] [N >= 1] [CALLS >= 1] [ROUNDS >= 1]\n");
      return 2;
    }
    const cl::Device dev = clreduce::Device(spec).device();
    const cl::Context ctx(dev);
    cl::CommandQueue q(ctx, dev);  // the program's: in order, no profiling (PyOpenCL's default)
    clreduce::Device own(ctx, dev, q, clreduce::QueueUse::kOwn);
    clreduce::Device direct(ctx, dev, q, clreduce::QueueUse::kProgram);
    const std::vector<float> x(n, 1.0f);
    const cl::Buffer in(ctx, CL_MEM_READ_WRITE, n * sizeof(float)), out(ctx, CL_MEM_READ_WRITE, 16);
    q.enqueueWriteBuffer(in, CL_TRUE, 0, n * sizeof(float), x.data());
    clreduce::Reduction on_own(own, clreduce::Op::kSum, clreduce::DType::kFloat, n);
    clreduce::Reduction on_program(direct, clreduce::Op::kSum, clreduce::DType::kFloat, n);
    const cl::Program prog(
        ctx,
        "__kernel void one(__global float* o) { if (get_global_id(0) == 0) o[0] = 1.0f; }\n"
        "__kernel void six(__global const float* a, ulong n, __global float* p, "
        "__global uint* t, __global float* o, ulong f) { if (get_global_id(0) "
        "== 0 && n == 0) o[0] = a[f] + p[0] + t[0]; }");
    prog.build();
    cl::Kernel one(prog, "one");
    one.setArg(0, out);
    const auto raw = [&](bool flush) {
      q.enqueueNDRangeKernel(one, cl::NullRange, cl::NDRange(64), cl::NDRange(64));
      if (flush) q.flush();
    };
    std::printf("# %s, n = %zu, %d calls a block (p10 / median, us)\n",
                dev.getInfo<CL_DEVICE_NAME>().c_str(), n, calls);
    for (int r = 0; r < rounds; ++r) {
      const Times a = one_block(on_own, q, in, out, n, calls, false);
      const Times b = one_block(on_program, q, in, out, n, calls, true);
      const Times c = enqueue_block(q, calls, [&] { on_program.enqueue(in, n, out, 0); });
      const Times d = enqueue_block(q, calls, [&] { raw(false); });
      const Times e = enqueue_block(q, calls, [&] { raw(true); });
      float v = 0;
      const Times f = enqueue_block(q, calls, [&] {
        raw(false);
        q.enqueueReadBuffer(out, CL_TRUE, 0, sizeof v, &v);
      });
      // The parts of the library's enqueue beside the launch itself: the event it returns, its
      // six kernel arguments, and its buffer checks' getInfo queries.
      cl::Kernel six(prog, "six");
      const cl::Buffer scratch(ctx, CL_MEM_READ_WRITE, 64);
      const Times g = enqueue_block(q, calls, [&] {
        cl::Event ev;
        q.enqueueNDRangeKernel(one, cl::NullRange, cl::NDRange(64), cl::NDRange(64), nullptr, &ev);
        q.flush();
      });
      const Times h = enqueue_block(q, calls, [&] {
        six.setArg(0, in);
        six.setArg(1, static_cast<cl_ulong>(n));
        six.setArg(2, scratch);
        six.setArg(3, scratch);
        six.setArg(4, out);
        six.setArg(5, static_cast<cl_ulong>(0));
        q.enqueueNDRangeKernel(six, cl::NullRange, cl::NDRange(64), cl::NDRange(64));
        q.flush();
      });
      std::size_t bytes = 0;
      const Times k = enqueue_block(q, calls, [&] {
        for (int j = 0; j < 3; ++j) {
          bytes += in.getInfo<CL_MEM_SIZE>() + out.getInfo<CL_MEM_SIZE>();
          if (in.getInfo<CL_MEM_CONTEXT>()() != ctx()) std::abort();
        }
      });
      const Times m =
          enqueue_block(q, calls, [&] { on_program.enqueue(in, 0, n, out, 0, {}, nullptr); });
      std::printf(
          "round %d  +flush with an event %.1f / %.1f  six arguments set +flush %.1f / %.1f"
          "  nine getInfo %.2f / %.2f  | enqueue only, no event: kProgram %.1f / %.1f\n",
          r + 1, g.p10, g.median, h.p10, h.median, k.p10, k.median, m.p10, m.median);
      std::printf(
          "round %d  kOwn %.1f / %.1f  kProgram %.1f / %.1f  | enqueue only: kProgram %.1f / "
          "%.1f  trivial kernel %.1f / %.1f  +flush %.1f / %.1f  +blocking read %.1f / "
          "%.1f\n",
          r + 1, a.p10, a.median, b.p10, b.median, c.p10, c.median, d.p10, d.median, e.p10,
          e.median, f.p10, f.median);
    }
  } catch (const clreduce::Error& e) {
    std::fprintf(stderr, "queue_use_bench: %s\n", e.what());
    return 3;
  } catch (const cl::Error& e) {
    std::fprintf(stderr, "queue_use_bench: %s (%d)\n", e.what(), e.err());
    return 3;
  }
}
