// report.hpp: the readable table and the JSON lines (one object per variant run, C locale).
#pragma once

#include <string>
#include <vector>

#include "run/runner.hpp"
#include "runtime/device.hpp"

namespace clreduce {

// One JSON object, no trailing newline. Keys: variant, kind ("clreduce", "peer" or "ceiling"),
// mode ("reduce" or "scan"), op, type, acc, n, device, seed (null with an input file), input
// (null for generated data), warmup, repeat, result, index (arg ops), expected (neither for kind
// "ceiling"), verified, overflow (only when true: verified because an order of float operations
// may overflow), kernel_ms, kernel_ms_min, kernel_ms_max, noisy, wall_ms, gbps, seq_ms,
// speedup (both null for kind "ceiling"), launches, policy, the ratios (vs_omp; null when not
// quoted), err_ulp and err_rel (float sums: the distance from the correctly rounded sum; "inf"
// when infinite, null when undefined), and skipped/reason or error when they apply. Scans add
// exclusive, segmented,
// first_wrong and wrong_count; their result and expected are the last elements (null when n = 0).
std::string to_json(const RunRecord& r);

// The table's header line, and one row (plus a line saying why, when not verified, or what
// overflowed, when verified as an overflow: "overflow" in the verified column); `ratios` adds a
// column, the vs_omp ratio ("noisy" when not quoted); `accuracy` two last ones, err_ulp and
// err_rel (float sums). A noisy time has a '~' after it.
std::string table_header(bool ratios = false, bool accuracy = false);
std::string table_row(const RunRecord& r, bool ratios = false, bool accuracy = false);
// Several devices or ranks: one indented line per part (its range, verdict, kernel ms, wall
// ms, GB/s, device), and the combine's time.
std::string table_parts(const RunRecord& r);

// One device as a JSON object (--list-devices --format json), no trailing newline. Keys: index,
// type, name, platform, vendor, driver, version, opencl_c, compute_units, global_mem,
// max_alloc, local_mem (bytes), max_wg_size, fp64.
std::string to_json(const DeviceInfo& d);

// A result as JSON: integers as numbers; finite floats as numbers that always have a fraction or an
// exponent ("1.0", "-0.0", "0.25", "1e+30"), so that a JSON reader keeps them floats and keeps the
// sign of zero; NaN and infinities as the strings "nan", "inf", "-inf".
std::string json_value(const Value& v);

// JSON string escaping.
std::string json_escape(const std::string& s);

}  // namespace clreduce
