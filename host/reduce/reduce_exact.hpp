// reduce_exact.hpp: what `exact` (the correctly rounded sum) accepts, for the command line, which
// refuses a variant asked for by name that can never run the problem.
#pragma once

#include <string>

#include "clreduce/types.hpp"

namespace clreduce {

// Empty when `exact` takes op on elements of type t (sum of float or double); else why not.
std::string exact_refusal(Op op, DType t);

}  // namespace clreduce
