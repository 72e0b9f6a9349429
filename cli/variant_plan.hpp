// variant_plan.hpp: turns --variant into the reduction and scan variants to run, and prints
// --list-variants. Names starting with "scan-" are scans; "all" runs every reduction, then every
// scan; "all-reduce" and "all-scan" one kind.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "clreduce/error.hpp"
#include "clreduce/types.hpp"
#include "reduce/variant.hpp"
#include "scan/scan_variant.hpp"

namespace clreduce {

struct VariantPlan {
  std::vector<ReduceVariant*> reduce;
  std::vector<ScanVariant*> scan;
  // The variants asked for by name, not through all, all-reduce, all-scan or ladder: one that
  // cannot run the problem is an error (named_refusal), where a group's member is skipped.
  std::set<std::string> named;
};

// Parses a variant name, comma-separated names, "all", "all-reduce", "all-scan" or "ladder"
// (the seeds' kernels 1-7 in order). Throws
// Error(Errc::kUsage) for an unknown name (listing the valid ones), and for scans asked for by name
// or by "all-scan" with an arg op; under "all" those scans are kept, to be skipped with a reason.
VariantPlan plan_variants(const std::string& spec, Op op);

// The error for a variant asked for by name that cannot run the problem, `reason` being its
// unsupported() text: Errc::kUsage (exit 2) when what it refuses is the request (a size beyond
// the variant's limit, an op it has no form of), Errc::kUnsupported (exit 5) when the device lacks
// something (an extension, memory).
Error named_refusal(const std::string& variant, const std::string& reason);

// --list-variants --format json: one object per line, reductions then scans, with the keys name,
// mode ("reduce" or "scan"), kernel (the ladder number, or null), description and path (with a
// device context, the path a device-dependent variant takes there; else null).
std::string format_variant_list_json(Context* ctx);

// Throws Error(Errc::kUsage) when a scan-only flag (--exclusive, --segments, --segment-length,
// --output; scan_flags says whether one was given) cannot take effect: no scan variant picked,
// or an arg op, for which every scan is skipped.
void check_scan_flags(const VariantPlan& plan, Op op, bool scan_flags);

// Every variant, reductions then scans, one line each: name and description; with a device
// context, the path each device-dependent variant takes there and the device's capabilities.
std::string format_variant_list(Context* ctx);

}  // namespace clreduce
