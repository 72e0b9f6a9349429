// ladder.cpp: the ladder's table. Kernel numbers come from the variants' shapes (multipass.hpp),
// so the table follows the seeds' numbering whatever order the registry lists them in.
#include "reduce/ladder.hpp"

#include <algorithm>
#include <cstdio>

#include "io/report.hpp"
#include "reduce/multipass.hpp"

namespace clreduce {

std::vector<ReduceVariant*> ladder_variants() {
  std::vector<ReduceVariant*> v;
  for (const auto& r : reduce_variants())
    if (ladder_number(r->name()) > 0) v.push_back(r.get());
  std::sort(v.begin(), v.end(), [](ReduceVariant* a, ReduceVariant* b) {
    return ladder_number(a->name()) < ladder_number(b->name());
  });
  return v;
}

int ladder_number(const std::string& name) {
  const auto* m = dynamic_cast<const MultiPassVariant*>(find_reduce_variant(name));
  return m ? m->shape().number : 0;
}

std::string LadderTable::header() {
  char line[256];
  std::snprintf(line, sizeof line, "%2s  %-22s %11s %9s %8s %11s  %-8s %8s  %s\n", "#", "kernel",
                "time ms", "GB/s", "step", "cumulative", "verified", "launches", "path");
  return line;
}

void LadderTable::advance(const RunRecord& r, double* step, double* cumulative) {
  *step = *cumulative = 0.0;
  // Peers (omp) and the copy ceiling are shown beside the ladder, never steps of it.
  if (r.skipped || r.kernel_ms <= 0.0 || r.kind != "clreduce") return;
  if (first_ms_ <= 0.0) {
    first_ms_ = r.kernel_ms;
  } else {
    if (prev_ms_ > 0.0) *step = prev_ms_ / r.kernel_ms;
  }
  *cumulative = first_ms_ / r.kernel_ms;
  prev_ms_ = r.kernel_ms;
}

static std::string times(double x) {
  if (x <= 0.0) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%.2fx", x);
  return b;
}

std::string LadderTable::row(const RunRecord& r) {
  double step, cumulative;
  advance(r, &step, &cumulative);
  char line[512];
  const int k = ladder_number(r.variant);
  const std::string number = r.kind == "clreduce" ? std::to_string(k) : "-";
  if (r.skipped) {
    std::snprintf(line, sizeof line, "%2s  %-22s skipped: %s\n", number.c_str(), r.variant.c_str(),
                  r.skip_reason.c_str());
    return line;
  }
  char gbps[32] = "-";  // no rate with no elements
  if (r.n > 0 && r.gbps > 0) std::snprintf(gbps, sizeof gbps, "%.2f", r.gbps);
  std::snprintf(line, sizeof line, "%2s  %-22s %10.4f%c %9s %8s %11s  %-8s %8zu  %s\n",
                number.c_str(), r.variant.c_str(), r.kernel_ms, r.noisy ? '~' : ' ', gbps,
                times(step).c_str(), times(cumulative).c_str(), r.verified ? "yes" : "NO",
                r.launches, r.policy.path.c_str());
  std::string out = line;
  if (!r.verified) {
    out += "    got " + r.result.str() +
           (is_arg_op(r.op) ? " @" + std::to_string(r.result.index) : "") + ", expected " +
           r.expected.str() + (is_arg_op(r.op) ? " @" + std::to_string(r.expected.index) : "") +
           ": " + r.verify_note + "\n";
  }
  return out;
}

std::string LadderTable::json(const RunRecord& r) {
  double step, cumulative;
  advance(r, &step, &cumulative);
  auto num = [](double x) {
    if (x <= 0.0) return std::string("null");
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", x);
    return std::string(b);
  };
  std::string s = to_json(r);
  s.pop_back();  // the closing brace
  return s + ",\"kernel\":" +
         (r.kind == "clreduce" ? std::to_string(ladder_number(r.variant)) : "null") +
         ",\"step_speedup\":" + num(step) + ",\"cumulative_speedup\":" + num(cumulative) + "}";
}

}  // namespace clreduce
