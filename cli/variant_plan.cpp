// variant_plan.cpp: --variant parsing across both registries, so main.cpp stays a thin shell.
#include "variant_plan.hpp"

#include <cstdio>

#include "clreduce/error.hpp"
#include "io/report.hpp"
#include "io/text.hpp"
#include "reduce/ladder.hpp"

namespace clreduce {

namespace {

std::string valid_names() {
  std::string s = "all, all-reduce, all-scan, ladder";
  for (const auto& r : reduce_variants()) s += ", " + r->name();
  for (const auto& r : scan_variants()) s += ", " + r->name();
  return s;
}

void refuse_arg_scan(const std::string& what, Op op) {
  if (is_arg_op(op))
    throw Error(Errc::kUsage,
                what + ": " + op_name(op) + " has no prefix scan (scans take sum, prod, min, max)");
}

}  // namespace

VariantPlan plan_variants(const std::string& spec, Op op) {
  VariantPlan plan;
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const std::size_t comma = spec.find(',', pos);
    const std::string name =
        spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (name == "all" || name == "all-reduce")
      for (const auto& v : reduce_variants()) plan.reduce.push_back(v.get());
    if (name == "ladder" && spec != "ladder")
      throw Error(Errc::kUsage,
                  "--variant ladder runs alone (it prints the seeds' table of kernels 1-7)");
    if (name == "ladder")
      for (ReduceVariant* v : ladder_variants()) plan.reduce.push_back(v);
    if (name == "all-scan") refuse_arg_scan("--variant all-scan", op);
    if (name == "all" || name == "all-scan")
      for (const auto& v : scan_variants()) plan.scan.push_back(v.get());
    if (name != "all" && name != "all-reduce" && name != "all-scan" && name != "ladder") {
      if (ReduceVariant* r = find_reduce_variant(name)) {
        plan.reduce.push_back(r);
        plan.named.insert(name);
      } else if (ScanVariant* s = find_scan_variant(name)) {
        refuse_arg_scan(name, op);
        plan.scan.push_back(s);
        plan.named.insert(name);
      } else {
        throw Error(Errc::kUsage,
                    "unknown variant '" + printable(name) + "' (valid: " + valid_names() + ")");
      }
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return plan;
}

void check_scan_flags(const VariantPlan& plan, Op op, bool scan_flags) {
  if (!scan_flags) return;
  const std::string flags = "--exclusive, --segments, --segment-length and --output apply to scans";
  if (plan.scan.empty()) throw Error(Errc::kUsage, flags + ": pick a scan-* variant");
  refuse_arg_scan(flags, op);
}

Error named_refusal(const std::string& variant, const std::string& reason) {
  // The variants' reasons (unsupported()) say what they lack. A limit on the request names n
  // ("n > 2^22: ...") or the op ("... has no prefix scan", "... has no exact form"); anything
  // else is the device's (memory, an extension, a trial build that failed).
  const bool request = reason.rfind("n ", 0) == 0 ||
                       reason.find("has no prefix scan") != std::string::npos ||
                       reason.find("has no exact form") != std::string::npos;
  return Error(request ? Errc::kUsage : Errc::kUnsupported,
               variant + " cannot run this: " + reason);
}

std::string format_variant_list_json(Context* ctx) {
  const auto str = [](const std::string& v) { return "\"" + json_escape(v) + "\""; };
  std::string s;
  for (const auto& v : reduce_variants()) {
    const int k = ladder_number(v->name());
    const std::string path = ctx ? v->device_path(*ctx) : "";
    s += "{\"name\":" + str(v->name()) +
         ",\"mode\":\"reduce\",\"kernel\":" + (k ? std::to_string(k) : "null") +
         ",\"description\":" + str(v->description()) +
         ",\"path\":" + (path.empty() ? "null" : str(path)) + "}\n";
  }
  for (const auto& v : scan_variants())
    s += "{\"name\":" + str(v->name()) +
         ",\"mode\":\"scan\",\"kernel\":null,\"description\":" + str(v->description()) +
         ",\"path\":null}\n";
  return s;
}

std::string format_variant_list(Context* ctx) {
  std::string s = format_reduce_variant_list(ctx);
  for (const auto& v : scan_variants()) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%-22s %s\n", v->name().c_str(), v->description().c_str());
    s += buf;
  }
  if (ctx)
    s += "# device " + std::to_string(ctx->info().index) + " (" + ctx->info().name +
         "): " + ctx->caps().str() + "\n";
  return s;
}

}  // namespace clreduce
