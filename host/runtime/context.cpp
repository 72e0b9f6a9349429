// context.cpp: kernel sources read once and revalidated by size and time, programs built once
// per (source hash, options), readable build failures, probe answers, zeroed buffers and views.
#include "runtime/context.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include "clreduce/error.hpp"
#include "io/files.hpp"
#include "io/text.hpp"
#include "runtime/build_program.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/transfer.hpp"

namespace clreduce {

std::string read_text_file(const std::string& path) {
  return read_regular_file(path, Errc::kBuild, "kernel source");
}

Context::Context(const DeviceInfo& info, std::string kernel_dir, bool verbose, Tuning tuning)
    : info_(info),
      kernel_dir_(std::move(kernel_dir)),
      verbose_(verbose),
      tuning_(std::move(tuning)) {
  const std::unique_lock<std::mutex> lock = lock_opencl_setup();
  context_ = cl::Context(info_.device);
  queue_ = cl::CommandQueue(context_, info_.device, CL_QUEUE_PROFILING_ENABLE);
  base_align_ = std::max<std::size_t>(1, info_.device.getInfo<CL_DEVICE_MEM_BASE_ADDR_ALIGN>() / 8);
}

Context::Context(const DeviceInfo& info, const cl::Context& context, std::string kernel_dir,
                 bool verbose, Tuning tuning, const cl::CommandQueue* queue)
    : info_(info),
      kernel_dir_(std::move(kernel_dir)),
      verbose_(verbose),
      tuning_(std::move(tuning)) {
  const std::unique_lock<std::mutex> lock = lock_opencl_setup();
  context_ = context;
  queue_ = queue ? *queue : cl::CommandQueue(context_, info_.device, CL_QUEUE_PROFILING_ENABLE);
  base_align_ = std::max<std::size_t>(1, info_.device.getInfo<CL_DEVICE_MEM_BASE_ADDR_ALIGN>() / 8);
}

// Compilers that ignore #line (NVIDIA's reports "<kernel>:239:29") get their positions mapped
// back: line L of the spliced source is clreduce.h or the kernel file, by where the splice put it.
std::string remap_log(const std::string& log, const std::string& file, std::size_t header_lines,
                      std::size_t prefix_lines, const std::string& tail, std::size_t tail_first) {
  static const std::regex kPos(R"(<(kernel|source)>:(\d+):)");
  static const std::regex kLine(R"re(^\s*#\s*line\s+(\d+)\s+"([^"]*)"\s*$)re");
  // The tail's lines and, at each, the #line directive in force (its number, name and line).
  std::vector<std::string> tail_lines;
  for (std::size_t at = 0; !tail.empty() && at <= tail.size();) {
    const std::size_t end = std::min(tail.find('\n', at), tail.size());
    tail_lines.push_back(tail.substr(at, end - at));
    at = end + 1;
  }
  std::string out;
  auto begin = log.cbegin();
  std::smatch m;
  while (std::regex_search(begin, log.cend(), m, kPos)) {
    out.append(begin, m[0].first);
    const std::size_t line = std::stoul(m[2].str());
    // A line of the generated tail: where its last #line directive before it places it.
    std::string in_tail;
    if (!tail_lines.empty() && line >= tail_first && line - tail_first < tail_lines.size()) {
      const std::size_t k = line - tail_first;
      for (std::size_t d = k; d-- > 0;) {
        std::smatch dm;
        if (std::regex_match(tail_lines[d], dm, kLine)) {
          in_tail = dm[2].str() + ":" + std::to_string(std::stoul(dm[1].str()) + (k - d - 1)) + ":";
          break;
        }
      }
    }
    // Line 1 is #line, the header follows; the kernel file starts after prefix_lines lines.
    if (!in_tail.empty()) {
      out += in_tail;
    } else if (line >= 2 && line < 2 + header_lines) {
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

bool check_answer(const Error& e) {
  return e.category() != Errc::kBuild && e.category() != Errc::kTimeout &&
         e.category() != Errc::kInternal && e.category() != Errc::kInterrupted;
}

std::uint64_t fnv1a64(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {

std::size_t count_lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

Context::Source Context::read_source(const std::string& file) const {
  Source src;
  const auto stamp = [&](const std::string& path) {
    // Stamped before reading: an edit racing the read is seen as a change next time.
    FileStamp st;
    st.path = path;
    std::error_code ec;
    st.size = std::filesystem::file_size(path, ec);
    st.mtime = std::filesystem::last_write_time(path, ec);
    src.files.push_back(st);
    return read_text_file(path);
  };
  const std::string header = stamp(kernel_dir_ + "/clreduce.h");
  const std::string body = stamp(kernel_dir_ + "/" + file);
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
      out += "#line 1 \"" + name + "\"\n" + stamp(kernel_dir_ + "/" + name) + "\n#line " +
             std::to_string(line + 1) + " \"" + file + "\"\n";
    } else {
      out += text;
    }
    pos = end;
    ++line;
  }
  src.header_lines = count_lines(header) + (header.empty() || header.back() == '\n' ? 0 : 1);
  src.prefix_lines = count_lines(out) - count_lines(body);
  src.hash = fnv1a64(out);
  src.text = std::move(out);
  return src;
}

const Context::Source& Context::source(const std::string& file) {
  auto it = sources_.find(file);
  if (it != sources_.end()) {
    bool same = true;
    for (const FileStamp& st : it->second.files) {
      std::error_code e1, e2;
      const std::uintmax_t size = std::filesystem::file_size(st.path, e1);
      const auto mtime = std::filesystem::last_write_time(st.path, e2);
      if (e1 || e2 || size != st.size || mtime != st.mtime) {
        same = false;
        break;
      }
    }
    if (same) return it->second;
  }
  Source src = read_source(file);
  if (it == sources_.end()) return sources_.emplace(file, std::move(src)).first->second;
  it->second = std::move(src);
  return it->second;
}

std::uint64_t Context::source_hash(const std::string& file) { return source(file).hash; }

cl::Kernel Context::kernel(const std::string& file, const std::string& name,
                           const std::string& base_options, const std::string& tail) {
  std::string options = base_options;
  if (!tuning_.build_options.empty()) options += " " + tuning_.build_options;
  const Source& src = source(file);
  const std::uint64_t hash =
      tail.empty() ? src.hash : fnv1a64(std::to_string(src.hash) + "\n" + tail);
  const auto key = std::make_pair(hash, options);
  auto it = programs_.find(key);
  if (it == programs_.end()) {
    if (verbose_) std::cerr << "build " << file << " " << options << "\n";
    cl::Program program(context_, tail.empty() ? src.text : src.text + "\n" + tail);
    try {
      build_program(program, info_.device, options, verbose_, file);
    } catch (const cl::Error&) {
      std::string log;
      try {
        log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(info_.device);
      } catch (const cl::Error&) {
        log = "(no build log)";
      }
      check_cache(log, kernel_dir_ + "/" + file);
      throw Error(Errc::kBuild, "kernel build failed on " + info_.name + ": " +
                                    printable(kernel_dir_ + "/" + file) + " with options '" +
                                    printable(options) + "'\n" +
                                    remap_log(log, file, src.header_lines, src.prefix_lines, tail,
                                              count_lines(src.text) + 2));
    }
    it = programs_.emplace(key, program).first;
  }
  try {
    return cl::Kernel(it->second, name.c_str());
  } catch (const cl::Error& e) {
    throw Error(Errc::kBuild, "kernel '" + name + "' not found in " +
                                  printable(kernel_dir_ + "/" + file) + ": " +
                                  cl_error_name(e.err()));
  }
}

bool Context::try_build(const std::string& source, const std::string& options, cl::Program* out) {
  cl::Program program(context_, source);
  try {
    build_program(program, info_.device, options, verbose_, "a trial program");
    if (out) *out = program;
    return true;
  } catch (const cl::Error&) {
    std::string log;
    try {
      log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(info_.device);
    } catch (const cl::Error&) {
    }
    check_cache(log, "a trial program");  // a cache that cannot be written is no answer
    return false;
  }
}

void Context::check_cache(const std::string& log, const std::string& what) const {
  // A build that failed with no error from the compiler: under PoCL, its kernel cache may be the
  // cause (a file where the folder should be, a folder it cannot write, a full disk).
  if (log.find("error") != std::string::npos || !is_pocl_platform(info_.platform_name)) return;
  if (const std::string cache = pocl_cache_problem(); !cache.empty())
    throw Error(Errc::kBuild, "kernel build failed on " + info_.name + ": " + what + ": " + cache);
}

const Capabilities& Context::caps() {
  if (!caps_) caps_ = probe_capabilities(*this);
  return *caps_;
}

const std::string& Context::probe(const std::string& key, const std::function<std::string()>& run) {
  if (auto it = probes_.find(key); it != probes_.end()) return it->second;
  if (!probing_.insert(key).second)
    throw Error(Errc::kInternal, "internal: probe '" + key + "' depends on its own answer");
  std::string answer;
  try {
    answer = run();
  } catch (...) {
    probing_.erase(key);
    throw;
  }
  probing_.erase(key);
  return probes_.emplace(key, std::move(answer)).first->second;
}

TimeLimit Context::time_limit(double bytes) const {
  return clreduce::time_limit(tuning_.timeout, bytes);
}

void Context::finish(const std::string& what, double bytes) {
  clreduce::finish(queue_, time_limit(bytes), doing_.empty() ? what : doing_ + ": " + what);
}

void Context::read(const cl::Buffer& buf, std::size_t bytes, void* dst, const std::string& what) {
  enqueue_read(queue_, buf, 0, bytes, dst, tuning_.transfer_piece);
  finish(what, static_cast<double>(bytes));
}

void Context::write(const cl::Buffer& buf, std::size_t bytes, const void* src,
                    const std::string& what) {
  enqueue_write(queue_, buf, 0, bytes, src, tuning_.transfer_piece);
  finish(what, static_cast<double>(bytes));
}

cl::Buffer Context::zeroed_buffer(std::size_t bytes) {
  bytes = bytes ? bytes : 1;
  check_buffer_fits(info_, bytes);
  buffer_bytes_made_ += bytes;
  // Zeroed, so no kernel ever reads (or atomically exchanges) uninitialised memory. Small
  // buffers copied from host zeros as they are made (Oclgrind does not count a fill as
  // initialising them), which waits on nothing queued.
  if (bytes <= (std::size_t{16} << 20)) {
    std::vector<unsigned char> zeros(bytes, 0);
    return cl::Buffer(context_, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, zeros.data());
  }
  cl::Buffer b(context_, CL_MEM_READ_WRITE, bytes);
  enqueue_zero(queue_, b, 0, bytes, tuning_.transfer_piece);
  return b;
}

cl::Buffer& Context::scratch(const std::string& key, std::size_t bytes) {
  bytes = bytes ? bytes : 1;
  auto it = scratch_.find(key);
  if (it == scratch_.end() || it->second.first < bytes) {
    scratch_[key] = {bytes, zeroed_buffer(bytes)};
    it = scratch_.find(key);
  }
  return it->second.second;
}

cl::Buffer Context::view(const cl::Buffer& buf, std::size_t offset, std::size_t bytes) {
  const std::size_t size = buf.getInfo<CL_MEM_SIZE>();
  if (offset > size || bytes > size - offset)
    throw Error(Errc::kUsage,
                "bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) +
                    ") pass the end of a buffer of " + std::to_string(size) + " bytes");
  if (offset == 0) return buf;
  if (offset % base_align_ != 0)
    throw Error(Errc::kUsage, "a range starting at byte " + std::to_string(offset) +
                                  " is not aligned: ranges are sub-buffers, which must start at a "
                                  "multiple of " +
                                  info_.name + "'s base address alignment (" +
                                  std::to_string(base_align_) + " bytes)");
  cl_buffer_region region{offset, bytes ? bytes : 1};
  try {
    cl::Buffer parent = buf;
    return parent.createSubBuffer(0, CL_BUFFER_CREATE_TYPE_REGION, &region);
  } catch (const cl::Error& e) {
    throw Error(Errc::kRuntime, std::string("clCreateSubBuffer: ") + cl_error_name(e.err()) + " (" +
                                    std::to_string(e.err()) + ")");
  }
}

}  // namespace clreduce
