// report.hpp: the readable table and the JSON lines (one object per variant run, C locale).
#pragma once

#include <string>
#include <vector>

#include "run/runner.hpp"
#include "runtime/device.hpp"

namespace clreduce {

// One JSON object, no trailing newline. Keys: variant, kind ("clreduce", "peer" or "ceiling"),
// mode ("reduce" or "scan"), op, type, acc, n, device, clreduce_version, commit (the git commit
// clreduce was built from, "unknown" outside git), driver and platform_version (the device's),
// seed (null with an input file), input (null for generated data), warmup, repeat, result, index
// (arg ops), expected (neither for kind "ceiling"), verified, overflow (only when true: verified
// because an order of float operations may overflow), kernel_ms, kernel_ms_min, kernel_ms_max,
// noisy, wall_ms, gbps, seq_ms, speedup (both null for kind "ceiling"; speedup null when either
// timing is noisy), launches, policy, seq_runs, seq_ms_min, seq_ms_max and seq_noisy (the
// sequential loop's spread; none for kind "ceiling"), the ratios (vs_omp; null when not quoted),
// err_ulp and err_rel (float sums: the distance from the correctly rounded sum; "inf" when
// infinite, null when undefined) with bound, the float tolerance the result was checked
// against (also alone where another run has one: the engine's rows, float products), and
// skipped/reason or error when they apply. A rate or ratio that is undefined (n = 0: no bytes, no
// time) is null. Scans add exclusive, segmented, first_wrong and wrong_count; their result and
// expected are the last elements (null when n = 0).
std::string to_json(const RunRecord& r);

// The result column's least width, and the width a table needs for every result of `op` over n
// elements with results of type acc: every value of acc at its longest and, for arg ops, " @"
// and every index below n.
constexpr std::size_t kResultWidth = 28;
std::size_t result_width(Op op, DType acc, std::uint64_t n);

// The table's header line, and one row (plus a line saying why, when not verified, or what
// overflowed, when verified as an overflow: "overflow" in the verified column); `ratios` adds a
// column, the vs_omp ratio ("noisy" when not quoted); `accuracy` two last ones, err_ulp and
// err_rel (float sums). `width` is the result column's (result_width()). A noisy time (kernel
// or sequential) has a '~' after it, and the speedup is then "noisy", not quoted; a rate or
// ratio that is undefined (n = 0) is '-'.
std::string table_header(bool ratios = false, bool accuracy = false,
                         std::size_t width = kResultWidth);
std::string table_row(const RunRecord& r, bool ratios = false, bool accuracy = false,
                      std::size_t width = kResultWidth);
// Several devices or ranks: one indented line per part (its range, verdict, kernel ms, wall
// ms, GB/s, device), and a line saying what the kernel ms above them is and the combine's time.
std::string table_parts(const RunRecord& r, std::size_t width = kResultWidth);
// The line under a table with a noisy time: what '~' means and which ratios are not quoted
// (the ladder's table prints its speedups all the same).
std::string noisy_footnote(bool ladder);

// One device as a JSON object (--list-devices --format json), no trailing newline. Keys: index,
// type, name, platform, platform_version, vendor, driver, version, opencl_c, compute_units,
// global_mem, max_alloc, local_mem (bytes), max_wg_size, fp64.
std::string to_json(const DeviceInfo& d);

// A result as JSON: integers as numbers; finite floats as numbers that always have a fraction or an
// exponent ("1.0", "-0.0", "0.25", "1e+30"), so that a JSON reader keeps them floats and keeps the
// sign of zero; NaN and infinities as the strings "nan", "inf", "-inf".
std::string json_value(const Value& v);

// JSON string escaping.
std::string json_escape(const std::string& s);

}  // namespace clreduce
