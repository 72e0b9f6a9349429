// kernel_dir.hpp: where the .cl sources are read from at run time, so an edited kernel takes
// effect at the next run with no build step.
#pragma once

#include <string>
#include <vector>

namespace clreduce {

// Returns the first directory holding clreduce.h, in order: `flag` (--kernel-dir, or the
// library's kernel_dir argument: flag_name names it in messages), the CLREDUCE_KERNEL_DIR
// environment variable when from_env (the command line; a library caller only when its program
// asks), installed_kernel_dir(), the source tree's cl/ (baked in at configure time: build-tree
// runs), the configured install directory. An explicit flag or variable that does not hold the
// kernels is an error, never skipped. Throws Error(Errc::kBuild) naming every place tried.
std::string find_kernel_dir(const std::string& flag, bool from_env,
                            const std::string& flag_name = "--kernel-dir");

// Where the kernels are installed relative to the shared library or executable that holds this
// code, wherever the prefix has been moved: <its dir>/../share/clreduce/cl. "" when unknown.
// The directory need not exist (a build tree has none).
std::string installed_kernel_dir();

}  // namespace clreduce
