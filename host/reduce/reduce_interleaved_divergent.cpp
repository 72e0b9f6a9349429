// reduce_interleaved_divergent.cpp: ladder kernel 1; its schedule is MultiPassVariant's.
#include "reduce/multipass.hpp"

namespace clreduce {

std::unique_ptr<ReduceVariant> make_reduce_interleaved_divergent() {
  LadderShape s;
  s.number = 1;
  s.name = "interleaved-divergent";
  s.description =
      "kernel 1: interleaved addressing, work-item lid active when lid % 2s == 0 (divergent)";
  s.loads = 1;
  s.fixed_wg = false;
  s.tail = false;
  return std::make_unique<MultiPassVariant>(s);
}

}  // namespace clreduce
