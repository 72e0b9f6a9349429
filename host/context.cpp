// context.cpp: program building with spliced headers, readable build failures, buffer reuse.
#include "context.hpp"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "error.hpp"

namespace clreduce {

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(kExitBuild, "cannot read kernel source " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

Context::Context(const DeviceInfo& info, std::string kernel_dir, bool verbose)
    : info_(info), kernel_dir_(std::move(kernel_dir)), verbose_(verbose) {
  context_ = cl::Context(info_.device);
  queue_ = cl::CommandQueue(context_, info_.device, CL_QUEUE_PROFILING_ENABLE);
}

std::string Context::read_source(const std::string& file) const {
  const std::string header = read_text_file(kernel_dir_ + "/clreduce.h");
  const std::string body = read_text_file(kernel_dir_ + "/" + file);
  return "#line 1 \"clreduce.h\"\n" + header + "\n#line 1 \"" + file + "\"\n" + body;
}

cl::Kernel Context::kernel(const std::string& file, const std::string& name,
                           const std::string& base_options) {
  std::string options = base_options;
  if (const char* extra = std::getenv("CLREDUCE_BUILD_OPTIONS"); extra && *extra)
    options += std::string(" ") + extra;
  const std::string source = read_source(file);
  const std::string key = options + '\0' + source;
  auto it = programs_.find(key);
  if (it == programs_.end()) {
    if (verbose_) std::cerr << "build " << file << " " << options << "\n";
    cl::Program program(context_, source);
    try {
      program.build(std::vector<cl::Device>{info_.device}, options.c_str());
    } catch (const cl::Error&) {
      std::string log;
      try {
        log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(info_.device);
      } catch (const cl::Error&) {
        log = "(no build log)";
      }
      throw Error(kExitBuild, "kernel build failed on " + info_.name + ": " + kernel_dir_ + "/" +
                                  file + " with options '" + options + "'\n" + log);
    }
    it = programs_.emplace(key, program).first;
  }
  try {
    return cl::Kernel(it->second, name.c_str());
  } catch (const cl::Error& e) {
    throw Error(kExitBuild, "kernel '" + name + "' not found in " + kernel_dir_ + "/" + file +
                                ": " + cl_error_name(e.err()));
  }
}

bool Context::try_build(const std::string& source, const std::string& options, cl::Program* out) {
  try {
    cl::Program program(context_, source);
    program.build(std::vector<cl::Device>{info_.device}, options.c_str());
    if (out) *out = program;
    return true;
  } catch (const cl::Error&) {
    return false;
  }
}

const Capabilities& Context::caps() {
  if (!caps_) caps_ = probe_capabilities(*this);
  return *caps_;
}

cl::Buffer& Context::scratch(const std::string& key, std::size_t bytes) {
  bytes = bytes ? bytes : 1;
  auto it = scratch_.find(key);
  if (it == scratch_.end() || it->second.first < bytes) {
    scratch_[key] = {bytes, cl::Buffer(context_, CL_MEM_READ_WRITE, bytes)};
    it = scratch_.find(key);
    // Zeroed once, so no kernel ever reads (or atomically exchanges) uninitialised memory.
    // Small buffers by a host write (Oclgrind does not count a fill as initialising them).
    if (bytes <= (std::size_t{16} << 20)) {
      const std::vector<unsigned char> zeros(bytes, 0);
      queue_.enqueueWriteBuffer(it->second.second, CL_TRUE, 0, bytes, zeros.data());
    } else {
      queue_.enqueueFillBuffer(it->second.second, cl_uchar{0}, 0, bytes);
    }
  }
  return it->second.second;
}

}  // namespace clreduce
