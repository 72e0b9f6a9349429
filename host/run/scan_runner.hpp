// scan_runner.hpp: the scan session of the run harness (runner.hpp): upload, warm-up, timed
// repetitions, the check of every element against the sequential scan, and the seeds' loop timed
// beside it. Outputs are pre-filled with a sentinel each run, so an element no kernel wrote fails.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "run/runner.hpp"
#include "runtime/context.hpp"
#include "scan/scan_variant.hpp"
#include "verify/scan_reference.hpp"

namespace clreduce {

struct ScanOptions {
  bool exclusive = false;           // --exclusive
  bool segmented = false;           // --segments or --segment-length given
  std::vector<std::uint8_t> flags;  // when segmented: n bytes, nonzero where a segment starts
};

// The segment flags for n elements: from a .npy flag array (read_npy_flags: any integer or bool
// dtype) or a start every `length` elements (length > 0); neither: empty. A file whose length is
// not n throws Error(Errc::kUsage).
std::vector<std::uint8_t> segment_flags(std::size_t n, const std::string& file, std::size_t length);

// A scan session: the array, the flags, the baseline time and the reference's last element,
// shared by every scan variant run on it; timed, verified and rated by the Session's one loop
// and step.
class ScanSession : public Session {
 public:
  // Throws Error for double on a device without fp64 and flags whose length is not data.n.
  // Arrays of any size run: in chunks past one allocation, streamed past device memory. An arg op
  // is accepted: every run is then skipped with the reason.
  ScanSession(Context& ctx, const HostArray& data, Op op, RunConfig cfg, ScanOptions opts);
  // Several devices: each context scans its share of the array (cfg.share_weights; equal when
  // empty). Not segmented: every share but the last is reduced first (fast's reduction, with the
  // scan's operator and accumulator), the totals are scanned on the host, and each share is
  // scanned once with its carry-in: one more read of the input instead of a read and write of
  // the output. Segmented: the shares are scanned at once, their carries scanned on the host
  // (the seeds' flag operator), and each device adds its carry to its share's output.
  ScanSession(const std::vector<Context*>& ctxs, const HostArray& data, Op op, RunConfig cfg,
              ScanOptions opts);
  // Plans v for this array and runs the plan; with output, the device's last result is copied
  // there (type acc, data.n elements).
  RunRecord run(const ScanVariant& v, HostArray* output = nullptr);
  // The last run's output (of a variant or the peer), as a view of the session's memory: valid
  // until the next run or the session's end. No copy, for writing large outputs.
  HostArray last_output() const;
  const ChunkLayout& layout() const { return layout_; }
  // The OpenMP scan peer on the same array (omp_scan.hpp): variant "omp", kind "peer", verified
  // like a variant; skipped, with the reason, for a scan the peer does not have.
  RunRecord run_omp();
  const ScanProblem& problem() const { return problem_; }

 private:
  ScanProblem problem_;
  ScanOptions opts_;
  std::string refused_;  // why no scan variant can run this (arg ops)
  Value expected_;
  Bytes host_out_;  // the sequential loop's output, then each device result
  // The segment flags where the device reads them: a copy in the library's page-aligned memory
  // (a vector's own is aligned to 16 bytes only), so that a CPU device may use them in place.
  Bytes device_flags_;
  ChunkLayout layout_;
  std::unique_ptr<ChunkedArray> array_;
  double upload_ms_ = 0.0;
  ChunkedArray& device_array();
  // One device's share (several devices).
  struct Part {
    Context* ctx = nullptr;
    HostArray view;
    std::uint64_t first = 0;
    ChunkLayout layout;
    std::unique_ptr<ChunkedArray> array;
    double upload_ms = 0.0;
  };
  std::vector<Part> parts_;  // in the array's order
  // Several devices, split (scan-split): parts_[0] is the array's first piece, on the last
  // device (which also has the last piece), scanned while the others' totals are taken.
  bool split_ = false;
  bool crowded_ = false;  // not split: the last device could not hold the piece and its share
  RunRecord run_one(const ScanVariant& v, HostArray* output);
  RunRecord run_parts(const ScanVariant& v, RunRecord rec);
  // The reduction that gives a piece's total before the piece is scanned with its carry-in
  // (several devices, ranks): fast's, with the scan's operator and accumulator, for pieces of
  // up to n elements. Null where the scan is segmented (a piece's carry then depends on where
  // its last segment starts) or fast cannot run it on ctx's device: the carry pass then.
  std::unique_ptr<ReducePlan> total_plan(Context& ctx, std::size_t n) const;
  // MPI: this rank's slice scanned, the carry from the ranks before it (MPI_Exscan) taken by the
  // scan (a total first, as for several devices) or added on the device after it (segmented),
  // checked from the reference's state where the slice starts. Split (RunConfig::first_piece):
  // the last rank scans the first piece of rank 0's slice while the others take their totals.
  RunRecord run_ranked(const ScanVariant& v, RunRecord rec, const ScanProblem& pp);
  ScanRefState ref_start_;
  // MPI, a split scan (RunConfig::first_piece): on rank 0 its share, the slice past the first
  // piece (a view; its output in host_out_); on the last rank the first piece, sent by rank 0
  // once (in), its output (out) sent back to rank 0 after each variant's timed runs.
  struct RankPiece {
    HostArray view;
    Bytes in, out;
    unsigned char* out_at = nullptr;
    ChunkLayout layout;
    std::unique_ptr<ChunkedArray> array;
    double upload_ms = 0.0;
    bool moved = false;  // the first piece's input has reached the last rank
  };
  RankPiece rank_piece_;
};

}  // namespace clreduce
