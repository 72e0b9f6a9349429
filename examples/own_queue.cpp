// own_queue.cpp: clreduce inside a program that owns its OpenCL context and queue. The program
// makes its own context and queue, hands them to clreduce (Device(context, device, queue)) and
// chains, with events and no read-back between them:
//   1. a kernel of its own that fills x[i] with a pseudo-random float in [0, 1);
//   2. clreduce's compaction: the elements above a threshold, in order, and their count;
//   3. clreduce's reduction: the sum of the kept elements (the rest of `kept` was zeroed);
//   4. a kernel of its own: their mean, sum / count.
// One read at the end brings back the count, the sum and the mean, which are checked against
// the same computation on the host.
//
// usage: own_queue [--device INDEX] [--size N] [--threshold T]
// Exit codes: 0 verified, 1 the device's results differ from the host's, 2 bad usage,
// 3 OpenCL or clreduce error.
#include <clreduce/clreduce.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

// x[i]: the top 24 bits of a multiplicative hash of i, over 2^24: exact in float, and the
// host computes the very same values.
const char* kSource = R"CL(
__kernel void fill(__global float* x, ulong n) {
  const ulong i = get_global_id(0);
  if (i < n) x[i] = (float)(((uint)i * 2654435761u) >> 8) / 16777216.0f;
}
// state: count (ulong, from the compaction) at byte 0, sum (float, from the reduction) at 8;
// writes the mean (float) at byte 16.
__kernel void mean(__global uchar* state) {
  const ulong count = *(__global const ulong*)state;
  const float sum = *(__global const float*)(state + 8);
  *(__global float*)(state + 16) = count ? sum / (float)count : NAN;
}
)CL";

float host_x(std::uint64_t i) {
  return static_cast<float>((static_cast<std::uint32_t>(i) * 2654435761u) >> 8) / 16777216.0f;
}

// The OpenCL device of global index `index` (platforms in order, their devices in order), as
// clreduce --list-devices numbers them.
cl::Device find_device(std::size_t index) {
  std::vector<cl::Platform> platforms;
  cl::Platform::get(&platforms);
  for (const cl::Platform& p : platforms) {
    std::vector<cl::Device> devices;
    try {
      p.getDevices(CL_DEVICE_TYPE_ALL, &devices);
    } catch (const cl::Error&) {
      continue;  // a platform with no devices
    }
    if (index < devices.size()) return devices[index];
    index -= devices.size();
  }
  throw std::runtime_error("no OpenCL device of that index (see clreduce --list-devices)");
}

int run(int argc, char** argv) {
  std::size_t index = 0, n = 1000000;
  double threshold = 0.75;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "own_queue: " << a << " needs a value\n";
      return 2;
    }
    char* end = nullptr;
    const char* v = argv[++i];
    if (a == "--device") {
      index = std::strtoull(v, &end, 10);
    } else if (a == "--size") {
      n = std::strtoull(v, &end, 10);
    } else if (a == "--threshold") {
      threshold = std::strtod(v, &end);
    } else {
      std::cerr << "own_queue: unknown option " << a << "\n";
      return 2;
    }
    if (!end || *end != '\0' || end == v || (a == "--size" && n == 0)) {
      std::cerr << "own_queue: " << a << " needs a number (--size at least 1)\n";
      return 2;
    }
  }

  // ---- The program's own OpenCL objects: context, queue (out of order where the device has
  // it), buffers and kernels.
  const cl::Device device = find_device(index);
  cl::Context context(device);
  const bool ooo =
      (device.getInfo<CL_DEVICE_QUEUE_PROPERTIES>() & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
  cl::CommandQueue queue(context, device, ooo ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0);
  cl::Program program(context, kSource);
  try {
    program.build(std::vector<cl::Device>{device});
  } catch (const cl::Error&) {
    std::cerr << "own_queue: the program's kernels failed to build:\n"
              << program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device);
    return 3;
  }
  cl::Kernel fill(program, "fill"), mean(program, "mean");
  cl::Buffer x(context, CL_MEM_READ_WRITE, n * sizeof(float));
  cl::Buffer kept(context, CL_MEM_READ_WRITE, n * sizeof(float));
  cl::Buffer state(context, CL_MEM_READ_WRITE, 32);

  // ---- clreduce on those objects; its plans made once (kernels built, scratch allocated).
  clreduce::Device dev(context, device, queue);
  clreduce::Compaction above(dev, clreduce::DType::kFloat, n,
                             clreduce::Predicate(clreduce::Cmp::kGreater, threshold));
  clreduce::Reduction sum(dev, clreduce::Op::kSum, clreduce::DType::kFloat, n);

  // ---- The chain: each step waits for the events it needs, nothing is read in between.
  cl::Event filled, zeroed, compacted, summed, averaged;
  fill.setArg(0, x);
  fill.setArg(1, static_cast<cl_ulong>(n));
  queue.enqueueNDRangeKernel(fill, cl::NullRange, cl::NDRange((n + 63) / 64 * 64), cl::NullRange,
                             nullptr, &filled);
  queue.enqueueFillBuffer(kept, 0.0f, 0, n * sizeof(float), nullptr, &zeroed);
  compacted = above.enqueue(x, n, kept, state, 0, {filled, zeroed});
  summed = sum.enqueue(kept, n, state, 8, {compacted});
  mean.setArg(0, state);
  std::vector<cl::Event> after_sum = {summed};
  queue.enqueueTask(mean, &after_sum, &averaged);
  unsigned char bytes[32];
  std::vector<cl::Event> after_mean = {averaged};
  queue.enqueueReadBuffer(state, CL_TRUE, 0, sizeof bytes, bytes, &after_mean);
  std::uint64_t count = 0;
  float got_sum = 0, got_mean = 0;
  std::memcpy(&count, bytes, 8);
  std::memcpy(&got_sum, bytes + 8, 4);
  std::memcpy(&got_mean, bytes + 16, 4);

  // ---- The host's answer: the same elements, the count exact, the float sum within a bound.
  std::uint64_t want_count = 0;
  double want_sum = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const float v = host_x(i);
    if (static_cast<double>(v) > threshold) {
      ++want_count;
      want_sum += v;
    }
  }
  // A float sum of n terms in any order is within about n * 2^-24 of the sum of |terms|, which
  // here is the sum itself (all terms are positive).
  const double bound = static_cast<double>(n) * std::ldexp(1.0, -24) * want_sum;
  const bool ok = count == want_count && std::fabs(got_sum - want_sum) <= bound &&
                  (count == 0 ? std::isnan(got_mean)
                              : std::fabs(got_mean - want_sum / static_cast<double>(count)) <=
                                    bound / static_cast<double>(count) + 1e-6);
  std::cout << "device " << dev.summary().name << ", " << (ooo ? "out-of-order" : "in-order")
            << " queue of the program's own\n"
            << "elements above " << threshold << ": " << count << " of " << n << " (host "
            << want_count << "), sum " << got_sum << " (host " << want_sum << "), mean "
            << got_mean << "\n"
            << "compaction's scan: " << above.plan() << "\n"
            << (ok ? "verified" : "NOT verified: the device's results differ from the host's")
            << "\n";
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const clreduce::Error& e) {
    std::cerr << "own_queue: " << e.what() << "\n";
    return 3;
  } catch (const cl::Error& e) {
    std::cerr << "own_queue: OpenCL error: " << e.what() << ": " << clreduce::cl_error_name(e.err())
              << " (" << e.err() << ")\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "own_queue: " << e.what() << "\n";
    return 3;
  }
}
