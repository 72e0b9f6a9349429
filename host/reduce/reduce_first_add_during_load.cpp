// reduce_first_add_during_load.cpp: ladder kernel 4; its schedule is MultiPassVariant's.
#include "reduce/multipass.hpp"

namespace clreduce {

std::unique_ptr<ReduceVariant> make_reduce_first_add_during_load() {
  LadderShape s;
  s.number = 4;
  s.name = "first-add-during-load";
  s.description = "kernel 4: as 3, two elements added per work-item while loading: half the groups";
  s.loads = 2;
  s.fixed_wg = false;
  s.tail = false;
  return std::make_unique<MultiPassVariant>(s);
}

}  // namespace clreduce
