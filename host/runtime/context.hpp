// context.hpp: one device's OpenCL context, profiling queue and program cache. Programs are
// cached in memory by (file contents, options): an edited .cl file is rebuilt, never served stale.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/capabilities.hpp"
#include "clreduce/cl.hpp"
#include "runtime/device.hpp"
#include "clreduce/options.hpp"

namespace clreduce {

class Context {
 public:
  // kernel_dir as found by find_kernel_dir(); verbose prints each build's options to stderr.
  // tuning: the knobs (options.hpp); the CLI passes tuning_from_env() plus its --tune settings.
  Context(const DeviceInfo& info, std::string kernel_dir, bool verbose = false, Tuning tuning = {});

  const DeviceInfo& info() const { return info_; }
  cl::Context& context() { return context_; }
  cl::CommandQueue& queue() { return queue_; }
  const std::string& kernel_dir() const { return kernel_dir_; }
  bool verbose() const { return verbose_; }
  // The tuning knobs; read when a plan is made, so a change applies to the next plan.
  const Tuning& tuning() const { return tuning_; }
  Tuning& tuning() { return tuning_; }

  // Builds `file` (relative to the kernel dir) with clreduce.h spliced in front, and each line
  // `#include "clr_NAME.h"` replaced by that kernel-dir header, and returns kernel `name`.
  // `#line` directives keep compiler messages pointing into the user's files.
  // Throws Error(Errc::kBuild) with the device, file, options and log on failure.
  cl::Kernel kernel(const std::string& file, const std::string& name, const std::string& options);

  // Programs built by kernel() so far (each is kept for the context's life).
  std::size_t programs_built() const { return programs_.size(); }

  // Tries to build `source` (a complete program) with options; returns false on any failure.
  // For start-up capability probes.
  bool try_build(const std::string& source, const std::string& options, cl::Program* out);

  // Optional device features (warp shuffle, sub-groups, work-group collectives), probed on the
  // first call by trial builds and numeric checks (capabilities.hpp), then cached.
  const Capabilities& caps();

  // A device buffer cached by key, at least `bytes` large, zero-filled when (re)allocated;
  // reused across repetitions and variants.
  cl::Buffer& scratch(const std::string& key, std::size_t bytes);

  // Results of start-up probes (trial build plus numeric check), kept for this context's life
  // so each probe runs once per context. Keys and values belong to the probing code.
  std::map<std::string, std::string>& probes() { return probes_; }

 private:
  std::string read_source(const std::string& file) const;

  DeviceInfo info_;
  std::string kernel_dir_;
  bool verbose_;
  Tuning tuning_;
  cl::Context context_;
  cl::CommandQueue queue_;
  std::map<std::string, cl::Program> programs_;  // key: options + '\0' + full source
  std::map<std::string, std::pair<std::size_t, cl::Buffer>> scratch_;
  std::optional<Capabilities> caps_;
  std::map<std::string, std::string> probes_;
};

// Rewrites "<kernel>:L:" / "<source>:L:" positions (compilers that ignore #line) in a build log
// into clreduce.h or `file` positions, given the header's line count and the number of lines
// spliced in front of the kernel file.
std::string remap_log(const std::string& log, const std::string& file, std::size_t header_lines,
                      std::size_t prefix_lines);

// Reads a whole text file; throws Error(Errc::kBuild) if it cannot.
std::string read_text_file(const std::string& path);

}  // namespace clreduce
