// options.hpp: every tuning and test knob of the library in one struct. Each knob has a name
// (KEY in `--tune KEY=VALUE`, CLREDUCE_KEY in the environment) and a checked range; a value out
// of range is refused with Errc::kUsage, never clamped or read as something else.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "clreduce/export.hpp"

namespace clreduce {

struct CLREDUCE_API Tuning {
  std::string build_options;              // build-options: appended to every kernel build
  std::vector<std::string> disable_caps;  // disable-caps: device features treated as absent
  std::string fast_shape = "auto";        // fast-shape: auto | gpu | cpu | topdown
  std::size_t fast_groups = 0;  // fast-groups: work-groups of fast; 0 = the shape's choice
  std::string fast_arg_streams = "auto";  // fast-arg-streams: auto | on | off (CPU shape)
  std::string exact_shape = "auto";       // exact-shape: auto | gpu | cpu
  std::size_t exact_groups = 0;      // exact-groups: work-groups of exact; 0 = the shape's choice
  unsigned exact_terms = 2;          // exact-terms: doubles per expansion, 2-4
  std::string exact_store = "auto";  // exact-store: auto | item | expansions | group (GPU shape)
  std::string scan_fast_path = "auto";  // scan-fast-path: auto | lookback | cpu | hierarchical
  std::string carry_layout = "auto";    // carry-layout: auto | blocked | strided
  std::string share_threads = "on";     // share-threads: on | off (several devices)
  std::string scan_split = "auto";      // scan-split: auto | off (several devices: a scan's pieces)
  double scan_split_piece = 0;    // scan-split-piece: the first piece's weight; 0 = auto (bytes)
  long long lookback_limit = -1;  // lookback-limit: waits before folding a tile; -1 = default
  unsigned lookback_rows = 0;     // lookback-rows: vectors per work-item, 1-16; 0 = auto
  unsigned lookback_vec = 0;      // lookback-vec: elements per load and store, 1/2/4/8; 0 = auto
  std::string lookback_read =
      "auto";                         // lookback-read: auto | atomic (NVIDIA: plain volatile reads)
  std::string lookback_ids = "auto";  // lookback-ids: auto | counter (NVIDIA: tile = group id)
  unsigned lookback_span = 0;  // lookback-span: descriptors a lane reads per round, 1-8; 0 = auto
  std::size_t scan_chunk = std::size_t{1}
                           << 20;       // scan-chunk: elements per work-item per superblock
  std::string scan_nt_stores = "auto";  // scan-nt-stores: auto | on | off (CPU scans' output)
  std::size_t scan_tile =
      0;  // scan-tile: elements per tile of scan-fast's CPU look-back path; 0 = auto
  std::size_t scan_groups = 0;  // scan-groups: groups of scan-fast's CPU path; 0 = four per CU
  std::size_t transfer_piece = std::size_t{1}
                               << 30;  // transfer-piece: bytes per fill/copy/read/write
  // Arrays past one allocation or past device memory (run/chunks.hpp).
  std::size_t max_chunk = 0;  // max-chunk: bytes per chunk of the input; 0 = the largest allocation
  std::string stream = "auto";         // stream: auto | on | off
  std::size_t stream_bytes = 0;        // stream-bytes: device bytes a streamed run keeps; 0: 4 GiB
  unsigned stream_slots = 3;           // stream-slots: chunks in flight when streaming, 2-8
  std::string stream_source = "auto";  // stream-source: auto | write | stage | stage-memcpy |
                                       // host-ptr
  std::string in_place = "auto";       // in-place: auto | on | off (CPU devices)
  std::size_t device_memory = 0;       // device-memory: bytes a run plans to use; 0 = the device's
  double timeout = 0;  // timeout: seconds any wait on the device may take; 0 = by bytes moved
  // The engine's built-in rows (host/reduce/expr_ops.cpp), each alternative timed against the
  // one before it.
  std::string expr_lanes = "auto";   // expr-lanes: auto | off (the CPU shape's vector lanes)
  std::string expr_fold = "on";      // expr-fold: on | off (minmax's, logsumexp's element folds)
  std::string var_sums = "auto";     // var-sums: auto | off (float var, std as shifted sums)
  std::string lse_exp = "auto";      // lse-exp: auto | double (logsumexp's fold: a float exp)
  std::string row_count = "n";       // row-count: n | acc (mean, var, std's count without --where)
  std::string expr_arg_vec = "on";   // expr-arg-vec: on | off (GPU shape: arg rows' vector loads)
  std::string expr_blocks = "auto";  // expr-blocks: auto | on (rows in double unblocked)
  // Segmented and axis reductions (reduce/segments.hpp); 0 = the shape's choice.
  std::string segments_shape = "auto";  // segments-shape: auto | gpu | cpu
  std::size_t segments_lane = 0;        // segments-lane: elements a lane takes (GPU shape)
  std::size_t segments_piece = 0;       // segments-piece: elements per piece of a long segment
  unsigned segments_unroll = 0;  // segments-unroll: loads in flight per lane, 1-16 (GPU; 0 auto: 4)
  unsigned segments_vec = 0;     // segments-vec: elements per load, 1/2/4/8/16 (GPU; 0 auto: 4)
  std::string segments_simd = "auto";  // segments-simd: auto | off (CPU shape: explicit vectors)
  std::size_t axis_cols = 0;           // axis-cols: results per work-item
  unsigned axis_unroll = 0;     // axis-unroll: rows loaded before folding, 1-16 (GPU; 0 auto: 4)
  std::size_t axis_pieces = 0;  // axis-pieces: pieces of the reduced rows per result
};

// One knob as documented: its key, accepted values and default, and what it does.
struct CLREDUCE_API TuningKey {
  const char* key;
  const char* values;
  const char* meaning;
};
// Every knob, in --help order.
CLREDUCE_API const std::vector<TuningKey>& tuning_keys();

// Sets knob `key` (as in tuning_keys(), or its environment name CLREDUCE_KEY with '_' for '-')
// from text. `source` names where the value came from in messages ("--tune fast-groups",
// "CLREDUCE_FAST_GROUPS"). Throws Error(Errc::kUsage) for an unknown key or a value out of range.
CLREDUCE_API void set_tuning(Tuning& t, const std::string& key, const std::string& value,
                             const std::string& source);
// Parses "KEY=VALUE" and sets it (source "--tune KEY").
CLREDUCE_API void set_tuning(Tuning& t, const std::string& key_eq_value);
// The defaults with every CLREDUCE_<KEY> environment variable that is set and non-empty applied;
// Error(Errc::kUsage) naming the variable for a value out of range. The clreduce command reads
// them; the library never does on its own (a Device's tuning is the defaults unless the program
// passes this, or opens it with Device::from_environment()).
CLREDUCE_API Tuning tuning_from_env();
// Every knob's value as text, in tuning_keys() order: (key, value), the same text for the same
// value (the ranks of one MPI run compare theirs).
CLREDUCE_API std::vector<std::pair<std::string, std::string>> tuning_values(const Tuning& t);
// Whether disable_caps names `cap` (or "all").
CLREDUCE_API bool cap_disabled(const Tuning& t, const std::string& cap);

}  // namespace clreduce
