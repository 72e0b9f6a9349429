// reduce_complete_unroll.cpp: ladder kernel 6; its schedule is MultiPassVariant's.
#include "reduce/multipass.hpp"

namespace clreduce {

std::unique_ptr<ReduceVariant> make_reduce_complete_unroll() {
  LadderShape s;
  s.number = 6;
  s.name = "complete-unroll";
  s.description = "kernel 6: as 5, group size fixed at build time (-DWG_SIZE), tree fully unrolled";
  s.loads = 2;
  s.fixed_wg = true;
  s.tail = true;
  return std::make_unique<MultiPassVariant>(s);
}

}  // namespace clreduce
