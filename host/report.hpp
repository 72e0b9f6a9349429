// report.hpp: the readable table and the JSON lines (one object per variant run, C locale).
#pragma once

#include <string>
#include <vector>

#include "runner.hpp"

namespace clreduce {

// One JSON object, no trailing newline. Keys: kind ("reduce" or "scan"), variant, op, type, acc,
// n, device, result, index (arg ops), expected, verified, kernel_ms, wall_ms, gbps, seq_ms,
// speedup, launches, policy, and skipped/reason or error when they apply. Scans add exclusive,
// segmented, first_wrong and wrong_count; their result and expected are the last elements
// (null when n = 0).
std::string to_json(const RunRecord& r);

// The table's header line, and one row (plus a line saying why, when not verified).
std::string table_header();
std::string table_row(const RunRecord& r);

// JSON string escaping.
std::string json_escape(const std::string& s);

}  // namespace clreduce
