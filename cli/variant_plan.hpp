// variant_plan.hpp: turns --variant into the reduction and scan variants to run, and prints
// --list-variants. Names starting with "scan-" are scans; "all" runs every reduction, then every
// scan; "all-reduce" and "all-scan" one kind.
#pragma once

#include <string>
#include <vector>

#include "scan/scan_variant.hpp"
#include "clreduce/types.hpp"
#include "reduce/variant.hpp"

namespace clreduce {

struct VariantPlan {
  std::vector<ReduceVariant*> reduce;
  std::vector<ScanVariant*> scan;
  std::vector<ReduceVariant*> named;  // the reductions asked for by name
};

// Parses a variant name, comma-separated names, "all", "all-reduce", "all-scan" or "ladder"
// (the seeds' kernels 1-7 in order). Throws
// Error(Errc::kUsage) for an unknown name (listing the valid ones), and for scans asked for by name
// or by "all-scan" with an arg op; under "all" those scans are kept, to be skipped with a reason.
VariantPlan plan_variants(const std::string& spec, Op op);

// Throws Error(Errc::kUsage) when a scan-only flag (--exclusive, --segments, --segment-length,
// --output; scan_flags says whether one was given) cannot take effect: no scan variant picked,
// or an arg op, for which every scan is skipped.
void check_scan_flags(const VariantPlan& plan, Op op, bool scan_flags);

// Throws Error(Errc::kUsage) when a reduction asked for by name can never take op on elements of
// type t (`exact`: sums of float or double); under "all" it is skipped with the reason instead.
void check_named_reductions(const VariantPlan& plan, Op op, DType t);

// Every variant, reductions then scans, one line each: name and description; with a device
// context, the path each device-dependent variant takes there and the device's capabilities.
std::string format_variant_list(Context* ctx);

}  // namespace clreduce
