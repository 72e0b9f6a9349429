// test_device.cpp: low memory in the library's words: OpenCL allocation failures are "out of
// memory" (exit 5) and other errors keep their call and code; the host-memory check before a run
// refuses with the figures, against the address-space limit and the machine's memory.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdint>
#include <string>
#include <vector>

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
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring(
                   "this run needs 80 MiB more host memory (the array and its results 40 MiB, "
                   "the device's buffers (host memory on a CPU device) 40 MiB) but the "
                   "address-space limit (ulimit -v) of 1024 MiB leaves 74 MiB (900 MiB mapped "
                   "already, 50 MiB kept"));
  }
  m.mapped = 2048 * kMiB;  // already past the limit: nothing left
  CHECK_THROWS_WITH(check_host_memory(gpu, 1, 0, m),
                    ContainsSubstring("this run needs 1 byte more host memory") &&
                        ContainsSubstring("leaves 0 bytes"));
  HostMemory machine;  // no address-space limit, little memory on the machine
  machine.available = 100 * kMiB;
  CHECK_NOTHROW(check_host_memory(gpu, 100 * kMiB, 0, machine));
  CHECK_THROWS_WITH(
      check_host_memory(cpu, 60 * kMiB, 60 * kMiB, machine),
      ContainsSubstring("but the machine has 100 MiB available (free memory and swap)"));
}

TEST_CASE("a run's memory is added part by part, held rather than wrapped, in readable units",
          "[device][memory]") {
  MemoryNeed need;
  need.add("the array", std::uint64_t{1} << 62);
  need.add("the scans' output", 0);               // no part for nothing
  need.add("the array", std::uint64_t{3} << 62);  // 2^64: held at UINT64_MAX, not 0
  CHECK(need.parts.size() == 1);
  CHECK(need.total() == UINT64_MAX);
  need.add("scratch", 5);
  CHECK(need.total() == UINT64_MAX);
  HostMemory m;  // no limit, and the machine's memory unknown: only a held sum is refused
  CHECK_THROWS_WITH(
      check_host_memory(need, m),
      ContainsSubstring("this run needs more than 2^64-1 bytes of host memory (the "
                        "array more than 2^64-1 bytes, scratch 5 bytes), more than any host "
                        "can hold"));
  CHECK(byte_words(0) == "0 bytes");
  CHECK(byte_words(1023) == "1023 bytes");
  CHECK(byte_words(8 * 1024) == "8 KiB");
  CHECK(byte_words(3 * kMiB / 2) == "1.5 MiB");
  CHECK(byte_words(612 * kMiB) == "612 MiB");
  CHECK(byte_words(10239 * kMiB) == "10239 MiB");
  CHECK(byte_words(std::uint64_t{22} << 30) == "22 GiB");
  CHECK(byte_words(std::uint64_t{1} << 63) == "8.0 EiB");
  CHECK(byte_words(UINT64_MAX) == "more than 2^64-1 bytes");
}

TEST_CASE("a CPU device's buffer that the address-space limit cannot hold is refused first",
          "[device][memory]") {
  const DeviceInfo cpu = device_of_type("CPU"), gpu = device_of_type("GPU");
  struct rlimit saved {};
  REQUIRE(::getrlimit(RLIMIT_AS, &saved) == 0);
  if (saved.rlim_cur != RLIM_INFINITY) SKIP("an address-space limit is already set");
  const std::uint64_t mapped = host_memory().mapped;
  // 256 MiB of room above what is mapped, for a moment (the hard limit is untouched).
  struct rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(mapped + 256 * kMiB);
  REQUIRE(::setrlimit(RLIMIT_AS, &low) == 0);
  std::string refused;
  bool small_ok = true, gpu_ok = true;
  try {
    check_buffer_fits(cpu, 512 * kMiB);
  } catch (const Error& e) {
    refused = std::string(e.what()) + (e.category() == Errc::kUnsupported ? "" : " (not exit 5)");
  }
  try {
    check_buffer_fits(cpu, 64 * kMiB);
    check_buffer_fits(cpu, 1u << 19);  // small buffers are not looked at
  } catch (const Error&) {
    small_ok = false;
  }
  try {
    check_buffer_fits(gpu, 512 * kMiB);  // a GPU's buffers are not host memory
  } catch (const Error&) {
    gpu_ok = false;
  }
  REQUIRE(::setrlimit(RLIMIT_AS, &saved) == 0);
  CHECK_THAT(refused, ContainsSubstring("out of memory: a device buffer of 512 MiB does not fit "
                                        "under the address-space limit (ulimit -v)"));
  CHECK_THAT(refused, !ContainsSubstring("not exit 5"));
  CHECK(small_ok);
  CHECK(gpu_ok);
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
  CHECK(m.reserve >= 64 * kMiB);
  CHECK_THROWS_WITH(check_host_memory(device_of_type("GPU"), std::uint64_t{1} << 40, 0, m),
                    ContainsSubstring("the address-space limit (ulimit -v) of 1.0 TiB leaves"));
}

namespace {

DeviceInfo listed(std::size_t index, const std::string& type, const std::string& name,
                  const std::string& platform) {
  DeviceInfo d = device_of_type(type);
  d.index = index;
  d.name = name;
  d.platform_name = platform;
  return d;
}

std::vector<std::size_t> indices(const std::vector<DeviceInfo>& ds) {
  std::vector<std::size_t> out;
  for (const DeviceInfo& d : ds) out.push_back(d.index);
  return out;
}

}  // namespace

TEST_CASE("under mpirun a single name or type names every device it matches", "[device][ranks]") {
  // A host with a CPU and two NVIDIA GPUs, as --list-devices numbers them.
  const std::vector<DeviceInfo> host = {
      listed(0, "CPU", "cpu-skylake-avx512-Intel Xeon", "Portable Computing Language"),
      listed(1, "GPU", "NVIDIA H100 80GB HBM3", "NVIDIA CUDA"),
      listed(2, "GPU", "NVIDIA H100 80GB HBM3", "NVIDIA CUDA"),
      listed(3, "ACCELERATOR", "small accelerator", "Overall Platform")};
  using V = std::vector<std::size_t>;
  // One process: a name gives its first match.
  CHECK(indices(select_devices(host, "nvidia")) == V{1});
  CHECK(select_device(host, "gpu").index == 1);
  // Ranks: every match, for the host's ranks to take in turn.
  CHECK(indices(select_rank_devices(host, "nvidia")) == V{1, 2});
  CHECK(indices(select_rank_devices(host, "NVIDIA")) == V{1, 2});
  CHECK(indices(select_rank_devices(host, "gpu")) == V{1, 2});
  CHECK(indices(select_rank_devices(host, "xeon")) == V{0});
  CHECK(indices(select_rank_devices(host, "all-gpus")) == V{1, 2});
  // The classes are classes, whatever the names hold ("small", "Overall").
  CHECK(indices(select_rank_devices(host, "all")) == V{0, 1, 2, 3});
  CHECK(indices(select_rank_devices(host, "all-cpus")) == V{0});
  CHECK(indices(select_rank_devices(host, "accelerator")) == V{3});
  // Indices and lists are what they say.
  CHECK(indices(select_rank_devices(host, "2")) == V{2});
  CHECK(indices(select_rank_devices(host, "2,1")) == V{2, 1});
  CHECK(indices(select_rank_devices(host, "nvidia,nvidia")) == V{1, 1});
  // No match: the one-process message.
  CHECK_THROWS_WITH(select_rank_devices(host, "amd"), ContainsSubstring("no device matches 'amd'"));
  const std::vector<DeviceInfo> gpus(host.begin() + 1, host.begin() + 3);
  CHECK_THROWS_WITH(select_rank_devices(gpus, "cpu"), ContainsSubstring("no cpu device"));
  CHECK_THROWS_WITH(select_rank_devices(host, "7"), ContainsSubstring("no device 7"));
}
