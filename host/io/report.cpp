// report.cpp: number formatting is done with snprintf under the C locale, never the user's.
#include "io/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "clreduce/version.hpp"

namespace clreduce {

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o;
}

static std::string num(double x) {
  if (!std::isfinite(x)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}

// An error measure as JSON: a number, "inf", or null when undefined (NaN).
static std::string json_error(double x) {
  if (std::isinf(x)) return "\"inf\"";
  return num(x);
}

// A rate or ratio over n elements: defined when there are elements and it is a positive number
// (0 is what the runner leaves for one it could not compute: no elements, no kernel time).
static bool defined(double x, std::uint64_t n) { return n > 0 && std::isfinite(x) && x > 0; }

// As JSON: the number, or null when undefined.
static std::string rate(double x, std::uint64_t n) { return defined(x, n) ? num(x) : "null"; }

// The speedup is quoted when defined and neither its timing nor the sequential loop's is noisy.
static bool speedup_quoted(const RunRecord& r) { return !r.noisy && !r.seq_noisy; }

static std::string str(const std::string& v) { return "\"" + json_escape(v) + "\""; }

std::string json_value(const Value& v) {
  if (v.type == DType::kBool) return v.u ? "true" : "false";
  if (!is_float(v.type)) return v.str();
  if (!std::isfinite(v.f)) return "\"" + v.str() + "\"";
  std::string s = v.str();  // "%.9g" / "%.17g": "-0", "1", "0.5", "1e+30"
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string to_json(const RunRecord& r) {
  const bool scan = r.scan.has_value();
  const bool ceiling = r.kind == "ceiling";
  std::string s =
      "{\"variant\":\"" + json_escape(r.variant) + "\",\"kind\":\"" + json_escape(r.kind) +
      "\",\"mode\":\"" + r.mode() + "\",\"op\":\"" +
      (r.op_text.empty() ? op_name(r.op) : json_escape(r.op_text)) + "\",\"type\":\"" +
      dtype_name(r.type) + "\",\"acc\":\"" + dtype_name(r.acc) + "\",\"n\":" + std::to_string(r.n) +
      ",\"device\":\"" + json_escape(r.device) + "\"" + ",\"clreduce_version\":" + str(version()) +
      ",\"commit\":" + str(build_commit()) + ",\"driver\":" + str(r.driver) +
      ",\"platform_version\":" + str(r.platform_version) +
      ",\"seed\":" + (r.input.empty() ? std::to_string(r.seed) : std::string("null")) +
      ",\"input\":" + (r.input.empty() ? std::string("null") : "\"" + json_escape(r.input) + "\"") +
      ",\"warmup\":" + std::to_string(r.warmup) + ",\"repeat\":" + std::to_string(r.repeat);
  if (scan)
    s += std::string(",\"exclusive\":") + (r.scan->exclusive ? "true" : "false") +
         ",\"segmented\":" + (r.scan->segmented ? "true" : "false");
  if (r.skipped) return s + ",\"skipped\":true,\"reason\":\"" + json_escape(r.skip_reason) + "\"}";
  if (r.minmax) {
    s += ",\"result_min\":" + json_value(r.result) +
         ",\"index_min\":" + std::to_string(r.result.index) +
         ",\"result_max\":" + json_value(r.result_max) +
         ",\"index_max\":" + std::to_string(r.result_max.index) +
         ",\"expected_min\":" + json_value(r.expected) +
         ",\"expected_index_min\":" + std::to_string(r.expected.index) +
         ",\"expected_max\":" + json_value(r.expected_max) +
         ",\"expected_index_max\":" + std::to_string(r.expected_max.index);
  } else if (r.kind != "ceiling") {
    const bool none = scan && r.n == 0;  // an empty scan has no last element
    s += ",\"result\":" + (none ? std::string("null") : json_value(r.result));
    if (is_arg_op(r.op)) s += ",\"index\":" + std::to_string(r.result.index);
    s += ",\"expected\":" + (none ? std::string("null") : json_value(r.expected));
    if (is_arg_op(r.op)) s += ",\"expected_index\":" + std::to_string(r.expected.index);
  }
  s += std::string(",\"verified\":") + (r.verified ? "true" : "false");
  if (r.overflow) s += ",\"overflow\":true";
  if (!r.verified) s += ",\"error\":\"" + json_escape(r.verify_note) + "\"";
  if (scan)
    s += ",\"first_wrong\":" + std::to_string(r.scan->first_wrong) +
         ",\"wrong_count\":" + std::to_string(r.scan->wrong_count);
  s += ",\"kernel_ms\":" + num(r.kernel_ms) + ",\"kernel_ms_min\":" + num(r.kernel_ms_min) +
       ",\"kernel_ms_max\":" + num(r.kernel_ms_max) + ",\"noisy\":" + (r.noisy ? "true" : "false") +
       ",\"wall_ms\":" + num(r.wall_ms) + ",\"gbps\":" + rate(r.gbps, r.n) +
       // The copy is no computation: no sequential loop to compare it with.
       ",\"seq_ms\":" + (ceiling ? "null" : num(r.seq_ms)) +
       ",\"speedup\":" + (ceiling || !speedup_quoted(r) ? "null" : rate(r.speedup, r.n)) +
       ",\"launches\":" + std::to_string(r.launches) + ",\"policy\":\"" +
       json_escape(r.kind == "clreduce" ? r.policy.str() : r.policy.path) +
       (r.chunks > 1 || r.layout.find("stream") != std::string::npos ? "; " + json_escape(r.layout)
                                                                     : std::string()) +
       "\"";
  if (!r.layout.empty())
    s += ",\"chunks\":" + std::to_string(r.chunks) + ",\"layout\":\"" + json_escape(r.layout) +
         "\",\"upload_ms\":" + num(r.upload_ms) + ",\"e2e_gbps\":" + rate(r.e2e_gbps, r.n);
  if (!ceiling)
    s += ",\"seq_runs\":" + std::to_string(r.seq_runs) + ",\"seq_ms_min\":" + num(r.seq_ms_min) +
         ",\"seq_ms_max\":" + num(r.seq_ms_max) +
         ",\"seq_noisy\":" + (r.seq_noisy ? "true" : "false");
  for (const auto& [key, value] : r.ratios)
    s += ",\"" + json_escape(key) + "\":" + rate(value, r.n);
  if (r.has_error)
    s += ",\"err_ulp\":" + json_error(r.err_ulp) + ",\"err_rel\":" + json_error(r.err_rel) +
         ",\"bound\":" + json_error(r.bound);
  else if (r.bound > 0)  // a float tolerance the result was checked against (the engine's rows)
    s += ",\"bound\":" + json_error(r.bound);
  if (!r.parts.empty()) {
    s += std::string(",\"") + (r.ranks > 1 ? "ranks" : "devices") + "\":" +
         std::to_string(r.ranks > 1 ? r.ranks
                                    : (r.devices ? r.devices : static_cast<int>(r.parts.size()))) +
         ",\"combine_ms\":" + num(r.combine_ms) + ",\"slowest\":\"" + json_escape(r.slowest) +
         "\",\"parts\":[";
    for (std::size_t i = 0; i < r.parts.size(); ++i) {
      const PartInfo& p = r.parts[i];
      s += std::string(i ? "," : "") + "{\"device\":\"" + json_escape(p.device) +
           "\",\"device_index\":" + std::to_string(p.device_index) +
           ",\"rank\":" + std::to_string(p.rank) + ",\"first\":" + std::to_string(p.first) +
           ",\"n\":" + std::to_string(p.n) + ",\"kernel_ms\":" + num(p.kernel_ms) +
           (p.before_ms >= 0 ? ",\"before_ms\":" + num(p.before_ms) : std::string()) +
           ",\"wall_ms\":" + num(p.wall_ms) + ",\"gbps\":" + rate(p.gbps, p.n) +
           ",\"verified\":" + (p.verified ? "true" : "false") +
           (p.rank >= 0 ? std::string()
                        : ",\"driver\":" + str(p.driver) +
                              ",\"platform_version\":" + str(p.platform_version)) +
           "}";
    }
    s += "]";
  }
  return s + "}";
}

std::string table_parts(const RunRecord& r, std::size_t width) {
  std::string out;
  std::size_t slow = 0;
  for (std::size_t i = 1; i < r.parts.size(); ++i)
    if (r.parts[i].kernel_ms > r.parts[slow].kernel_ms) slow = i;
  for (std::size_t i = 0; i < r.parts.size(); ++i) {
    const PartInfo& p = r.parts[i];
    const std::string who =
        p.rank >= 0 ? "rank " + std::to_string(p.rank) : "device " + std::to_string(p.device_index);
    const std::string range = "[" + std::to_string(p.first) + ", +" + std::to_string(p.n) + ")";
    // A rank's row names no device (each rank knows only its own).
    const std::string name =
        p.rank >= 0 ? (i == slow ? "slowest" : "") : (i == slow ? "slowest: " : "") + p.device;
    char gbps[32] = "-";
    if (defined(p.gbps, p.n)) std::snprintf(gbps, sizeof gbps, "%.2f", p.gbps);
    char line[512];
    std::snprintf(line, sizeof line, "  %-20s %-*s %-8s %9.4f  %10.4f %9s   %s\n", who.c_str(),
                  static_cast<int>(width), range.c_str(), p.verified ? "yes" : "NO", p.kernel_ms,
                  p.wall_ms, gbps, name.c_str());
    out += line;
  }
  // Devices run their parts at once: a run takes as long as its slowest part, whichever part
  // that is in that run. Ranks run at once: the whole's kernel ms and wall ms are each the
  // largest of the ranks' medians (a scan's kernel ms: its runs' critical paths, run/ranks.hpp).
  char tail[200];
  std::snprintf(
      tail, sizeof tail,
      r.ranks > 1 ? (r.scan ? "  (kernel ms above: each run's slowest first pass plus its "
                              "slowest second pass; wall ms the slowest rank's; combine %.4f ms)\n"
                            : "  (kernel ms and wall ms above: each the slowest rank's; combine "
                              "%.4f ms)\n")
                  : "  (kernel ms above: each run's slowest part, median over the runs; "
                    "combine %.4f ms)\n",
      r.combine_ms);
  return out + tail;
}

std::string to_json(const DeviceInfo& d) {
  return "{\"index\":" + std::to_string(d.index) + ",\"type\":" + str(d.type) +
         ",\"name\":" + str(d.name) + ",\"platform\":" + str(d.platform_name) +
         ",\"platform_version\":" + str(d.platform_version) + ",\"vendor\":" + str(d.vendor) +
         ",\"driver\":" + str(d.driver_version) + ",\"version\":" + str(d.device_version) +
         ",\"opencl_c\":" + str(d.c_version) +
         ",\"compute_units\":" + std::to_string(d.compute_units) +
         ",\"global_mem\":" + std::to_string(d.global_mem) +
         ",\"max_alloc\":" + std::to_string(d.max_alloc) +
         ",\"local_mem\":" + std::to_string(d.local_mem) +
         ",\"max_wg_size\":" + std::to_string(d.max_wg_size) +
         ",\"fp64\":" + (d.fp64 ? "true" : "false") +
         ",\"global_cache\":" + std::to_string(d.global_cache) + "}";
}

// The widest text value_str() gives a value of t: "%.9g" and "%.17g" floats at their longest
// ("-1.17549435e-38", "-2.2250738585072014e-308"), integers with their sign.
static std::size_t widest_value(DType t) {
  switch (t) {
    case DType::kInt32: return 11;   // -2147483648
    case DType::kUInt32: return 10;  // 4294967295
    case DType::kInt64: return 20;   // -9223372036854775808
    case DType::kUInt64: return 20;  // 18446744073709551615
    case DType::kFloat: return 15;
    case DType::kDouble: return 24;
    case DType::kFloat16: return 11;  // -6.1035e-05
    case DType::kBool: return 5;      // False
    case DType::kInt8: return 4;
    case DType::kUInt8: return 3;
    case DType::kInt16: return 6;
    case DType::kUInt16: return 5;
  }
  return 24;
}

std::size_t result_width(Op op, DType acc, std::uint64_t n) {
  std::size_t w = widest_value(acc);
  if (is_arg_op(op)) w += 2 + std::to_string(n > 0 ? n - 1 : 0).size();  // " @" and the index
  return std::max(kResultWidth, w);
}

std::string table_header(bool ratios, bool accuracy, std::size_t width) {
  char line[256];
  std::snprintf(line, sizeof line, "%-22s %-*s %-8s %10s %10s %9s %10s %9s %8s%s%s\n", "variant",
                static_cast<int>(width), "result", "verified", "kernel ms", "wall ms", "GB/s",
                "seq ms", "speedup", "launches", ratios ? "   vs omp" : "",
                accuracy ? "    err ulp    err rel" : "");
  return line;
}

std::string table_row(const RunRecord& r, bool ratios, bool accuracy, std::size_t width) {
  char line[512];
  if (r.skipped) {
    std::snprintf(line, sizeof line, "%-22s skipped: %s\n", r.variant.c_str(),
                  r.skip_reason.c_str());
    return line;
  }
  std::string res = r.kind == "ceiling"  ? (r.variant == "copy-h2d" ? "(bytes host to device)"
                                                                    : "(bytes read + written)")
                    : r.scan && r.n == 0 ? "(empty)"
                                         : r.result.str();
  if ((is_arg_op(r.op) || r.minmax) && r.kind != "ceiling")
    res += " @" + std::to_string(r.result.index);
  if (r.minmax) res += ", " + r.result_max.str() + " @" + std::to_string(r.result_max.index);
  std::string ratio;
  if (ratios) {
    char b[32] = "        -";
    for (const auto& [key, value] : r.ratios)
      if (key == "vs_omp") {
        if (std::isnan(value))
          std::snprintf(b, sizeof b, " %8s", "noisy");
        else if (defined(value, r.n))
          std::snprintf(b, sizeof b, " %8.2f", value);
      }
    ratio = b;
  }
  // A noisy time is marked with '~' right after it, and no speedup is quoted against it; the
  // copy has no sequential loop to beat. An undefined rate or ratio (no elements) is '-'.
  char seq[24] = "-", speedup[24] = "-", gbps[24] = "-";
  if (r.kind != "ceiling") {
    std::snprintf(seq, sizeof seq, "%.4f%c", r.seq_ms, r.seq_noisy ? '~' : ' ');
    if (defined(r.speedup, r.n) && !speedup_quoted(r))
      std::snprintf(speedup, sizeof speedup, "noisy");
    else if (defined(r.speedup, r.n))
      std::snprintf(speedup, sizeof speedup, "%.2f", r.speedup);
  } else {
    std::snprintf(seq, sizeof seq, "- ");
  }
  if (defined(r.gbps, r.n)) std::snprintf(gbps, sizeof gbps, "%.2f", r.gbps);
  std::string err;
  if (accuracy) {
    char b[48] = "          -          -";
    if (r.has_error) std::snprintf(b, sizeof b, " %10.4g %10.3g", r.err_ulp, r.err_rel);
    err = b;
  }
  std::snprintf(line, sizeof line, "%-22s %-*s %-8s %9.4f%c %10.4f %9s %10s %9s %8zu%s%s\n",
                r.variant.c_str(), static_cast<int>(width), res.c_str(),
                !r.verified  ? "NO"
                : r.overflow ? "overflow"
                             : "yes",
                r.kernel_ms, r.noisy ? '~' : ' ', r.wall_ms, gbps, seq, speedup, r.launches,
                ratio.c_str(), err.c_str());
  std::string out = line;
  if (!r.verified) {
    out += "  expected " + r.expected.str();
    if (is_arg_op(r.op) || r.minmax) out += " @" + std::to_string(r.expected.index);
    if (r.minmax) out += ", " + r.expected_max.str() + " @" + std::to_string(r.expected_max.index);
    out += ": " + r.verify_note + "\n";
  } else if (r.overflow) {
    out += "  overflow: " + r.verify_note + "\n";
  }
  return out;
}

std::string noisy_footnote(bool ladder) {
  char line[256];
  std::snprintf(line, sizeof line,
                ladder ? "~ noisy: the slowest timed run took more than %gx the fastest; the "
                         "ladder's speedups beside it are printed all the same\n"
                       : "~ noisy: the slowest timed run took more than %gx the fastest; "
                         "speedup and vs omp are not quoted against it\n",
                kNoisySpread);
  return line;
}

}  // namespace clreduce
