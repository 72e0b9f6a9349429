// reduce_multi_element.cpp: ladder kernel 7; its schedule is MultiPassVariant's.
#include "reduce/multipass.hpp"

namespace clreduce {

std::unique_ptr<ReduceVariant> make_reduce_multi_element() {
  LadderShape s;
  s.number = 7;
  s.name = "multi-element";
  s.description =
      "kernel 7: as 6, cost-optimal: many elements per work-item, grid from compute units";
  s.loads = 0;
  s.fixed_wg = true;
  s.tail = true;
  return std::make_unique<MultiPassVariant>(s);
}

}  // namespace clreduce
