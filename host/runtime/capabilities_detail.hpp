// capabilities_detail.hpp: the probes' numeric checks, apart from the device runs that feed them,
// so tests can check them with synthetic answers (the devices that pass them are not here).
#pragma once

#include <string>
#include <vector>

#include "clreduce/cl.hpp"

namespace clreduce {

class Context;

namespace probe_detail {

// Each returns "" when the numbers are right, else what is wrong.
// probe_nv_lanes: partners[gid] must be gid ^ 5 (local ids 32k..32k+31 form warp k).
std::string check_nv_partners(const std::vector<cl_uint>& partners);
// probe_sub_groups: six words per work-item (size, id, local id, count, reduce_add and
// scan_inclusive_add of 7 * lid + 1), groups of wg work-items.
std::string check_sub_group_info(const std::vector<cl_uint>& info, std::size_t wg);
// probe_wg_collectives: five values per work-item, groups of wg work-items.
std::string check_wg_collective_values(const std::vector<cl_long>& out, std::size_t wg);

// Builds and runs probe_tail with -DCLR_TAIL=tail plus `extra` on int64 sums and float argmin
// at group sizes 64 and 96, checking every total; false with why on any failure. Tail 0 (the
// barrier path) runs anywhere, which is how the tests check this check.
bool probe_tail_fold(Context& ctx, int tail, const std::string& extra, std::string* why);

}  // namespace probe_detail
}  // namespace clreduce
