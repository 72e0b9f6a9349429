// context.cpp: program building with spliced headers, readable build failures, buffer reuse.
#include "runtime/context.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <fstream>
#include <iostream>
#include <sstream>

#include "clreduce/error.hpp"
#include "runtime/transfer.hpp"
#include "runtime/build_program.hpp"

namespace clreduce {

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(Errc::kBuild, "cannot read kernel source " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

Context::Context(const DeviceInfo& info, std::string kernel_dir, bool verbose, Tuning tuning)
    : info_(info), kernel_dir_(std::move(kernel_dir)), verbose_(verbose), tuning_(std::move(tuning)) {
  context_ = cl::Context(info_.device);
  queue_ = cl::CommandQueue(context_, info_.device, CL_QUEUE_PROFILING_ENABLE);
}

// Compilers that ignore #line (NVIDIA's reports "<kernel>:239:29") get their positions mapped
// back: line L of the spliced source is clreduce.h or the kernel file, by where the splice put it.
std::string remap_log(const std::string& log, const std::string& file,
                             std::size_t header_lines, std::size_t prefix_lines) {
  static const std::regex kPos(R"(<(kernel|source)>:(\d+):)");
  std::string out;
  auto begin = log.cbegin();
  std::smatch m;
  while (std::regex_search(begin, log.cend(), m, kPos)) {
    out.append(begin, m[0].first);
    const std::size_t line = std::stoul(m[2].str());
    // Line 1 is #line, the header follows; the kernel file starts after prefix_lines lines.
    if (line >= 2 && line < 2 + header_lines) {
      out += "clreduce.h:" + std::to_string(line - 1) + ":";
    } else if (line > prefix_lines) {
      out += file + ":" + std::to_string(line - prefix_lines) + ":";
    } else {
      out += m[0].str();
    }
    begin = m[0].second;
  }
  out.append(begin, log.cend());
  return out;
}

std::string Context::read_source(const std::string& file) const {
  const std::string header = read_text_file(kernel_dir_ + "/clreduce.h");
  const std::string body = read_text_file(kernel_dir_ + "/" + file);
  // A line `#include "clr_NAME.h"` is replaced by that header from the kernel dir, under #line
  // directives, so shared kernel helpers need no -I (whose path could hold spaces).
  std::string out = "#line 1 \"clreduce.h\"\n" + header + "\n#line 1 \"" + file + "\"\n";
  std::size_t pos = 0, line = 1;
  while (pos < body.size()) {
    std::size_t end = body.find('\n', pos);
    end = end == std::string::npos ? body.size() : end + 1;
    const std::string text = body.substr(pos, end - pos);
    const std::string prefix = "#include \"clr_";
    const std::size_t close = text.find('"', prefix.size());
    if (text.compare(0, prefix.size(), prefix) == 0 && close != std::string::npos) {
      const std::string name = text.substr(prefix.size() - 4, close - (prefix.size() - 4));
      out += "#line 1 \"" + name + "\"\n" + read_text_file(kernel_dir_ + "/" + name) + "\n#line " +
             std::to_string(line + 1) + " \"" + file + "\"\n";
    } else {
      out += text;
    }
    pos = end;
    ++line;
  }
  return out;
}

cl::Kernel Context::kernel(const std::string& file, const std::string& name,
                           const std::string& base_options) {
  std::string options = base_options;
  if (!tuning_.build_options.empty()) options += " " + tuning_.build_options;
  const std::string source = read_source(file);
  const std::string key = options + '\0' + source;
  auto it = programs_.find(key);
  if (it == programs_.end()) {
    if (verbose_) std::cerr << "build " << file << " " << options << "\n";
    cl::Program program(context_, source);
    try {
      build_program(program, info_.device, options, verbose_, file);
    } catch (const cl::Error&) {
      std::string log;
      try {
        log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(info_.device);
      } catch (const cl::Error&) {
        log = "(no build log)";
      }
      const std::string header = read_text_file(kernel_dir_ + "/clreduce.h");
      const std::string body = read_text_file(kernel_dir_ + "/" + file);
      const auto lines = [](const std::string& s) {
        return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
      };
      const std::size_t header_lines = lines(header) + (header.empty() || header.back() == '\n' ? 0 : 1);
      const std::size_t prefix_lines = lines(source) - lines(body);
      throw Error(Errc::kBuild, "kernel build failed on " + info_.name + ": " + kernel_dir_ + "/" +
                                  file + " with options '" + options + "'\n" +
                                  remap_log(log, file, header_lines, prefix_lines));
    }
    it = programs_.emplace(key, program).first;
  }
  try {
    return cl::Kernel(it->second, name.c_str());
  } catch (const cl::Error& e) {
    throw Error(Errc::kBuild, "kernel '" + name + "' not found in " + kernel_dir_ + "/" + file +
                                ": " + cl_error_name(e.err()));
  }
}

bool Context::try_build(const std::string& source, const std::string& options, cl::Program* out) {
  try {
    cl::Program program(context_, source);
    build_program(program, info_.device, options, verbose_, "a trial build");
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
      enqueue_zero(queue_, it->second.second, 0, bytes, tuning_.transfer_piece);
    }
  }
  return it->second.second;
}

}  // namespace clreduce
