// csv.cpp: a reader for clreduce's own flat JSON lines and the CSV writer.
#include "csv.hpp"

#include <algorithm>
#include <cstdint>
#include <map>

#include "clreduce/error.hpp"

namespace clreduce {
namespace {

[[noreturn]] void bad(const std::string& json, const std::string& why) {
  throw Error(Errc::kInternal, "internal: cannot turn a JSON row into CSV (" + why + "): " + json);
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Reads a JSON string starting at s[i] == '"'; leaves i past the closing quote.
std::string read_string(const std::string& s, std::size_t& i) {
  std::string out;
  ++i;
  while (i < s.size() && s[i] != '"') {
    if (s[i] != '\\') {
      out += s[i++];
      continue;
    }
    if (++i >= s.size()) bad(s, "a string ends in a backslash");
    const char e = s[i++];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        if (i + 4 > s.size()) bad(s, "a short \\u escape");
        append_utf8(out, static_cast<std::uint32_t>(std::stoul(s.substr(i, 4), nullptr, 16)));
        i += 4;
        break;
      }
      default: out += e;  // '"', '\\', '/'
    }
  }
  if (i >= s.size()) bad(s, "an unterminated string");
  ++i;
  return out;
}

// A nested array or object starting at s[i] ('[' or '{'), as its JSON text; leaves i past its end.
std::string read_nested(const std::string& s, std::size_t& i) {
  const std::size_t from = i;
  int depth = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"') {
      read_string(s, i);
      continue;
    }
    ++i;
    if (c == '[' || c == '{') ++depth;
    if ((c == ']' || c == '}') && --depth == 0) return s.substr(from, i - from);
  }
  bad(s, "an unterminated array or object");
}

// key -> value text (strings unescaped, null empty, arrays and objects as their JSON text)
std::map<std::string, std::string> parse_flat(const std::string& s) {
  std::map<std::string, std::string> kv;
  std::size_t i = s.find('{');
  if (i == std::string::npos) bad(s, "no object");
  ++i;
  while (i < s.size() && s[i] != '}') {
    if (s[i] == ',' || s[i] == ' ') {
      ++i;
      continue;
    }
    if (s[i] != '"') bad(s, "a key that is not a string");
    const std::string key = read_string(s, i);
    if (i >= s.size() || s[i] != ':') bad(s, "no ':' after key " + key);
    ++i;
    if (i < s.size() && s[i] == '"') {
      kv[key] = read_string(s, i);
    } else if (i < s.size() && (s[i] == '[' || s[i] == '{')) {
      kv[key] = read_nested(s, i);
    } else {
      const std::size_t end = s.find_first_of(",}", i);
      if (end == std::string::npos) bad(s, "an unterminated value");
      std::string v = s.substr(i, end - i);
      if (v == "null") v.clear();
      kv[key] = v;
      i = end;
    }
  }
  return kv;
}

std::string field(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

const std::vector<std::string>& run_csv_columns() {
  static const std::vector<std::string> c = {"variant",
                                             "kind",
                                             "mode",
                                             "op",
                                             "type",
                                             "acc",
                                             "n",
                                             "device",
                                             "clreduce_version",
                                             "commit",
                                             "driver",
                                             "platform_version",
                                             "seed",
                                             "input",
                                             "warmup",
                                             "repeat",
                                             "exclusive",
                                             "segmented",
                                             "skipped",
                                             "reason",
                                             "result",
                                             "index",
                                             "expected",
                                             "expected_index",
                                             "result_min",
                                             "index_min",
                                             "result_max",
                                             "index_max",
                                             "expected_min",
                                             "expected_index_min",
                                             "expected_max",
                                             "expected_index_max",
                                             "verified",
                                             "overflow",
                                             "error",
                                             "first_wrong",
                                             "wrong_count",
                                             "kernel_ms",
                                             "kernel_ms_min",
                                             "kernel_ms_max",
                                             "noisy",
                                             "wall_ms",
                                             "gbps",
                                             "seq_ms",
                                             "speedup",
                                             "launches",
                                             "policy",
                                             "chunks",
                                             "layout",
                                             "upload_ms",
                                             "e2e_gbps",
                                             "seq_runs",
                                             "seq_ms_min",
                                             "seq_ms_max",
                                             "seq_noisy",
                                             "vs_omp",
                                             "err_ulp",
                                             "err_rel",
                                             "bound",
                                             "devices",
                                             "ranks",
                                             "combine_ms",
                                             "slowest",
                                             "parts",
                                             "kernel",
                                             "step_speedup",
                                             "cumulative_speedup"};
  return c;
}

const std::vector<std::string>& device_csv_columns() {
  static const std::vector<std::string> c = {
      "index",     "type",        "name",     "platform",      "platform_version", "vendor",
      "driver",    "version",     "opencl_c", "compute_units", "global_mem",       "max_alloc",
      "local_mem", "max_wg_size", "fp64",     "global_cache"};
  return c;
}

const std::vector<std::string>& variant_csv_columns() {
  static const std::vector<std::string> c = {"name", "mode", "kernel", "description", "path"};
  return c;
}

std::string csv_header(const std::vector<std::string>& columns) {
  std::string s;
  for (const auto& c : columns) s += (s.empty() ? "" : ",") + c;
  return s + "\n";
}

std::string csv_row(const std::string& json_object, const std::vector<std::string>& columns) {
  const auto kv = parse_flat(json_object);
  for (const auto& [key, value] : kv)
    if (std::find(columns.begin(), columns.end(), key) == columns.end())
      bad(json_object, "key '" + key + "' has no CSV column");
  std::string s;
  for (std::size_t k = 0; k < columns.size(); ++k) {
    if (k) s += ",";
    const auto it = kv.find(columns[k]);
    if (it != kv.end()) s += field(it->second);
  }
  return s + "\n";
}

}  // namespace clreduce
