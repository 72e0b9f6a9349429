// kernel_cache.hpp: the OpenCL runtime's own cache of compiled kernels on disk, which it must be
// able to write. PoCL finds no device when it cannot make the cache's folder, fails a build with
// no log when the folder is not one, and its compiler (LLVM) ends the process when a write there
// fails (a full disk). Where those happen, clreduce looks at the cache and says what is wrong
// with it and how to point it elsewhere: Errc::kBuild (the CLI's exit 4), as for any build
// that cannot be done.
#pragma once

#include <string>

namespace clreduce {

// PoCL's kernel cache folder, as PoCL 3 picks it: $POCL_CACHE_DIR, else
// $XDG_CACHE_HOME/pocl/kcache, else $HOME/.cache/pocl/kcache, else /tmp/pocl/kcache.
std::string pocl_cache_dir();

// What is wrong with PoCL's kernel cache, as a message clause ("PoCL's kernel cache /x cannot be
// made (Not a directory); point POCL_CACHE_DIR at a writable folder with free space (default
// ~/.cache/pocl)"), or "" when the folder can be made (as PoCL would) and 1 MiB written there.
std::string pocl_cache_problem();

// Whether a platform name is PoCL's.
bool is_pocl_platform(const std::string& platform_name);

}  // namespace clreduce
