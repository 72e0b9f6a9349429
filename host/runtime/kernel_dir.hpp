// kernel_dir.hpp: where the .cl sources are read from at run time, so an edited kernel takes
// effect at the next run with no build step.
#pragma once

#include <string>
#include <vector>

namespace clreduce {

// Returns the first directory holding clreduce.h, in order: `flag` (--kernel-dir), the
// CLREDUCE_KERNEL_DIR environment variable, the source tree's cl/ (baked in at configure time),
// the installed share directory. An explicit flag or variable that does not hold the kernels is
// an error, never skipped. Throws Error(Errc::kBuild) naming every place tried.
std::string find_kernel_dir(const std::string& flag);

}  // namespace clreduce
