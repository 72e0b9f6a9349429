// reduce_sequential_addressing.cpp: ladder kernel 3; its schedule is MultiPassVariant's.
#include "reduce/multipass.hpp"

namespace clreduce {

std::unique_ptr<ReduceVariant> make_reduce_sequential_addressing() {
  LadderShape s;
  s.number = 3;
  s.name = "sequential-addressing";
  s.description = "kernel 3: sequential addressing, stride halving from wg/2: conflict-free";
  s.loads = 1;
  s.fixed_wg = false;
  s.tail = false;
  return std::make_unique<MultiPassVariant>(s);
}

}  // namespace clreduce
