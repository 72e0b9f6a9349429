// device.hpp: every device of every platform under one global index, and --device selection
// by that index, by device type or by a case-insensitive name substring.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clreduce/cl.hpp"

namespace clreduce {

struct DeviceInfo {
  std::size_t index = 0;        // global index across platforms
  cl::Platform platform;
  cl::Device device;
  std::string platform_name;
  std::string name;             // CL_DEVICE_NAME
  std::string vendor;
  std::string type;             // "GPU", "CPU", "ACCELERATOR", ...
  std::string driver_version;
  std::string device_version;
  std::string c_version;        // CL_DEVICE_OPENCL_C_VERSION
  unsigned compute_units = 0;
  std::uint64_t global_mem = 0;  // bytes
  std::uint64_t max_alloc = 0;   // bytes, the largest single buffer
  std::uint64_t local_mem = 0;   // bytes
  std::size_t max_wg_size = 0;
  bool fp64 = false;
  bool is_gpu = false;
  bool is_nvidia = false;
};

// Enumerates all platforms and devices. Throws Error(Errc::kRuntime) when there is no platform.
std::vector<DeviceInfo> list_devices();

// Picks a device by global index ("0"), by type ("cpu", "gpu", "accelerator": the first device of
// that type) or by case-insensitive substring of its platform, name, vendor or version ("nvidia",
// "pocl"). Throws Error(Errc::kUsage) listing what exists.
DeviceInfo select_device(const std::vector<DeviceInfo>& devices, const std::string& spec);

// Prints the --list-devices table.
std::string format_device_list(const std::vector<DeviceInfo>& devices);

}  // namespace clreduce
