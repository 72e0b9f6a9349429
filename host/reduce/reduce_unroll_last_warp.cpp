// reduce_unroll_last_warp.cpp: ladder kernel 5; its schedule is MultiPassVariant's.
#include "reduce/multipass.hpp"

namespace clreduce {

std::unique_ptr<ReduceVariant> make_reduce_unroll_last_warp() {
  LadderShape s;
  s.number = 5;
  s.name = "unroll-last-warp";
  s.description = "kernel 5: as 4, last 64 elements without group barriers (shfl.sync/sub-groups)";
  s.loads = 2;
  s.fixed_wg = false;
  s.tail = true;
  return std::make_unique<MultiPassVariant>(s);
}

}  // namespace clreduce
