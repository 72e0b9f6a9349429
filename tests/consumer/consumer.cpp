// consumer.cpp: a program on an installed clreduce that includes the public header alone and is
// compiled with every warning an error: the version macros work in #if, the library reads none
// of its settings from the environment (the program does not ask), and a sum runs and verifies;
// a plan's sum and scan on the program's own context and queue, no event asked for, match it.
// usage: consumer [DEVICE]; exit 0 verified, 1 a wrong answer, 3 a clreduce error.
#include <clreduce/clreduce.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#if !defined(CLREDUCE_VERSION_MAJOR) || !defined(CLREDUCE_VERSION_MINOR) || \
    !defined(CLREDUCE_VERSION_PATCH)
#error "clreduce/version.hpp defines no CLREDUCE_VERSION_MAJOR, _MINOR, _PATCH"
#endif
#if CLREDUCE_VERSION_MAJOR * 10000 + CLREDUCE_VERSION_MINOR * 100 + CLREDUCE_VERSION_PATCH < 100
#error "this program needs clreduce 0.1.0 or later"
#endif

#define CONSUMER_TEXT(x) #x
#define CONSUMER_STR(x) CONSUMER_TEXT(x)

int main(int argc, char** argv) {
  const std::string macros = CONSUMER_STR(CLREDUCE_VERSION_MAJOR) "." CONSUMER_STR(
      CLREDUCE_VERSION_MINOR) "." CONSUMER_STR(CLREDUCE_VERSION_PATCH);
  if (macros != CLREDUCE_VERSION || macros != clreduce::version()) {
    std::fprintf(stderr, "consumer: macros say %s, CLREDUCE_VERSION %s, the library %s\n",
                 macros.c_str(), CLREDUCE_VERSION, clreduce::version());
    return 1;
  }
  try {
    clreduce::Device dev(argc > 1 ? argv[1] : "0");
    std::vector<std::int32_t> x(100003);
    std::int64_t want = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<std::int32_t>(i % 2001) - 1000;
      want += x[i];
    }
    clreduce::Options o;
    o.verify = true;
    const clreduce::Result r = dev.reduce(clreduce::Op::kSum, x, o);
    if (r.value.i != want || !r.verified || dev.tuning().fast_groups != 0) {
      std::fprintf(stderr, "consumer: sum %lld, expected %lld (%s), fast-groups %zu\n",
                   static_cast<long long>(r.value.i), static_cast<long long>(want),
                   r.verdict.c_str(), dev.tuning().fast_groups);
      return 1;
    }
    // The enqueue-only calls on the program's own in-order queue, no event made: the queue's
    // order brings their results to the reads after them.
    const cl::Context ctx(dev.device());
    cl::CommandQueue q(ctx, dev.device());
    clreduce::Device direct(ctx, dev.device(), q, clreduce::QueueUse::kProgram);
    const cl::Buffer in(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, x.size() * sizeof x[0],
                        x.data());
    const cl::Buffer out(ctx, CL_MEM_READ_WRITE, 8), scanned(ctx, CL_MEM_READ_WRITE, x.size() * 8);
    clreduce::Reduction plan(direct, clreduce::Op::kSum, clreduce::DType::kInt32, x.size());
    clreduce::Scan scan(direct, clreduce::Op::kSum, clreduce::DType::kInt32, x.size());
    plan.enqueue(in, 0, x.size(), out, 0, {}, nullptr);
    scan.enqueue(in, 0, x.size(), scanned, 0, {}, nullptr);
    std::int64_t planned = 0, last = 0;
    q.enqueueReadBuffer(out, CL_TRUE, 0, sizeof planned, &planned);
    q.enqueueReadBuffer(scanned, CL_TRUE, (x.size() - 1) * 8, sizeof last, &last);
    if (planned != want || last != want) {
      std::fprintf(stderr, "consumer: planned sum %lld, scan's last %lld, expected %lld\n",
                   static_cast<long long>(planned), static_cast<long long>(last),
                   static_cast<long long>(want));
      return 1;
    }
    std::printf("consumer: clreduce %s (macros %s), sum %lld %s, kernels %s\n", clreduce::version(),
                macros.c_str(), static_cast<long long>(r.value.i), r.verdict.c_str(),
                dev.kernel_dir().c_str());
  } catch (const clreduce::Error& e) {
    std::fprintf(stderr, "consumer: %s error: %s\n", clreduce::errc_name(e.category()), e.what());
    return 3;
  }
  return 0;
}
