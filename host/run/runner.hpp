// runner.hpp: the run harness: one array on one device, and every run made on it (a reduction or
// scan plan, the OpenMP peer, the copy ceiling) timed by one loop (run/timing.hpp), verified
// against the sequential reference and rated by one step, into one record type.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reduce/variant.hpp"
#include "run/chunks.hpp"
#include "run/omp_peer.hpp"
#include "run/ranks.hpp"
#include "run/timing.hpp"
#include "runtime/context.hpp"
#include "verify/reference.hpp"

namespace clreduce {

struct RunConfig {
  std::uint64_t warmup = 1;  // untimed runs before the timed ones
  std::uint64_t repeat = 5;  // timed runs (at least one); medians are reported
  // Called (done, total) as chunks are launched, and with a description of each long step.
  std::function<void(const std::string&)> progress;
  std::size_t local_size = 0;  // work-group size; 0: the variant's choice
  std::string acc;             // accumulator type name (resolve_acc()); empty for NumPy's
  // Several devices (a session made with more than one context): each device's share of the
  // array, relative (empty: equal shares).
  std::vector<double> share_weights;
  // MPI: the ranks this process's array is one slice of (run/ranks.hpp; null or one rank: the
  // array is the whole), and the slice's place in the whole.
  const Ranks* ranks = nullptr;
  std::uint64_t first = 0;  // global index of the array's element 0
  std::uint64_t total = 0;  // elements of the whole array (0: this array's n)
  // A scan split across ranks (run/ranks.hpp, split_first_piece()): the array's first piece, the
  // start of rank 0's slice that the last rank scans; 0: none (every slice is rank_slice()'s).
  std::uint64_t first_piece = 0;
};

// One device's share of a run over several devices, or one rank's slice (RunRecord::parts).
struct PartInfo {
  std::string device;       // the device's name
  int device_index = -1;    // its global index (--list-devices); -1 for a rank
  int rank = -1;            // the MPI rank; -1 for a device share
  std::uint64_t first = 0;  // global index of the part's first element
  std::uint64_t n = 0;      // its elements
  double kernel_ms = 0.0;   // median of its summed kernel times
  double before_ms = -1.0;  // a scan's share: median kernel time of its first pass (its total,
                            // or its scan before the carries), which every share's second pass
                            // waits for; -1 where there is none
  double wall_ms = 0.0;     // median of its host time (launches to its read-back)
  double gbps = 0.0;        // its bytes moved / kernel_ms (0: undefined, an empty part)
  bool verified = false;    // its own result checked (reductions: against its part's reference)
  Value result;             // its own result (reductions), its last output (scans)
  std::string driver;       // a device's driver version (empty for a rank)
  std::string platform_version;  // its platform's OpenCL version (empty for a rank)
};

// What a scan's record adds to a reduction's.
struct ScanRunInfo {
  bool exclusive = false;
  bool segmented = false;
  std::int64_t first_wrong = -1;  // index of the first wrong element, -1 when none
  std::uint64_t wrong_count = 0;  // how many elements are wrong
};

// One run's outcome on one array: what --format json prints. A scan's result and expected are
// the last elements of its output and of the reference.
struct RunRecord {
  std::string variant;
  std::string kind = "clreduce";  // "clreduce", "peer" (omp) or "ceiling" (copy)
  Op op = Op::kSum;
  std::string op_text;  // printed instead of op's name when set: "expr" (user reductions)
  DType type = DType::kInt32;
  DType acc = DType::kInt64;  // accumulator (result) type
  std::size_t n = 0;
  std::string device;
  std::string driver;            // the device's driver version (CL_DRIVER_VERSION)
  std::string platform_version;  // its platform's OpenCL version (CL_PLATFORM_VERSION)
  bool skipped = false;
  std::string skip_reason;
  Value result;
  Value expected;
  // --op minmax: result and expected are the least value with its first index, these the
  // greatest (JSON result_min, index_min, result_max, index_max and expected_*).
  bool minmax = false;
  Value result_max;
  Value expected_max;
  bool verified = false;
  bool overflow = false;    // verified only because an order of float operations may overflow
  std::string verify_note;  // why verification failed, or what overflowed
  double bound = 0.0;       // float tolerance used
  // Float sums: the result's distance from the correctly rounded sum (exact_sum.hpp).
  bool has_error = false;
  double err_ulp = 0.0;        // representable values between them
  double err_rel = 0.0;        // |result - exact| / |exact|
  double kernel_ms = 0.0;      // median over repetitions of the summed kernel times of all launches
  double kernel_ms_min = 0.0;  // fastest and slowest repetition (the spread)
  double kernel_ms_max = 0.0;
  double wall_ms = 0.0;     // median of launches + read-back, host clock (streamed: and uploads)
  double upload_ms = 0.0;   // the one upload of the array before the timed runs (0: in place or
                            // streamed, which upload inside each run)
  double e2e_gbps = 0.0;    // input bytes / (upload_ms + wall_ms): the rate end to end
  std::size_t chunks = 1;   // chunks the array ran in (run/chunks.hpp)
  std::string layout;       // how the array lay on the device (ChunkLayout::str())
  double gbps = 0.0;        // bytes moved / kernel time (reductions: input; scans: input, flags
                            // and output; copy: bytes read + written); 0 when undefined (n = 0,
                            // no kernel time)
  double seq_ms = 0.0;      // the seeds' sequential loop on the host, median
  double seq_ms_min = 0.0;  // its fastest and slowest timed run (the spread)
  double seq_ms_max = 0.0;
  std::uint64_t seq_runs = 0;  // how many times it was timed (once for large arrays)
  double speedup = 0.0;        // seq_ms / kernel_ms; 0 when undefined (n = 0, no kernel time)
  std::size_t launches = 0;
  LaunchPolicy policy;
  // Peer time / this kernel time, by key ("vs_omp"): above 1, clreduce is faster. NaN: not
  // quoted, because one of the two timings is noisy.
  std::vector<std::pair<std::string, double>> ratios;
  // The timed runs spread too widely to trust the median (set by the caller, e.g. the CLI's rule:
  // noisy_spread()); seq_noisy: the same for the sequential loop's runs. The speedup is not
  // quoted when either is set.
  bool noisy = false;
  bool seq_noisy = false;
  // How the array was made, so a row can be reproduced (set by the caller; printed in JSON):
  // the .npy file read ("-": standard input), or empty for data generated from `seed`.
  std::string input;
  std::uint64_t seed = 0;
  int warmup = 0;  // as run
  int repeat = 0;
  // The mode-specific part: set for scans, empty for reductions.
  std::optional<ScanRunInfo> scan;
  // Several devices or ranks: each part's figures, in array order (empty: one device). The
  // record's own kernel_ms is then, for devices, the median over runs of each run's slowest
  // part (so at least every part's median, and more when the slowest part changes from run to
  // run); for ranks, the slowest rank's median. wall_ms is the whole's (several devices: threads
  // started to the last read-back; ranks: the slowest rank's), and gbps the whole array's bytes
  // over that kernel time.
  std::vector<PartInfo> parts;
  std::string slowest;  // the slowest part's device (or "rank R")
  int devices = 0;      // several devices: how many (0: one a part; a split scan has one part more)
  int ranks = 1;        // MPI ranks the array was split across
  double combine_ms = 0;  // the combine's time per run (host fold, MPI_Allreduce, MPI_Exscan
                          // and the carry pass), median

  // "reduce" or "scan".
  const char* mode() const { return scan ? "scan" : "reduce"; }
};

// What every session shares: the device, the array, the configuration, the sequential loop's
// time and the reference's answer, the timed loop and the verify-and-rate step.
class Session {
 public:
  const RunConfig& config() const { return cfg_; }

 protected:
  Session(Context& ctx, const HostArray& data, RunConfig cfg);
  // Throws Error(Errc::kUnsupported) for double (input or accumulator) on a device without fp64.
  void check_fp64(DType acc) const;
  // A record of this array and device for `variant`, with the sequential loop's time.
  RunRecord record(const std::string& variant, Op op, DType acc) const;
  // Times the seeds' sequential loop as the device runs are timed: fn() config().warmup times
  // untimed, then config().repeat times (once, with no warm-up, when the array is larger than
  // kSeqOnceBytes); sets seq_ms (the median), its spread and seq_runs.
  void time_sequential(const std::function<void()>& fn);
  // The time limit for a run moving `bytes` (Context::time_limit()).
  TimeLimit timeout_s(double bytes) const;
  // Sets rec's chunk fields from the layout, and its end-to-end rate.
  void set_layout(RunRecord& rec, const ChunkLayout& layout, double upload_ms) const;
  // Several devices: a share's figures (device, range, medians of its timed samples, GB/s at
  // `bytes` moved per run), and the whole's layout, chunks, uploads, end-to-end rate and slowest
  // share from every share's (in array order).
  struct Share {
    const ChunkLayout* layout;
    double upload_ms;
  };
  PartInfo share_info(const Context& ctx, std::uint64_t first, std::uint64_t n,
                      const std::vector<Sample>& samples, double bytes) const;
  void set_shares(RunRecord& rec, std::vector<PartInfo> parts,
                  const std::vector<Share>& shares) const;
  // Several devices: each one's share of the array (cfg.share_weights, equal when empty), after
  // checking there is a weight per device and that each has fp64 where acc or the array needs it.
  // Shares start on device_share_grain() of the devices and the element sizes e, so a CPU
  // device takes its share of aligned host arrays in place.
  std::vector<std::size_t> share_counts(const std::vector<Context*>& ctxs, DType acc,
                                        ElementBytes e) const;
  // MPI, collective (every rank calls it at once): the whole's record from every rank's kernel
  // (median, fastest, slowest run), wall, upload and sequential-loop times in rec, gathered in
  // rank order: a PartInfo per rank (its slice, times and GB/s at bytes_per_element); as the
  // whole's, the slowest rank's kernel time with that rank's spread, and the largest wall and
  // upload times of the ranks (they run at once: the whole is done when the last is); the slices'
  // loops added (their fastest and slowest runs too); the whole's GB/s, and its end-to-end rate:
  // the whole input over the slowest rank's upload + wall.
  // critical: each timed run's critical path over the ranks (a scan's slowest first pass plus
  // its slowest second pass, run/scan_runner.cpp), whose median and spread are then the whole's
  // kernel time; empty: the slowest rank's.
  void join_rank_times(RunRecord& rec, std::size_t bytes_per_element,
                       const std::vector<double>& critical = {}) const;
  // The timed loop of a device run, warmup + repeat times: prepare() untimed (e.g. a sentinel
  // write), then body(events) between two reads of the host clock (uploads, launches, read-back);
  // sets rec's kernel and wall times, their spread and its launches.
  void time_device(RunRecord& rec, const std::function<void()>& prepare,
                   const std::function<void(std::vector<cl::Event>&)>& body) const;
  // Runs one variant's run f() with `what` (the variant, op, type and size) as doing() of ctx_
  // and of each of `others` (the messages of start-up checks made for its plans name it), and
  // rethrows an OpenCL error met inside as an Error headed by `what`, saying what the user can
  // change (describe_cl_error()).
  RunRecord guarded(const std::string& what, const std::vector<Context*>& others,
                    const std::function<RunRecord()>& f);
  // The verify-and-rate step: the verdict (ok, why, the float bound used), then gbps from the
  // bytes moved per run and, for variants and peers, the speedup over the sequential loop.
  static void finish(RunRecord& rec, bool ok, const std::string& why, double bound,
                     double bytes_moved);

  Context& ctx_;
  const HostArray& data_;
  RunConfig cfg_;
  double seq_ms_ = 0.0;
  double seq_ms_min_ = 0.0;
  double seq_ms_max_ = 0.0;
  std::uint64_t seq_runs_ = 0;
};

// Arrays larger than this have their sequential loop timed once, not once per repetition.
constexpr std::size_t kSeqOnceBytes = std::size_t{256} << 20;

// Sets rec's kernel_ms (median), kernel_ms_min, kernel_ms_max, wall_ms (median) and launches
// (the last run's) from the timed samples (non-empty).
void set_timings(RunRecord& rec, const std::vector<Sample>& samples);

// Adds r's ratio "vs_omp", the OpenMP peer's time over r's (NaN: not quoted, when either timing
// is noisy), unless either was skipped, the peer did not verify, or a time or n is 0.
void add_vs_omp(RunRecord& r, const RunRecord& peer);

// The OpenMP peer's row beside run row `rec`: variant "omp", kind "peer", and rec's op, its
// text, minmax, type, accumulator, n, device, seed, warm-up, repeat and input.
RunRecord peer_row(const RunRecord& rec);

// A peer row's times from its timing: kernel_ms and wall_ms its median, its min and max, and
// the policy's path "openmp threads=N".
void set_peer_timing(RunRecord& rec, const PeerTiming& t);

// A reduction session: the array, its reference and the baseline time, shared by every variant
// run on it.
class ReduceSession : public Session {
 public:
  // Throws Error for n = 0 with an op that has no identity and for double on a device without
  // fp64. Arrays of any size run: in chunks past one allocation, streamed past device memory.
  ReduceSession(Context& ctx, const HostArray& data, Op op, RunConfig cfg);
  // Several devices: each context runs its share of the array (cfg.share_weights; equal when
  // empty), all at once; every run's record has the combined result and one PartInfo per device.
  ReduceSession(const std::vector<Context*>& ctxs, const HostArray& data, Op op, RunConfig cfg);
  // Plans v for this array and runs the plan: a record, skipped (with the reason) where v cannot.
  RunRecord run(const ReduceVariant& v);
  // The OpenMP peer on the same array: variant "omp", kind "peer", verified like a variant.
  RunRecord run_omp();
  // Device-to-device copy of the array (clEnqueueCopyBuffer): variant "copy", kind "ceiling",
  // gbps counting bytes read and written; verified by reading the copy back.
  RunRecord run_copy();
  // Host-to-device copy from pinned host memory (CL_MEM_ALLOC_HOST_PTR, mapped) of up to 1 GiB
  // of the array: variant "copy-h2d", kind "ceiling", gbps counting the bytes written: the
  // ceiling of a run whose array crosses the link (not used in place). Verified by reading back.
  RunRecord run_host_copy();
  // Whether run_host_copy() measures anything this run depends on: the array is not in place.
  bool crosses_link() const { return !layout_.in_place && layout_.chunks > 0; }
  const ReduceProblem& problem() const { return problem_; }
  // How the array lies on the device.
  const ChunkLayout& layout() const { return layout_; }
  // The problem a plan is made for: the whole, or one chunk of it.
  ReduceProblem plan_problem() const;

 private:
  // The device side of the array, made and uploaded on first use.
  ChunkedArray& device_array();
  // The float bound's budget of plan's run over `data` laid out as `layout`: a float sum's from
  // each chunk's tree (ReducePlan::sum_model()) and the chunks' fold; a product's n factors.
  SumPiece budget_of(const ReducePlan& plan, const HostArray& data,
                     const ChunkLayout& layout) const;
  // Verifies rec.result against the reference (budget: the run's float error budget) and rates
  // it.
  void finish_reduce(RunRecord& rec, const ErrorBudget& budget) const;

  // One device's share of the array (several devices).
  struct Part {
    Context* ctx = nullptr;
    HostArray view;  // the share's elements, a view of the array
    std::uint64_t first = 0;
    ChunkLayout layout;
    std::unique_ptr<ChunkedArray> array;
    double upload_ms = 0.0;
    Value expected;  // the share's own reference (empty shares: none)
    FloatStats stats;
  };
  RunRecord run_parts(const ReduceVariant& v, RunRecord rec);
  // MPI: joins this rank's result with the other ranks' (rank order), checks the whole.
  // state: a correctly rounded plan's (exact) pieces folded, whose exact states the ranks add
  // (null for other plans, and on a rank whose slice is empty).
  void join_ranks(RunRecord& rec, const SumPiece& slice, const ReduceFold* state);

  ReduceProblem problem_;
  Value expected_;
  std::optional<ExactState> expected_state_;  // float sums under ranks: the slice's exact state
  FloatStats stats_;
  ChunkLayout layout_;
  std::unique_ptr<ChunkedArray> array_;
  double upload_ms_ = 0.0;
  std::vector<Part> parts_;  // several devices; empty for one
  RunRecord run_one(const ReduceVariant& v);
};

}  // namespace clreduce
