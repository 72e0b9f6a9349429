// context.hpp: one device's OpenCL context, profiling queue, program cache and per-device answers.
// Kernel sources are read once and kept (spliced); each build request checks the files' sizes
// and modification times and rereads only what changed, so an edited .cl file is rebuilt, never
// served stale. Programs are cached by (hash of the spliced source, options).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/error.hpp"
#include "clreduce/options.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/device.hpp"
#include "runtime/transfer.hpp"

namespace clreduce {

class Context {
 public:
  // kernel_dir as found by find_kernel_dir(); verbose prints each build's options to stderr.
  // tuning: the knobs (options.hpp); the CLI passes tuning_from_env() plus its --tune settings.
  Context(const DeviceInfo& info, std::string kernel_dir, bool verbose = false, Tuning tuning = {});
  // The same on a context someone else made (a program's own), which must hold info.device:
  // its buffers are this context's buffers. clreduce's queue is its own (in order, profiling),
  // or, where `queue` is given, that queue itself (the program's, in order; with or without
  // profiling: events_ms() is NaN without).
  Context(const DeviceInfo& info, const cl::Context& context, std::string kernel_dir,
          bool verbose = false, Tuning tuning = {}, const cl::CommandQueue* queue = nullptr);

  const DeviceInfo& info() const { return info_; }
  cl::Context& context() { return context_; }
  cl::CommandQueue& queue() { return queue_; }
  const std::string& kernel_dir() const { return kernel_dir_; }
  bool verbose() const { return verbose_; }

  // Where a launch stores its event: a new element of `events`, or nowhere (nullptr) while an
  // EventsOff of this context is alive. An event costs NVIDIA's driver about 2 us a launch
  // (docs/PERF.md); the library's enqueue-only calls that the caller asked for no event, on the
  // program's in-order queue (whose order is all that follows them need), make none.
  cl::Event* event_slot(std::vector<cl::Event>& events) {
    if (events_off_) return nullptr;
    events.emplace_back();
    return &events.back();
  }
  bool events_off() const { return events_off_; }
  // While alive, event_slot() gives nullptr (launches make no events).
  class EventsOff {
   public:
    explicit EventsOff(Context& ctx) : ctx_(ctx), was_(ctx.events_off_) { ctx.events_off_ = true; }
    ~EventsOff() { ctx_.events_off_ = was_; }
    EventsOff(const EventsOff&) = delete;
    EventsOff& operator=(const EventsOff&) = delete;

   private:
    Context& ctx_;
    bool was_;
  };
  // The tuning knobs; read when a plan is made, so a change applies to the next plan.
  const Tuning& tuning() const { return tuning_; }
  Tuning& tuning() { return tuning_; }

  // Builds `file` (relative to the kernel dir) with clreduce.h spliced in front, and each line
  // `#include "clr_NAME.h"` replaced by that kernel-dir header, and returns a new kernel object
  // `name` of it. `#line` directives keep compiler messages pointing into the user's files.
  // The spliced text is kept per file and revalidated by the files' sizes and modification
  // times (no read unless one changed); the program is built once per (text, options).
  // For making plans: a plan holds its kernels, so nothing here runs inside a timed loop.
  // Throws Error(Errc::kBuild) with the device, file, options and log on failure (or what is
  // wrong with the compiler's kernel cache, where that stopped the build).
  cl::Kernel kernel(const std::string& file, const std::string& name, const std::string& options) {
    return kernel(file, name, options, "");
  }
  // The same with `tail`, generated code (user expressions under their own #line directives),
  // appended after the kernel file; the program is cached by (text with the tail, options).
  cl::Kernel kernel(const std::string& file, const std::string& name, const std::string& options,
                    const std::string& tail);

  // Programs built by kernel() so far (each is kept for the context's life).
  std::size_t programs_built() const { return programs_.size(); }
  // The 64-bit FNV-1a hash of `file`'s spliced source as kernel() would build it now
  // (revalidated the same way), to key answers that depend on a kernel's text.
  std::uint64_t source_hash(const std::string& file);

  // Tries to build `source` (a complete program) with options; returns false when it does not
  // build. For start-up capability probes. Throws Error(Errc::kBuild) where the build could not
  // be done at all (the compiler's kernel cache cannot be written: kernel_cache.hpp).
  bool try_build(const std::string& source, const std::string& options, cl::Program* out);

  // Optional device features (warp shuffle, sub-groups, work-group collectives), probed on the
  // first call by trial builds and numeric checks (capabilities.hpp), then cached.
  const Capabilities& caps();

  // The answer of a start-up probe (trial build, numeric check, choice of a path), computed by
  // `run` on the first call with `key` and kept for this context's life. The key names the
  // probe and everything its answer depends on (a kernel's source_hash(), the knobs it reads).
  // An exception from `run` propagates and stores nothing. Error(Errc::kInternal) if `run`
  // asks for its own key.
  const std::string& probe(const std::string& key, const std::function<std::string()>& run);
  // Every probe answer so far, by key.
  const std::map<std::string, std::string>& probes() const { return probes_; }

  // The time limit of a wait on work that moves `bytes`: the timeout knob (--timeout) when set,
  // else the default for those bytes (transfer.hpp's time_limit()). Every wait on the device
  // takes it, start-up checks and capability probes included.
  TimeLimit time_limit(double bytes = 0) const;
  // Flushes queue() and waits for everything on it within time_limit(bytes); a time-out names
  // doing() (when set) and `what`. For start-up checks and probes: the waits of a run are its own.
  void finish(const std::string& what, double bytes = 0);
  // Reads buf's first `bytes` bytes into dst, waiting as finish() does.
  void read(const cl::Buffer& buf, std::size_t bytes, void* dst, const std::string& what);
  // Writes src to buf's first `bytes` bytes, waiting as finish() does.
  void write(const cl::Buffer& buf, std::size_t bytes, const void* src, const std::string& what);

  // What the device is doing for the caller ("fast sum of 1000 int32 elements"), or "": the
  // messages of waits that are not the run's own (a start-up check made for its plan) name it.
  const std::string& doing() const { return doing_; }
  // Sets doing() for a scope.
  class Doing {
   public:
    Doing(Context& ctx, std::string what) : ctx_(ctx), saved_(std::move(ctx.doing_)) {
      ctx.doing_ = std::move(what);
    }
    ~Doing() { ctx_.doing_ = std::move(saved_); }
    Doing(const Doing&) = delete;
    Doing& operator=(const Doing&) = delete;

   private:
    Context& ctx_;
    std::string saved_;
  };

  // A new device buffer of `bytes` (at least 1), zero-filled before it is returned: small ones
  // copied from host zeros at creation (Oclgrind does not count a fill as initialising memory;
  // no wait on the queue), large ones by a fill.
  // On a CPU device under an address-space limit, a buffer that cannot be mapped is
  // Error(Errc::kUnsupported) before the runtime tries (check_buffer_fits()).
  cl::Buffer zeroed_buffer(std::size_t bytes);
  // The bytes of every buffer zeroed_buffer() has made on this context (plans' scratch, probes'
  // buffers, scratch()): what making a plan allocates is the growth across it.
  std::uint64_t buffer_bytes_made() const { return buffer_bytes_made_; }

  // A device buffer cached by key, at least `bytes` large, zero-filled when (re)allocated;
  // for the run harness's uploads, shared by every run on one array. Plans own their scratch.
  cl::Buffer& scratch(const std::string& key, std::size_t bytes);

  // The device's CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes: where a sub-buffer may start.
  std::size_t base_align() const { return base_align_; }
  // Bytes [offset, offset + bytes) of buf as a buffer of their own: buf itself when offset is 0,
  // else a sub-buffer. Throws Error(Errc::kUsage) when the range passes the end of buf or
  // offset is not a multiple of base_align(), Error(Errc::kRuntime) when the runtime refuses.
  cl::Buffer view(const cl::Buffer& buf, std::size_t offset, std::size_t bytes);

 private:
  struct FileStamp {
    std::string path;
    std::uintmax_t size = 0;
    std::filesystem::file_time_type mtime;
  };
  // One kernel file as kernel() builds it, and what it was read from.
  struct Source {
    std::string text;
    std::uint64_t hash = 0;
    std::size_t header_lines = 0;  // lines of clreduce.h
    std::size_t prefix_lines = 0;  // lines spliced in front of the kernel file's own
    std::vector<FileStamp> files;  // clreduce.h, the file, each spliced clr_*.h
  };
  // After a build that failed with `log`: Error(Errc::kBuild) naming `what` when the compiler's
  // kernel cache is the likely cause (no error in the log, and the cache cannot be written).
  void check_cache(const std::string& log, const std::string& what) const;
  // The spliced source of `file`, reread when any of its files changed size or time.
  const Source& source(const std::string& file);
  Source read_source(const std::string& file) const;

  DeviceInfo info_;
  std::string kernel_dir_;
  bool verbose_;
  bool events_off_ = false;
  Tuning tuning_;
  cl::Context context_;
  cl::CommandQueue queue_;
  std::size_t base_align_ = 1;
  std::uint64_t buffer_bytes_made_ = 0;
  std::map<std::string, Source> sources_;                                  // key: file
  std::map<std::pair<std::uint64_t, std::string>, cl::Program> programs_;  // (hash, options)
  std::map<std::string, std::pair<std::size_t, cl::Buffer>> scratch_;
  std::optional<Capabilities> caps_;
  std::map<std::string, std::string> probes_;
  std::set<std::string> probing_;  // keys whose probe is running
  std::string doing_;
};

// Whether an Error met by a start-up check (a variant's numeric check of a shape or path, which
// picks another when it fails) is the check's answer: the device cannot run that shape (a
// launch or size it refuses, a capability it lacks). A kernel file that does not build
// (Errc::kBuild), a wait past the time limit, an interrupt and clreduce's own bugs are not: they
// end the run, as in any other plan.
bool check_answer(const Error& e);

// Rewrites "<kernel>:L:" / "<source>:L:" positions (compilers that ignore #line) in a build log
// into clreduce.h or `file` positions, given the header's line count and the number of lines
// spliced in front of the kernel file; a position in `tail` (generated code built after the
// file, its first line at line tail_first of the whole text) where the tail's last #line
// directive before it places it (a user expression's "--map:1:5:", as compilers that honour
// #line report it).
std::string remap_log(const std::string& log, const std::string& file, std::size_t header_lines,
                      std::size_t prefix_lines, const std::string& tail = "",
                      std::size_t tail_first = 0);

// Reads a whole text file; throws Error(Errc::kBuild) if it cannot.
std::string read_text_file(const std::string& path);

// The 64-bit FNV-1a hash of s.
std::uint64_t fnv1a64(const std::string& s);

}  // namespace clreduce
