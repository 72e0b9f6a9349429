// test_device.cpp: low memory in the library's words: OpenCL allocation failures are "out of
// memory" (exit 5) and other errors keep their call and code; the host-memory check before a run
// refuses with the figures, against the address-space limit and the machine's memory.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdint>
#include <string>

#include <sys/resource.h>

#include "clreduce/error.hpp"
#include "runtime/device.hpp"

using namespace clreduce;
using Catch::Matchers::ContainsSubstring;

namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

DeviceInfo device_of_type(const std::string& type) {
  DeviceInfo d;
  d.type = type;
  d.name = "test device";
  return d;
}

}  // namespace

TEST_CASE(
    "an OpenCL allocation failure is 'out of memory' (unsupported), other errors keep call and "
    "code",
    "[device][memory]") {
  for (int err :
       {CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_HOST_MEMORY, CL_INVALID_BUFFER_SIZE}) {
    CAPTURE(err);
    const Error e = describe_cl_error(cl::Error(err, "clEnqueueWriteBuffer"));
    CHECK(e.category() == Errc::kUnsupported);
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("out of memory: clEnqueueWriteBuffer could not allocate ("));
  }
  Error e = describe_cl_error(cl::Error(CL_INVALID_VALUE, "clEnqueueNDRangeKernel"));
  CHECK(e.category() == Errc::kRuntime);
  CHECK(std::string(e.what()) == "clEnqueueNDRangeKernel: CL_INVALID_VALUE (-30)");
  e = describe_cl_error(cl::Error(CL_OUT_OF_RESOURCES, "clFinish"));
  CHECK(e.category() == Errc::kRuntime);
  CHECK_THAT(std::string(e.what()), ContainsSubstring("memory, or a kernel fault"));
}

TEST_CASE("the host-memory check counts a CPU device's buffers and refuses with the figures",
          "[device][memory]") {
  HostMemory m;
  m.as_limit = 1024 * kMiB;
  m.mapped = 900 * kMiB;
  m.reserve = 50 * kMiB;  // 74 MiB left under the limit
  const DeviceInfo cpu = device_of_type("CPU"), gpu = device_of_type("GPU");
  CHECK_NOTHROW(check_host_memory(cpu, 30 * kMiB, 40 * kMiB, m));
  CHECK_NOTHROW(
      check_host_memory(gpu, 70 * kMiB, 4096 * kMiB, m));  // a GPU's buffers are not host memory
  try {
    check_host_memory(cpu, 40 * kMiB, 40 * kMiB, m);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kUnsupported);
    CHECK_THAT(
        std::string(e.what()),
        ContainsSubstring(
            "this run needs 80 MiB more host memory (the array and its results, and the device's "
            "buffers, which on a CPU device are host memory) but the address-space limit "
            "(ulimit -v) of 1024 MiB leaves 74 MiB (900 MiB mapped already, 50 MiB kept"));
  }
  m.mapped = 2048 * kMiB;  // already past the limit: nothing left
  CHECK_THROWS_WITH(check_host_memory(gpu, 1, 0, m), ContainsSubstring("leaves 0 MiB"));
  HostMemory machine;  // no address-space limit, little memory on the machine
  machine.available = 100 * kMiB;
  CHECK_NOTHROW(check_host_memory(gpu, 100 * kMiB, 0, machine));
  CHECK_THROWS_WITH(
      check_host_memory(cpu, 60 * kMiB, 60 * kMiB, machine),
      ContainsSubstring("but the machine has 100 MiB available (free memory and swap)"));
}

TEST_CASE("host_memory reads the address-space limit, what is mapped and the machine's memory",
          "[device][memory]") {
  HostMemory m = host_memory();
  CHECK(m.available > 0);
  struct rlimit saved {};
  REQUIRE(::getrlimit(RLIMIT_AS, &saved) == 0);
  if (saved.rlim_cur != RLIM_INFINITY) SKIP("an address-space limit is already set");
  CHECK(m.as_limit == UINT64_MAX);
  // Lower the soft limit for a moment (the hard limit is untouched, so it can be raised back).
  struct rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(std::uint64_t{1} << 40);  // 1 TiB: nothing here comes near it
  REQUIRE(::setrlimit(RLIMIT_AS, &low) == 0);
  m = host_memory();
  REQUIRE(::setrlimit(RLIMIT_AS, &saved) == 0);
  CHECK(m.as_limit == std::uint64_t{1} << 40);
  CHECK(m.mapped > 0);
  CHECK(m.reserve >= 128 * kMiB);
  CHECK_THROWS_WITH(check_host_memory(device_of_type("GPU"), std::uint64_t{1} << 40, 0, m),
                    ContainsSubstring("the address-space limit (ulimit -v) of 1048576 MiB leaves"));
}
