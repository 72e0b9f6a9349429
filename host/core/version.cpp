// version.cpp: the library's version and build options (`clreduce --version` prints them, with
// the command's own OpenMP and MPI lines).
#include "clreduce/version.hpp"

#include "clreduce/cl.hpp"

namespace clreduce {

const char* version() { return CLREDUCE_VERSION; }

std::string build_options() {
  const int cl = CL_HPP_TARGET_OPENCL_VERSION;
  return "opencl: API " + std::to_string(cl / 100) + "." + std::to_string(cl / 10 % 10) +
         " (CL_HPP_TARGET_OPENCL_VERSION " + std::to_string(cl) + ")\n";
}

}  // namespace clreduce
