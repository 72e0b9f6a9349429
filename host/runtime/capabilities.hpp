// capabilities.hpp: optional device features that fast paths may use, probed once per Context
// (Context::caps()) by trial builds plus small numeric checks, never read from extension strings:
// a probe that fails to build, to run or to give the right numbers answers "no".
#pragma once

#include <string>

namespace clreduce {

class Context;

struct Capabilities {
  // NVIDIA's warp shuffle through inline PTX: `asm volatile("shfl.sync.bfly.b32 ...")` builds,
  // exchanges values within warps of consecutive local ids (32k..32k+31) and clr_tail.h's
  // CLR_TAIL 2 fold gives exact totals. Probed on NVIDIA devices only (other compilers may abort
  // on PTX).
  bool nv_shfl = false;
  // Sub-group functions (cl_khr_subgroups or OpenCL C 3.0 __opencl_c_subgroups): get_sub_group_*,
  // sub_group_barrier, sub_group_reduce_add, sub_group_scan_inclusive_add, and CLR_TAIL 1, built
  // with subgroups_options. A sub-group may be any size up to the whole work-group.
  bool subgroups = false;
  // Work-group collectives (work_group_reduce_*, work_group_scan_*, work_group_broadcast), built
  // with wg_collectives_options; checked: reduce_add on int, scan_inclusive_add,
  // scan_exclusive_add and reduce_max on long, broadcast on int. NVIDIA accepts them under
  // -cl-std=CL2.0 without advertising them.
  bool wg_collectives = false;
  std::string subgroups_options;       // the -cl-std option that passed, e.g. "-cl-std=CL3.0"
  std::string wg_collectives_options;  // likewise, e.g. "-cl-std=CL2.0"
  std::string detail;  // one clause per probe: what was tried and why it said no (for --verbose)

  // "nv_shfl=no subgroups=yes(-cl-std=CL3.0) wg_collectives=no"
  std::string str() const;
};

// Whether the device builds 64-bit global atomics (cl_khr_int64_base_atomics), by a trial build
// whose answer is kept in ctx's probes: what exact and the look-back scans need.
bool has_int64_atomics(Context& ctx);

// Runs every probe on ctx's device. Prefer ctx.caps(), which probes once and caches the answer.
// The disable-caps knob (Context::tuning(): names from str(), or "all") turns features off
// without probing, e.g. to time or test the portable paths on a device that has the fast ones.
Capabilities probe_capabilities(Context& ctx);

}  // namespace clreduce
