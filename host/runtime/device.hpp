// device.hpp: every device of every platform under one global index, and --device selection
// by that index, by device type or by a case-insensitive name substring.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/error.hpp"

namespace clreduce {

struct DeviceInfo {
  std::size_t index = 0;  // global index across platforms
  cl::Platform platform;
  cl::Device device;
  std::string platform_name;
  std::string platform_version;  // CL_PLATFORM_VERSION
  std::string name;              // CL_DEVICE_NAME
  std::string vendor;
  std::string type;  // "GPU", "CPU", "ACCELERATOR", ...
  std::string driver_version;
  std::string device_version;
  std::string c_version;  // CL_DEVICE_OPENCL_C_VERSION
  unsigned compute_units = 0;
  std::uint64_t global_mem = 0;    // bytes
  std::uint64_t max_alloc = 0;     // bytes, the largest single buffer
  std::uint64_t local_mem = 0;     // bytes
  std::uint64_t global_cache = 0;  // CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, bytes (0: none or unknown)
  std::size_t max_wg_size = 0;
  // CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: where the device's own buffers start, which its
  // kernels may assume of every buffer (vector loads); 0 when not known.
  std::size_t base_align = 0;
  bool fp64 = false;
  bool is_gpu = false;
  bool is_nvidia = false;
};

// Taken while OpenCL enumerates platforms and devices (list_devices()) and while a context and its
// queue are made (Context): some runtimes do not make these thread-safe (PoCL's clGetDeviceIDs),
// and a program may open devices from several threads at once. One lock for the process.
std::unique_lock<std::mutex> lock_opencl_setup();

// Enumerates all platforms and devices. Throws Error(Errc::kRuntime) when there is no platform,
// saying why as far as can be told: no ICD registered; ICDs registered but none loaded (naming
// them, and the address-space limit when one is set: an OpenCL runtime maps hundreds of MiB); or
// clGetPlatformIDs's error.
std::vector<DeviceInfo> list_devices();
// One device's entry, as list_devices() makes it under global index `index`.
DeviceInfo describe_device(const cl::Platform& platform, const cl::Device& device,
                           std::size_t index);
// The entry of list_devices() for a device the program holds; one the list does not name (a
// sub-device) is described under index list_devices().size().
DeviceInfo find_device(const cl::Device& device);

// Picks a device by global index ("0"), by type ("cpu", "gpu", "accelerator": the first device of
// that type) or by case-insensitive substring of its platform, name, vendor or version ("nvidia",
// "pocl"). Throws Error(Errc::kUsage) listing what exists.
DeviceInfo select_device(const std::vector<DeviceInfo>& devices, const std::string& spec);
// Several devices: a comma-separated list of what select_device() takes ("0,1", "nvidia,pocl";
// a device may be listed twice: two contexts on it), or a class: "all", "all-gpus", "all-cpus"
// (every device of that type, in index order). A single spec gives one device.
std::vector<DeviceInfo> select_devices(const std::vector<DeviceInfo>& devices,
                                       const std::string& spec);
// Under mpirun, the devices a host's ranks take in turn (by their rank on the host): as
// select_devices(), but a single name or type ("nvidia", "gpu") gives every device it matches, so
// that two ranks on a host with two NVIDIA GPUs take one each rather than share the first.
std::vector<DeviceInfo> select_rank_devices(const std::vector<DeviceInfo>& devices,
                                            const std::string& spec);

// Prints the --list-devices table.
std::string format_device_list(const std::vector<DeviceInfo>& devices);

// An OpenCL error in the library's words and category: an allocation failure
// (CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_HOST_MEMORY, CL_INVALID_BUFFER_SIZE) is
// Errc::kUnsupported and says memory ran out; anything else Errc::kRuntime, with the call and code.
Error describe_cl_error(const cl::Error& e);
// The same for an OpenCL error met by a run: headed by `what` (the variant, op, type and size)
// and followed by what the user can change (--local-size, --tune build-options, --max-chunk,
// another --variant), by the error's code.
Error describe_cl_error(const cl::Error& e, const std::string& what);

// What this process can still allocate on the host, as far as can be told.
struct HostMemory {
  std::uint64_t as_limit = UINT64_MAX;  // the address-space limit (RLIMIT_AS, ulimit -v); none: max
  std::uint64_t mapped = 0;             // address space mapped now (VmSize)
  std::uint64_t reserve = 0;            // address space threads yet to start will map (stacks)
  std::uint64_t available =
      UINT64_MAX;  // the machine's available memory plus free swap; unknown: max
};
HostMemory host_memory();

// What a run will allocate on the host beyond what is mapped now, part by part (bytes; sums and
// products held at UINT64_MAX rather than wrapped, so a size past any host is refused, never
// taken for a small one).
struct MemoryNeed {
  std::vector<std::pair<std::string, std::uint64_t>> parts;  // ("the array", bytes), ...
  // Adds a part (none for 0 bytes; a part of the same name grows).
  void add(const std::string& what, std::uint64_t bytes);
  std::uint64_t total() const;
};

// Throws Error(Errc::kUnsupported) when `need` is more than `m` leaves: under an address-space
// limit, the limit less what is mapped and m.reserve; and the machine's available memory. One
// line with the figures: "this run needs 612 MiB more host memory (the array 256 MiB, the scans'
// output 256 MiB, ...) but the address-space limit (ulimit -v) of 1172 MiB leaves 500 MiB (...)".
// Checked before allocating, so a run that cannot fit is refused with the figures, not ended by
// the allocator or aborted inside the OpenCL runtime.
void check_host_memory(const MemoryNeed& need, const HostMemory& m = host_memory());
// The same for host_bytes on the host plus device_bytes when d is a CPU device (its buffers are
// host memory).
void check_host_memory(const DeviceInfo& d, std::uint64_t host_bytes, std::uint64_t device_bytes,
                       const HostMemory& m = host_memory());

// A byte count in words for messages: "512 bytes", "12 KiB", "3.5 MiB", "612 MiB", and "more
// than 2^64-1 bytes" for UINT64_MAX (a held sum).
std::string byte_words(std::uint64_t bytes);

// Under an address-space limit, on a CPU device (whose buffers are host memory), throws
// Error(Errc::kUnsupported) when a buffer of `bytes` cannot be mapped beside what is mapped now:
// a runtime may abort on an allocation it cannot make (PoCL 3.1 asserts where its buffers are
// first used) rather than report it.
void check_buffer_fits(const DeviceInfo& d, std::uint64_t bytes);

}  // namespace clreduce
