// options.cpp: parsing and checking of the tuning knobs, from --tune KEY=VALUE or CLREDUCE_KEY.
#include "clreduce/options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "clreduce/error.hpp"
#include "io/text.hpp"

namespace clreduce {
namespace {

const char* const kCaps[] = {"nv_shfl", "subgroups", "wg_collectives"};

// A count in [lo, hi], decimal or a power of two written 2^K; anything else (signs, spaces,
// suffixes, overflow) is refused.
unsigned long long parse_count(const std::string& v, unsigned long long lo, unsigned long long hi,
                               const std::string& source, const std::string& what) {
  const auto all_digits = [](const std::string& d) {
    return !d.empty() && d.size() <= 19 &&
           std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  bool digits = all_digits(v);
  unsigned long long k = digits ? std::strtoull(v.c_str(), nullptr, 10) : 0;
  if (!digits && v.rfind("2^", 0) == 0 && all_digits(v.substr(2))) {
    const unsigned long long e = std::strtoull(v.c_str() + 2, nullptr, 10);
    digits = e < 64;
    k = digits ? 1ull << e : 0;
  }
  if (!digits || k < lo || k > hi)
    throw Error(Errc::kUsage, source + " must be " + what + ", not '" + printable(v) + "'");
  return k;
}

// "auto" (0) or a count from 1 to hi.
unsigned auto_or_count(const std::string& v, unsigned hi, const std::string& source) {
  if (v == "auto") return 0u;
  return static_cast<unsigned>(
      parse_count(v, 1, hi, source, "auto or a count from 1 to " + std::to_string(hi)));
}

std::string one_of(const std::string& v, std::initializer_list<const char*> allowed,
                   const std::string& source) {
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return v;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw Error(Errc::kUsage, source + " must be one of " + list + ", not '" + printable(v) + "'");
}

std::string env_name(const std::string& key) {
  std::string e = "CLREDUCE_";
  for (char c : key)
    e += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return e;
}

}  // namespace

const std::vector<TuningKey>& tuning_keys() {
  static const std::vector<TuningKey> keys = {
      {"build-options", "TEXT (none)", "appended to every kernel build, e.g. -cl-opt-disable"},
      {"disable-caps", "all | nv_shfl,subgroups,wg_collectives (none)",
       "treat those device features as absent (time or test the portable paths)"},
      {"fast-shape", "auto | gpu | cpu | topdown (auto)",
       "force fast's shape (still checked, falls back)"},
      {"fast-groups", "1-1048576 (the shape's choice)", "force fast's number of work-groups"},
      {"fast-arg-streams", "auto | on | off (auto)",
       "fast's CPU shape, argmin and argmax: each work-item screens its run as 4 streams side "
       "by side (more loads in flight) rather than in order; auto: where the array is at least "
       "the device's global memory cache (in cache the in-order loop is faster)"},
      {"exact-shape", "auto | gpu | cpu (auto)", "force exact's shape (still checked)"},
      {"exact-groups", "1-1048576 (the shape's choice)",
       "force exact's number of work-groups (at least n / 2^29)"},
      {"exact-terms", "2-4 (2)", "exact: doubles per floating-point expansion"},
      {"exact-store",
       "auto | item | expansions | group (auto: item for floats, expansions for doubles)",
       "exact's GPU shape: every element into the work-item's own store; expansions first "
       "(doubles: leftovers into the work-item's store); or the group's, with local atomics"},
      {"carry-layout", "auto | blocked | strided (auto: blocked on CPUs)",
       "how the carry-in pass walks a scan's output: a contiguous block per work-item, or "
       "grid-strided (coalesced on GPUs)"},
      {"share-threads", "on | off (on)",
       "several devices: run the shares at once, each from its own thread, or one after another "
       "(for a runtime that cannot run two contexts at once, such as a simulator)"},
      {"scan-split", "auto | off (auto)",
       "several devices, an unsegmented scan at default shares: the last device also takes the "
       "array's first piece and scans it while the others reduce their shares (auto); off: one "
       "share a device, each but the last reduced first"},
      {"scan-split-piece", "auto | 0.05-1 (auto: the input's bytes over the scan's)",
       "a split scan's first piece against a share's 1 (its scan should take as long as a "
       "share's total): auto weighs the two by the bytes they move, 1/3 for int32 -> int64"},
      {"scan-fast-path", "auto | lookback | cpu | cpu-lookback | hierarchical (auto)",
       "force scan-fast's path, unchecked"},
      {"lookback-limit", "0-2147483647 (2^20 on GPUs, 2^22 on CPUs; 2^24 on scan-fast's CPU path)",
       "look-back rounds a group waits on an unpublished predecessor before folding that tile's "
       "input itself; 0 folds at once, and folds the 3 tiles before each tile whatever their "
       "descriptors say (tests the fold)"},
      {"lookback-rows", "auto | 1-16 (auto: per device, element size and length)",
       "scan-lookback's vectors per work-item"},
      {"lookback-vec", "auto | 1 | 2 | 4 | 8 (auto: 16 bytes of the wider of element and sum)",
       "scan-lookback's elements per load and store"},
      {"lookback-read", "auto | atomic (auto)",
       "scan-lookback's reads of its predecessors' descriptors: on NVIDIA GPUs (auto) a volatile "
       "64-bit load, elsewhere or with atomic an atomic add of 0"},
      {"lookback-ids", "auto | counter (auto)",
       "scan-lookback's tile ids: on NVIDIA GPUs (auto) the group's id, whose groups start in "
       "order; elsewhere or with counter the next from an atomic counter"},
      {"lookback-span", "auto | 1-8 (auto: 1)",
       "scan-lookback's descriptors read by each lane per look-back round (with warp "
       "shuffles, each load reads a warp's width of neighbouring descriptors)"},
      {"scan-chunk", "1-1073741824 (1048576)",
       "scan-fast CPU path: elements per work-item per superblock"},
      {"scan-groups", "1-4096 (four per compute unit)", "scan-fast CPU path: work-groups"},
      {"scan-nt-stores", "auto | on | off (auto)",
       "scan-fast's CPU paths: write the output with streaming stores past the caches, where "
       "the compiler has them (on), or through the caches (off); auto: through the caches where "
       "the scan's input and output fit in a quarter of the device's cache, else as on"},
      {"scan-tile",
       "auto | 1024-1073741824 (auto: 32768, smaller where that leaves fewer than 4 "
       "tiles a compute unit)",
       "scan-fast CPU look-back path: elements per tile (one work-item each)"},
      {"transfer-piece", "1-1073741824 (1073741824)",
       "largest piece of one fill, copy, read or write of device memory, in bytes"},
      {"max-chunk", "1-2^62 bytes (0: the device's largest allocation)",
       "largest chunk of the input on the device; larger arrays run in chunks (also --max-chunk)"},
      {"stream", "auto | on | off (auto)",
       "stream host arrays through the device in chunks; auto: when they do not fit in its memory"},
      {"stream-bytes", "1-2^62 (4 GiB or half the device's memory)",
       "device memory a streamed run keeps for its chunks in flight"},
      {"stream-slots", "2-8 (3)", "chunks in flight when streaming (upload, kernel, read-back)"},
      {"stream-source", "auto | write | stage | stage-memcpy | host-ptr (auto: stage)",
       "how streamed chunks reach the device: a write from the array, a copy through pinned "
       "staging buffers (stage: streaming stores on x86-64; stage-memcpy: memcpy), or a copy "
       "from a buffer over the array (CL_MEM_USE_HOST_PTR)"},
      {"in-place", "auto | on | off (auto: on for CPU devices)",
       "use host arrays in place (CL_MEM_USE_HOST_PTR) instead of uploading them"},
      {"device-memory", "2^20-2^62 bytes (0: the device's global memory)",
       "device memory a run plans to use, at most the device's: arrays past 0.85 of it are "
       "streamed (leave room for a program's own buffers on a shared device)"},
      {"expr-lanes", "auto | off (auto)",
       "the engine's CPU shape: mean, dot, norm2, var, std, minmax and logsumexp of float and "
       "float16 arrays (no --where) fold 16 elements at a time in vector lanes; off: one by one"},
      {"expr-fold", "on | off (on)",
       "minmax and logsumexp fold each element into a work-item's running value in order (no "
       "index compared; one exp); off: by the reduce, as two partial results"},
      {"var-sums", "auto | off (auto)",
       "var and std of float and float16 arrays in double: shifted sums (plain additions), and a "
       "second pass shifted by the mean where the first's condition needs it; off: Chan's "
       "pairwise combine"},
      {"lse-exp", "auto | double (auto)",
       "logsumexp of float and float16 arrays in double, in its element fold: a float exp of each "
       "element's x - m (m moving only past m + 8; every rescale and combine in double); double: "
       "a double exp per element"},
      {"row-count", "n | acc (n)",
       "mean, var and std without --where: the count is n (not summed); acc: summed in the "
       "accumulator, as with --where"},
      {"expr-arg-vec", "on | off (on)",
       "the engine's GPU shape: argmin, argmax and minmax read 16-byte vectors, each lane mapped "
       "with its index; off: one element per load"},
      {"expr-blocks", "auto | on (auto)",
       "the engine's rows of float and float16 arrays worked in double fold each work-item's "
       "elements (CPU: each lane's) in one chain (bounds by its length); on: pairwise blocks of "
       "16"},
      {"timeout", "0.001-1000000 seconds (60 + 1 per 256 MiB moved)",
       "how long a device may take to finish a run before it is abandoned (exit 3; also "
       "--timeout)"},
      {"segments-shape", "auto | gpu | cpu (auto: the device's type)",
       "segments and axes: force the GPU shape (lanes per segment, a work-item per result) or "
       "the CPU shape (a work-item walks whole segments; tiles of rows by columns)"},
      {"segments-lane", "1-1048576 (GPU shape 32)",
       "segments, GPU shape: elements a lane takes before a segment gets more lanes"},
      {"segments-piece", "1-1073741824 (GPU shape 64 x work-group size; CPU shape 65536)",
       "segments: elements per piece of a long segment (pieces folded in order)"},
      {"segments-unroll", "auto | 1 | 2 | 4 | 8 | 16 (auto: 4)",
       "segments, GPU shape: loads a lane issues before folding them in order"},
      {"segments-vec", "auto | 1 | 2 | 4 | 8 | 16 (auto: 4)",
       "segments, GPU shape: elements per vector load (sum, prod, min, max; aligned vectors, "
       "the ends element by element)"},
      {"segments-simd", "auto | off (auto)",
       "segments and axes, CPU shape: sum, prod, min and max walk a segment with its "
       "accumulators in OpenCL vectors, and a tile's rows 16 results at a time (the same "
       "operations in the same order: the same results, bit for bit); off: scalar loops, "
       "vectorised or not by the OpenCL compiler"},
      {"axis-cols", "1-1048576 (GPU shape 1; CPU shape 4096 or the row)",
       "axes: results per work-item: GPU shape 1, 2, 4, 8 or 16 neighbouring ones (read as "
       "vectors where aligned: sum, prod, min, max); CPU shape the tiles' width"},
      {"axis-unroll", "auto | 1 | 2 | 4 | 8 | 16 (auto: 4)",
       "axes, GPU shape: rows a work-item loads before folding them in order"},
      {"axis-pieces", "1-1048576 (enough work-items for the device)",
       "axes: pieces the reduced rows are cut into per result (folded in order)"},
  };
  return keys;
}

void set_tuning(Tuning& t, const std::string& key_in, const std::string& v,
                const std::string& source) {
  std::string key = key_in;
  if (key.rfind("CLREDUCE_", 0) == 0) {
    key = key.substr(9);
    for (char& c : key)
      c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (key == "build-options") {
    t.build_options = v;
  } else if (key == "disable-caps") {
    t.disable_caps.clear();
    std::size_t pos = 0;
    while (pos <= v.size() && !v.empty()) {
      const std::size_t comma = std::min(v.find(',', pos), v.size());
      const std::string cap = v.substr(pos, comma - pos);
      if (cap != "all" && std::find(std::begin(kCaps), std::end(kCaps), cap) == std::end(kCaps))
        throw Error(Errc::kUsage,
                    source +
                        " must be 'all' or names from nv_shfl, subgroups, wg_collectives, not '" +
                        printable(v) + "'");
      t.disable_caps.push_back(cap);
      pos = comma + 1;
    }
  } else if (key == "fast-shape") {
    t.fast_shape = one_of(v, {"auto", "gpu", "cpu", "topdown"}, source);
  } else if (key == "fast-groups") {
    t.fast_groups = parse_count(v, 1, 1u << 20, source, "a count from 1 to 2^20");
  } else if (key == "fast-arg-streams") {
    t.fast_arg_streams = one_of(v, {"auto", "on", "off"}, source);
  } else if (key == "exact-shape") {
    t.exact_shape = one_of(v, {"auto", "gpu", "cpu"}, source);
  } else if (key == "exact-groups") {
    t.exact_groups = parse_count(v, 1, 1u << 20, source, "a count from 1 to 2^20");
  } else if (key == "exact-terms") {
    t.exact_terms = static_cast<unsigned>(parse_count(v, 2, 4, source, "a count from 2 to 4"));
  } else if (key == "exact-store") {
    t.exact_store = one_of(v, {"auto", "item", "expansions", "group"}, source);
  } else if (key == "share-threads") {
    t.share_threads = one_of(v, {"on", "off"}, source);
  } else if (key == "scan-split") {
    t.scan_split = one_of(v, {"auto", "off"}, source);
  } else if (key == "carry-layout") {
    t.carry_layout = one_of(v, {"auto", "blocked", "strided"}, source);
  } else if (key == "scan-fast-path") {
    t.scan_fast_path =
        one_of(v, {"auto", "lookback", "cpu", "cpu-lookback", "hierarchical"}, source);
  } else if (key == "lookback-limit") {
    t.lookback_limit =
        static_cast<long long>(parse_count(v, 0, 2147483647, source, "a count from 0 to 2^31-1"));
  } else if (key == "lookback-vec") {
    const std::string w = one_of(v, {"auto", "1", "2", "4", "8"}, source);
    t.lookback_vec = w == "auto" ? 0u : static_cast<unsigned>(std::stoul(w));
  } else if (key == "lookback-rows") {
    t.lookback_rows = auto_or_count(v, 16, source);
  } else if (key == "lookback-read") {
    t.lookback_read = one_of(v, {"auto", "atomic"}, source);
  } else if (key == "lookback-ids") {
    t.lookback_ids = one_of(v, {"auto", "counter"}, source);
  } else if (key == "lookback-span") {
    t.lookback_span = auto_or_count(v, 8, source);
  } else if (key == "scan-nt-stores") {
    t.scan_nt_stores = one_of(v, {"auto", "on", "off"}, source);
  } else if (key == "scan-tile") {
    t.scan_tile = v == "auto"
                      ? 0
                      : parse_count(v, 1024, 1u << 30, source, "auto or a count from 1024 to 2^30");
  } else if (key == "scan-chunk") {
    t.scan_chunk = parse_count(v, 1, 1u << 30, source, "a count from 1 to 2^30");
  } else if (key == "transfer-piece") {
    t.transfer_piece = parse_count(v, 1, 1u << 30, source, "a byte count from 1 to 2^30");
  } else if (key == "max-chunk") {
    t.max_chunk = parse_count(v, 1, 1ull << 62, source, "a byte count from 1 to 2^62");
  } else if (key == "stream") {
    t.stream = one_of(v, {"auto", "on", "off"}, source);
  } else if (key == "stream-bytes") {
    t.stream_bytes = parse_count(v, 1, 1ull << 62, source, "a byte count from 1 to 2^62");
  } else if (key == "stream-slots") {
    t.stream_slots = static_cast<unsigned>(parse_count(v, 2, 8, source, "a count from 2 to 8"));
  } else if (key == "stream-source") {
    t.stream_source = one_of(v, {"auto", "write", "stage", "stage-memcpy", "host-ptr"}, source);
  } else if (key == "in-place") {
    t.in_place = one_of(v, {"auto", "on", "off"}, source);
  } else if (key == "device-memory") {
    // At least 1 MiB: less would stream an array through chunks of a few elements.
    t.device_memory =
        parse_count(v, 1u << 20, 1ull << 62, source, "a byte count from 2^20 (1 MiB) to 2^62");
  } else if (key == "scan-split-piece") {
    char* end = nullptr;
    const double w = v == "auto" || v.empty() ? 0 : std::strtod(v.c_str(), &end);
    if (v.empty() || (v != "auto" && (*end != '\0' || !(w >= 0.05 && w <= 1))))
      throw Error(Errc::kUsage,
                  source + " must be auto or a weight from 0.05 to 1, not '" + printable(v) + "'");
    t.scan_split_piece = w;
  } else if (key == "timeout") {
    // Decimal seconds: 0.001 up to 10^6 (fractions make a timeout testable on a fast device).
    char* end = nullptr;
    const double s = v.empty() ? 0 : std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(s >= 0.001 && s <= 1e6))
      throw Error(Errc::kUsage,
                  source + " must be seconds from 0.001 to 10^6, not '" + printable(v) + "'");
    t.timeout = s;
  } else if (key == "expr-lanes") {
    t.expr_lanes = one_of(v, {"auto", "off"}, source);
  } else if (key == "expr-fold") {
    t.expr_fold = one_of(v, {"on", "off"}, source);
  } else if (key == "var-sums") {
    t.var_sums = one_of(v, {"auto", "off"}, source);
  } else if (key == "lse-exp") {
    t.lse_exp = one_of(v, {"auto", "double"}, source);
  } else if (key == "row-count") {
    t.row_count = one_of(v, {"n", "acc"}, source);
  } else if (key == "expr-arg-vec") {
    t.expr_arg_vec = one_of(v, {"on", "off"}, source);
  } else if (key == "expr-blocks") {
    t.expr_blocks = one_of(v, {"auto", "on"}, source);
  } else if (key == "segments-shape") {
    t.segments_shape = one_of(v, {"auto", "gpu", "cpu"}, source);
  } else if (key == "segments-lane") {
    t.segments_lane = parse_count(v, 1, 1u << 20, source, "a count from 1 to 2^20");
  } else if (key == "segments-piece") {
    t.segments_piece = parse_count(v, 1, 1u << 30, source, "a count from 1 to 2^30");
  } else if (key == "segments-unroll" || key == "segments-vec" || key == "axis-unroll") {
    // auto: 0, the shape's choice.
    const std::string w_text = one_of(v, {"auto", "1", "2", "4", "8", "16"}, source);
    const unsigned w = w_text == "auto" ? 0u : static_cast<unsigned>(std::stoul(w_text));
    (key == "segments-unroll" ? t.segments_unroll
     : key == "segments-vec"  ? t.segments_vec
                              : t.axis_unroll) = w;
  } else if (key == "segments-simd") {
    t.segments_simd = one_of(v, {"auto", "off"}, source);
  } else if (key == "axis-cols") {
    t.axis_cols = parse_count(v, 1, 1u << 20, source, "a count from 1 to 2^20");
  } else if (key == "axis-pieces") {
    t.axis_pieces = parse_count(v, 1, 1u << 20, source, "a count from 1 to 2^20");
  } else if (key == "scan-groups") {
    t.scan_groups = parse_count(v, 1, 4096, source, "a count from 1 to 4096");
  } else {
    std::string keys;
    for (const TuningKey& k : tuning_keys())
      keys += (keys.empty() ? "" : ", ") + std::string(k.key);
    throw Error(Errc::kUsage,
                "unknown tuning key '" + printable(key_in) + "' (keys: " + keys + ")");
  }
}

void set_tuning(Tuning& t, const std::string& kv) {
  const std::size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(Errc::kUsage, "a tuning setting is KEY=VALUE, not '" + printable(kv) + "'");
  set_tuning(t, kv.substr(0, eq), kv.substr(eq + 1), "--tune " + printable(kv.substr(0, eq)));
}

Tuning tuning_from_env() {
  Tuning t;
  for (const TuningKey& k : tuning_keys()) {
    const std::string name = env_name(k.key);
    if (const char* v = std::getenv(name.c_str()); v && *v) set_tuning(t, k.key, v, name);
  }
  return t;
}

std::vector<std::pair<std::string, std::string>> tuning_values(const Tuning& t) {
  std::string caps;
  for (const std::string& c : t.disable_caps) caps += (caps.empty() ? "" : ",") + c;
  const auto n = [](auto x) { return std::to_string(x); };
  const auto g17 = [](double x) {  // a double as text that reads back to the same value
    char b[32];
    std::snprintf(b, sizeof b, "%.17g", x);
    return std::string(b);
  };
  const std::vector<std::pair<std::string, std::string>> values = {
      {"build-options", t.build_options},
      {"disable-caps", caps},
      {"fast-shape", t.fast_shape},
      {"fast-groups", n(t.fast_groups)},
      {"fast-arg-streams", t.fast_arg_streams},
      {"exact-shape", t.exact_shape},
      {"exact-groups", n(t.exact_groups)},
      {"exact-terms", n(t.exact_terms)},
      {"exact-store", t.exact_store},
      {"carry-layout", t.carry_layout},
      {"share-threads", t.share_threads},
      {"scan-split", t.scan_split},
      {"scan-split-piece", t.scan_split_piece > 0 ? g17(t.scan_split_piece) : "auto"},
      {"scan-fast-path", t.scan_fast_path},
      {"lookback-limit", n(t.lookback_limit)},
      {"lookback-rows", n(t.lookback_rows)},
      {"lookback-vec", n(t.lookback_vec)},
      {"lookback-read", t.lookback_read},
      {"lookback-ids", t.lookback_ids},
      {"lookback-span", n(t.lookback_span)},
      {"scan-chunk", n(t.scan_chunk)},
      {"scan-groups", n(t.scan_groups)},
      {"scan-nt-stores", t.scan_nt_stores},
      {"scan-tile", t.scan_tile ? n(t.scan_tile) : std::string("auto")},
      {"transfer-piece", n(t.transfer_piece)},
      {"max-chunk", n(t.max_chunk)},
      {"stream", t.stream},
      {"stream-bytes", n(t.stream_bytes)},
      {"stream-slots", n(t.stream_slots)},
      {"stream-source", t.stream_source},
      {"in-place", t.in_place},
      {"device-memory", n(t.device_memory)},
      {"expr-lanes", t.expr_lanes},
      {"expr-fold", t.expr_fold},
      {"var-sums", t.var_sums},
      {"lse-exp", t.lse_exp},
      {"row-count", t.row_count},
      {"expr-arg-vec", t.expr_arg_vec},
      {"expr-blocks", t.expr_blocks},
      {"timeout", g17(t.timeout)},
      {"segments-shape", t.segments_shape},
      {"segments-lane", n(t.segments_lane)},
      {"segments-piece", n(t.segments_piece)},
      {"segments-unroll", t.segments_unroll ? n(t.segments_unroll) : std::string("auto")},
      {"segments-vec", t.segments_vec ? n(t.segments_vec) : std::string("auto")},
      {"segments-simd", t.segments_simd},
      {"axis-cols", n(t.axis_cols)},
      {"axis-unroll", t.axis_unroll ? n(t.axis_unroll) : std::string("auto")},
      {"axis-pieces", n(t.axis_pieces)},
  };
  // In tuning_keys() order; a knob missing here is an internal error, found by the tests.
  std::vector<std::pair<std::string, std::string>> ordered;
  for (const TuningKey& k : tuning_keys()) {
    const auto at =
        std::find_if(values.begin(), values.end(), [&](const auto& v) { return v.first == k.key; });
    if (at == values.end())
      throw Error(Errc::kInternal,
                  std::string("internal: tuning knob ") + k.key + " has no value text");
    ordered.push_back(*at);
  }
  return ordered;
}

bool cap_disabled(const Tuning& t, const std::string& cap) {
  return std::find(t.disable_caps.begin(), t.disable_caps.end(), "all") != t.disable_caps.end() ||
         std::find(t.disable_caps.begin(), t.disable_caps.end(), cap) != t.disable_caps.end();
}

}  // namespace clreduce
