// csv.hpp: --format csv. Each row is made from the JSON object the same record prints with
// --format json, so both formats always say the same: one fixed header, one column per JSON key,
// in a documented order; null prints as an empty field, strings are unquoted JSON strings
// quoted for CSV (RFC 4180) where they need it, and a nested value (several devices' or ranks'
// "parts") is one field holding its JSON text.
#pragma once

#include <string>
#include <vector>

namespace clreduce {

// The columns of a run's rows (every key to_json and the ladder's JSON can print).
const std::vector<std::string>& run_csv_columns();
// The columns of --list-devices and of --list-variants.
const std::vector<std::string>& device_csv_columns();
const std::vector<std::string>& variant_csv_columns();

// The header line, newline-terminated.
std::string csv_header(const std::vector<std::string>& columns);
// One JSON object (clreduce's own: keys mapping to strings, numbers, true, false, null, or an
// array or object kept as its JSON text) as a CSV line in the columns' order, a missing key an
// empty field. Throws
// Error(Errc::kInternal) for a key that has no column, or JSON it cannot read.
std::string csv_row(const std::string& json_object, const std::vector<std::string>& columns);

}  // namespace clreduce
