// device.cpp: platform/device enumeration. Platforms are walked explicitly (never
// cl::Device::getDefault, which misbehaves under some ICDs).
#include "runtime/device.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include "clreduce/error.hpp"
#include "core/checked.hpp"
#include "io/text.hpp"
#include "runtime/kernel_cache.hpp"

namespace clreduce {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back()))))
    s.pop_back();
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

// The soft address-space limit (ulimit -v), or UINT64_MAX when there is none.
std::uint64_t address_space_limit() {
  struct rlimit r {};
  if (::getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return static_cast<std::uint64_t>(r.rlim_cur);
}

// The ICDs the loader will try, and where it reads them from: OCL_ICD_FILENAMES, else the
// OCL_ICD_VENDORS directory, else /etc/OpenCL/vendors.
std::vector<std::string> registered_icds(std::string& where) {
  std::vector<std::string> icds;
  if (const char* files = std::getenv("OCL_ICD_FILENAMES"); files && *files) {
    where = "OCL_ICD_FILENAMES";
    std::stringstream s(files);
    for (std::string f; std::getline(s, f, ':');)
      if (!f.empty()) icds.push_back(f);
    return icds;
  }
  const char* vendors = std::getenv("OCL_ICD_VENDORS");
  where = vendors && *vendors ? vendors : "/etc/OpenCL/vendors";
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(where, ec)) return {fs::path(where).filename().string()};
  for (fs::directory_iterator it(where, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".icd") icds.push_back(it->path().filename().string());
  std::sort(icds.begin(), icds.end());
  return icds;
}

// Why clGetPlatformIDs found nothing (err its result), as one message.
std::string no_platform_message(cl_int err) {
  std::string where;
  const std::vector<std::string> icds = registered_icds(where);
  const std::uint64_t limit = address_space_limit();
  const std::string memory =
      limit != UINT64_MAX
          ? "; the address-space limit (ulimit -v) of " + mib(limit) +
                " is the likely cause: an OpenCL runtime maps hundreds of MiB when it loads"
          : "";
  const std::string code = std::string(cl_error_name(err)) + " (" + std::to_string(err) + ")";
  if (err != CL_SUCCESS && err != CL_PLATFORM_NOT_FOUND_KHR)
    return "no OpenCL platform found: clGetPlatformIDs failed with " + code +
           (memory.empty() && err == CL_OUT_OF_HOST_MEMORY ? "; the host is out of memory"
                                                           : memory);
  if (icds.empty())
    return "no OpenCL platform found: no ICD is registered in " + printable(where) +
           " (install one, e.g. pocl-opencl-icd)";
  std::string names;
  for (const std::string& i : icds) names += (names.empty() ? "" : ", ") + printable(i, 80);
  return "no OpenCL platform found: " + printable(where) + " registers " + names +
         " but none could be loaded (clGetPlatformIDs returned " + code + ")" +
         (memory.empty() ? "; a library it needs may be missing, or memory may be short" : memory);
}

}  // namespace

std::unique_lock<std::mutex> lock_opencl_setup() {
  static std::mutex m;
  return std::unique_lock<std::mutex>(m);
}

std::vector<DeviceInfo> list_devices() {
  const std::unique_lock<std::mutex> lock = lock_opencl_setup();
  std::vector<cl::Platform> platforms;
  cl_int err = CL_SUCCESS;
  try {
    err = cl::Platform::get(&platforms);
  } catch (const cl::Error& e) {
    err = e.err();
  }
  if (err != CL_SUCCESS || platforms.empty()) throw Error(Errc::kRuntime, no_platform_message(err));
  std::vector<DeviceInfo> out;
  for (auto& p : platforms) {
    std::vector<cl::Device> devs;
    try {
      p.getDevices(CL_DEVICE_TYPE_ALL, &devs);
    } catch (const cl::Error&) {
      continue;  // a platform with no devices
    }
    for (auto& d : devs) out.push_back(describe_device(p, d, out.size()));
  }
  if (out.empty()) {
    // PoCL finds no device when it cannot make its kernel cache's folder.
    std::string cache;
    for (const cl::Platform& p : platforms)
      if (is_pocl_platform(p.getInfo<CL_PLATFORM_NAME>())) cache = pocl_cache_problem();
    if (!cache.empty())
      throw Error(Errc::kBuild, "OpenCL platforms found, but no devices: " + cache);
    throw Error(Errc::kRuntime, "OpenCL platforms found, but no devices");
  }
  return out;
}

DeviceInfo describe_device(const cl::Platform& p, const cl::Device& d, std::size_t index) {
  DeviceInfo i;
  i.index = index;
  i.platform = p;
  i.device = d;
  i.platform_name = trim(p.getInfo<CL_PLATFORM_NAME>());
  i.platform_version = trim(p.getInfo<CL_PLATFORM_VERSION>());
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
  i.global_cache = d.getInfo<CL_DEVICE_GLOBAL_MEM_CACHE_SIZE>();
  i.max_wg_size = d.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>();
  i.base_align = d.getInfo<CL_DEVICE_MEM_BASE_ADDR_ALIGN>() / 8;
  const std::string ext = d.getInfo<CL_DEVICE_EXTENSIONS>();
  i.fp64 =
      ext.find("cl_khr_fp64") != std::string::npos || d.getInfo<CL_DEVICE_DOUBLE_FP_CONFIG>() != 0;
  i.is_nvidia = lower(i.vendor + " " + i.platform_name).find("nvidia") != std::string::npos;
  return i;
}

DeviceInfo find_device(const cl::Device& device) {
  const std::vector<DeviceInfo> devices = list_devices();
  for (const DeviceInfo& d : devices)
    if (d.device() == device()) return d;
  const std::unique_lock<std::mutex> lock = lock_opencl_setup();
  const cl::Platform platform(device.getInfo<CL_DEVICE_PLATFORM>());
  return describe_device(platform, device, devices.size());
}

namespace {

// A global index ("0", "12"): digits alone.
bool is_index(const std::string& spec) {
  return !spec.empty() &&
         std::all_of(spec.begin(), spec.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool is_device_type(const std::string& want) {
  return want == "cpu" || want == "gpu" || want == "accelerator";
}

// Every device a name or type matches, in index order: a type ("cpu", "gpu", "accelerator") every
// device of that type, else every device whose platform, name, vendor or versions hold the name
// (case-insensitive).
std::vector<DeviceInfo> matching_devices(const std::vector<DeviceInfo>& devices,
                                         const std::string& spec) {
  const std::string want = lower(spec);
  std::vector<DeviceInfo> out;
  if (want.empty()) return out;
  for (const auto& d : devices) {
    const std::string hay = lower(d.platform_name + " " + d.name + " " + d.vendor + " " +
                                  d.device_version + " " + d.driver_version);
    if (is_device_type(want) ? lower(d.type) == want : hay.find(want) != std::string::npos)
      out.push_back(d);
  }
  return out;
}

}  // namespace

DeviceInfo select_device(const std::vector<DeviceInfo>& devices, const std::string& spec) {
  std::string names;
  for (const auto& d : devices)
    names += (names.empty() ? "" : "; ") + std::to_string(d.index) + ": " + d.name + " (" +
             d.platform_name + ")";
  if (is_index(spec)) {
    std::size_t idx = 0;
    try {
      idx = std::stoull(spec);
    } catch (...) {
      idx = devices.size();
    }
    if (idx < devices.size()) return devices[idx];
    throw Error(Errc::kUsage, "no device " + printable(spec) + " (devices: " + names + ")");
  }
  const std::vector<DeviceInfo> found = matching_devices(devices, spec);
  if (!found.empty()) return found.front();
  if (is_device_type(lower(spec)))
    throw Error(Errc::kUsage, "no " + printable(spec) + " device (devices: " + names + ")");
  throw Error(Errc::kUsage, "no device matches '" + printable(spec) + "' (devices: " + names + ")");
}

std::vector<DeviceInfo> select_rank_devices(const std::vector<DeviceInfo>& devices,
                                            const std::string& spec) {
  const std::string want = lower(spec);
  if (is_index(spec) || spec.find(',') != std::string::npos || want == "all" ||
      want == "all-gpus" || want == "all-cpus")
    return select_devices(devices, spec);
  const std::vector<DeviceInfo> found = matching_devices(devices, spec);
  return found.empty() ? select_devices(devices, spec) : found;  // (that throws its message)
}

std::vector<DeviceInfo> select_devices(const std::vector<DeviceInfo>& devices,
                                       const std::string& spec) {
  std::vector<DeviceInfo> out;
  const std::string want = lower(spec);
  if (want == "all" || want == "all-gpus" || want == "all-cpus") {
    for (const auto& d : devices)
      if (want == "all" || lower(d.type) == want.substr(4, 3)) out.push_back(d);
    if (out.empty())
      throw Error(Errc::kUsage,
                  "--device " + printable(spec) + ": no such device (--list-devices)");
    return out;
  }
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = spec.find(',', pos);
    const std::string one = spec.substr(pos, comma == std::string::npos ? comma : comma - pos);
    if (one.empty())
      throw Error(Errc::kUsage, "--device " + printable(spec) + ": an empty name in the list");
    out.push_back(select_device(devices, one));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
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

Error describe_cl_error(const cl::Error& e) {
  const int err = e.err();
  const std::string call = e.what() && *e.what() ? e.what() : "OpenCL";
  const std::string code = std::string(cl_error_name(err)) + " (" + std::to_string(err) + ")";
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
      err == CL_INVALID_BUFFER_SIZE)
    return Error(Errc::kUnsupported,
                 "out of memory: " + call + " could not allocate (" + code +
                     "): the array and its results do not fit in the device's free memory "
                     "(a CPU device's is the host's)");
  if (err == CL_OUT_OF_RESOURCES)
    return Error(
        Errc::kRuntime,
        call + ": " + code + " (the device ran out of resources: memory, or a kernel fault)");
  return Error(Errc::kRuntime, call + ": " + code);
}

Error describe_cl_error(const cl::Error& e, const std::string& what) {
  const Error plain = describe_cl_error(e);
  std::string hint;
  switch (e.err()) {
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
    case CL_INVALID_GLOBAL_WORK_SIZE:
      hint =
          "the work-group size does not suit the kernel as built: change --local-size, or the "
          "-D options of --tune build-options (CLREDUCE_BUILD_OPTIONS)";
      break;
    case CL_OUT_OF_RESOURCES:
      hint = "try a smaller --local-size or --max-chunk, or another --variant";
      break;
    default:
      if (plain.category() == Errc::kUnsupported) {
        hint = "try a smaller --max-chunk (or --tune stream=on), or a smaller array";
      } else {
        hint =
            "try another --variant or --local-size, or leave out --tune build-options "
            "(--verbose shows each build's options and the launch policy)";
      }
  }
  return Error(plain.category(), what + ": " + plain.what() + "; " + hint);
}

HostMemory host_memory() {
  HostMemory m;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  m.as_limit = address_space_limit();
  std::ifstream statm("/proc/self/statm");
  std::uint64_t vm_pages = 0;
  if (statm >> vm_pages) m.mapped = vm_pages * page;
  if (m.as_limit != UINT64_MAX) {
    // Threads not started yet (the host loops', one per core) each map a stack: the stack limit, or
    // 8 MiB when it is unlimited; and a margin for the OpenCL runtime's own work. Checked after
    // the kernels are built (their memory is then mapped already), PoCL mapped at most 11 MiB
    // past the run's data, buffers and scratch (2^10 to 2^25 elements, warm and cold kernel
    // cache); 64 MiB leaves room for more.
    struct rlimit st {};
    std::uint64_t stack = std::uint64_t{8} << 20;
    if (::getrlimit(RLIMIT_STACK, &st) == 0 && st.rlim_cur != RLIM_INFINITY && st.rlim_cur > 0)
      stack = static_cast<std::uint64_t>(st.rlim_cur);
    m.reserve =
        std::max(1u, std::thread::hardware_concurrency()) * stack + (std::uint64_t{64} << 20);
  }
  std::ifstream meminfo("/proc/meminfo");
  std::uint64_t avail = 0, swap = 0;
  bool found = false;
  for (std::string key; meminfo >> key;) {
    std::uint64_t kb = 0;
    meminfo >> kb;
    if (key == "MemAvailable:") {
      avail = kb << 10;
      found = true;
    }
    if (key == "SwapFree:") swap = kb << 10;
    meminfo.ignore(64, '\n');
  }
  if (!found) {
    const long pages = ::sysconf(_SC_AVPHYS_PAGES);
    if (pages > 0) {
      avail = static_cast<std::uint64_t>(pages) * page;
      found = true;
    }
  }
  if (found) m.available = avail + swap;
  return m;
}

void MemoryNeed::add(const std::string& what, std::uint64_t bytes) {
  if (bytes == 0) return;
  for (auto& [name, b] : parts)
    if (name == what) {
      b = sat_add(b, bytes);
      return;
    }
  parts.emplace_back(what, bytes);
}

std::uint64_t MemoryNeed::total() const {
  std::uint64_t t = 0;
  for (const auto& part : parts) t = sat_add(t, part.second);
  return t;
}

std::string byte_words(std::uint64_t bytes) {
  if (bytes == UINT64_MAX) return "more than 2^64-1 bytes";
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  // The largest unit the count reaches, MiB kept up to 10 GiB (the figures of most refusals).
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  std::size_t u = 0;
  while (u + 1 < std::size(kUnits) && v >= (u == 1 ? 10240.0 : 1024.0)) {
    v /= 1024.0;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, v < 10.0 && u > 0 ? "%.1f %s" : "%.0f %s", v, kUnits[u]);
  return buf;
}

void check_host_memory(const MemoryNeed& need, const HostMemory& m) {
  const std::uint64_t total = need.total();
  std::string parts;
  for (const auto& [what, bytes] : need.parts)
    parts += (parts.empty() ? "" : ", ") + what + " " + byte_words(bytes);
  const std::string what =
      (total == UINT64_MAX ? std::string("this run needs more than 2^64-1 bytes of host memory")
                           : "this run needs " + byte_words(total) + " more host memory") +
      (parts.empty() ? std::string() : " (" + parts + ")");
  if (m.as_limit != UINT64_MAX) {
    const std::uint64_t used = sat_add(m.mapped, m.reserve);
    const std::uint64_t room = m.as_limit > used ? m.as_limit - used : 0;
    if (total > room)
      throw Error(Errc::kUnsupported, what + " but the address-space limit (ulimit -v) of " +
                                          byte_words(m.as_limit) + " leaves " + byte_words(room) +
                                          " (" + byte_words(m.mapped) + " mapped already, " +
                                          byte_words(m.reserve) +
                                          " kept for thread stacks and the OpenCL runtime)");
  }
  if (total == UINT64_MAX) throw Error(Errc::kUnsupported, what + ", more than any host can hold");
  if (total > m.available)
    throw Error(Errc::kUnsupported, what + " but the machine has " + byte_words(m.available) +
                                        " available (free memory and swap)");
}

void check_host_memory(const DeviceInfo& d, std::uint64_t host_bytes, std::uint64_t device_bytes,
                       const HostMemory& m) {
  MemoryNeed need;
  need.add("the array and its results", host_bytes);
  if (d.type == "CPU") need.add("the device's buffers (host memory on a CPU device)", device_bytes);
  check_host_memory(need, m);
}

void check_buffer_fits(const DeviceInfo& d, std::uint64_t bytes) {
  // Small buffers come and go by the thousand: only those that could matter are checked.
  if (d.type != "CPU" || bytes < (std::uint64_t{1} << 20)) return;
  const std::uint64_t limit = address_space_limit();
  if (limit == UINT64_MAX) return;
  std::uint64_t mapped = 0;
  if (std::ifstream statm("/proc/self/statm"); !(statm >> mapped)) return;
  mapped = sat_mul(mapped, static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
  // Room for the runtime's own bookkeeping of the buffer beside it.
  const std::uint64_t want = sat_add(sat_add(mapped, bytes), std::uint64_t{16} << 20);
  if (want > limit)
    throw Error(Errc::kUnsupported,
                "out of memory: a device buffer of " + byte_words(bytes) +
                    " does not fit under the address-space limit (ulimit -v) of " +
                    byte_words(limit) + " (" + byte_words(mapped) +
                    " mapped already; on a CPU device buffers are host memory)");
}

}  // namespace clreduce
