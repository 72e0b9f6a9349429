// device.cpp: platform/device enumeration. Platforms are walked explicitly (never
// cl::Device::getDefault, which misbehaves under some ICDs).
#include "runtime/device.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "clreduce/error.hpp"

namespace clreduce {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back())))) s.pop_back();
  return s;
}

std::string type_name(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return "GPU";
  if (t & CL_DEVICE_TYPE_CPU) return "CPU";
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return "ACCELERATOR";
  return "OTHER";
}

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
  std::vector<cl::Platform> platforms;
  cl_int err = CL_SUCCESS;
  try {
    err = cl::Platform::get(&platforms);
  } catch (const cl::Error& e) {
    err = e.err();
  }
  if (err != CL_SUCCESS || platforms.empty())
    throw Error(Errc::kRuntime, "no OpenCL platform found (install an ICD, e.g. pocl-opencl-icd)");
  std::vector<DeviceInfo> out;
  for (auto& p : platforms) {
    std::vector<cl::Device> devs;
    try {
      p.getDevices(CL_DEVICE_TYPE_ALL, &devs);
    } catch (const cl::Error&) {
      continue;  // a platform with no devices
    }
    for (auto& d : devs) {
      DeviceInfo i;
      i.index = out.size();
      i.platform = p;
      i.device = d;
      i.platform_name = trim(p.getInfo<CL_PLATFORM_NAME>());
      i.name = trim(d.getInfo<CL_DEVICE_NAME>());
      i.vendor = trim(d.getInfo<CL_DEVICE_VENDOR>());
      const auto t = d.getInfo<CL_DEVICE_TYPE>();
      i.type = type_name(t);
      i.is_gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
      i.driver_version = trim(d.getInfo<CL_DRIVER_VERSION>());
      i.device_version = trim(d.getInfo<CL_DEVICE_VERSION>());
      i.c_version = trim(d.getInfo<CL_DEVICE_OPENCL_C_VERSION>());
      i.compute_units = d.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>();
      i.global_mem = d.getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>();
      i.max_alloc = d.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>();
      i.local_mem = d.getInfo<CL_DEVICE_LOCAL_MEM_SIZE>();
      i.max_wg_size = d.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>();
      const std::string ext = d.getInfo<CL_DEVICE_EXTENSIONS>();
      i.fp64 = ext.find("cl_khr_fp64") != std::string::npos ||
               d.getInfo<CL_DEVICE_DOUBLE_FP_CONFIG>() != 0;
      i.is_nvidia = lower(i.vendor + " " + i.platform_name).find("nvidia") != std::string::npos;
      out.push_back(i);
    }
  }
  if (out.empty()) throw Error(Errc::kRuntime, "OpenCL platforms found, but no devices");
  return out;
}

DeviceInfo select_device(const std::vector<DeviceInfo>& devices, const std::string& spec) {
  std::string names;
  for (const auto& d : devices)
    names += (names.empty() ? "" : "; ") + std::to_string(d.index) + ": " + d.name + " (" + d.platform_name + ")";
  const bool numeric = !spec.empty() && std::all_of(spec.begin(), spec.end(), [](unsigned char c) { return std::isdigit(c); });
  if (numeric) {
    std::size_t idx = 0;
    try {
      idx = std::stoull(spec);
    } catch (...) {
      idx = devices.size();
    }
    if (idx < devices.size()) return devices[idx];
    throw Error(Errc::kUsage, "no device " + spec + " (devices: " + names + ")");
  }
  const std::string want = lower(spec);
  // A device type ("cpu", "gpu", "accelerator"): the first device of that type, whatever its name.
  if (want == "cpu" || want == "gpu" || want == "accelerator") {
    for (const auto& d : devices)
      if (lower(d.type) == want) return d;
    throw Error(Errc::kUsage, "no " + spec + " device (devices: " + names + ")");
  }
  for (const auto& d : devices) {
    const std::string hay = lower(d.platform_name + " " + d.name + " " + d.vendor + " " +
                                  d.device_version + " " + d.driver_version);
    if (!want.empty() && hay.find(want) != std::string::npos) return d;
  }
  throw Error(Errc::kUsage, "no device matches '" + spec + "' (devices: " + names + ")");
}

std::string format_device_list(const std::vector<DeviceInfo>& devices) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-3s %-5s %4s %11s %11s %-12s %-14s %s\n", "#", "type", "CUs",
                "global mem", "max alloc", "OpenCL C", "driver", "device (platform)");
  out += line;
  for (const auto& d : devices) {
    std::string cver = d.c_version;
    if (cver.rfind("OpenCL C ", 0) == 0) cver = cver.substr(9);
    std::snprintf(line, sizeof line, "%-3zu %-5s %4u %11s %11s %-12s %-14s %s (%s)\n", d.index,
                  d.type.c_str(), d.compute_units, mib(d.global_mem).c_str(),
                  mib(d.max_alloc).c_str(), cver.c_str(), d.driver_version.c_str(), d.name.c_str(),
                  d.platform_name.c_str());
    out += line;
  }
  return out;
}

}  // namespace clreduce
