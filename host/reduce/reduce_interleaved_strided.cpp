// reduce_interleaved_strided.cpp: ladder kernel 2; its schedule is MultiPassVariant's.
#include "reduce/multipass.hpp"

namespace clreduce {

std::unique_ptr<ReduceVariant> make_reduce_interleaved_strided() {
  LadderShape s;
  s.number = 2;
  s.name = "interleaved-strided";
  s.description =
      "kernel 2: interleaved addressing via index 2*s*lid: no divergence, bank conflicts";
  s.loads = 1;
  s.fixed_wg = false;
  s.tail = false;
  return std::make_unique<MultiPassVariant>(s);
}

}  // namespace clreduce
