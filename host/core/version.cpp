// version.cpp: the version and build options that `clreduce --version` prints.
#include "clreduce/version.hpp"

#include "clreduce/cl.hpp"
#include "run/ranks.hpp"

namespace clreduce {

const char* version() { return CLREDUCE_VERSION; }

std::string build_options() {
  const int cl = CL_HPP_TARGET_OPENCL_VERSION;
  std::string s = "opencl: API " + std::to_string(cl / 100) + "." + std::to_string(cl / 10 % 10) +
                  " (CL_HPP_TARGET_OPENCL_VERSION " + std::to_string(cl) + ")\n";
#ifdef _OPENMP
  s += "openmp: yes (" + std::to_string(_OPENMP) + ")\n";
#else
  s += "openmp: no\n";
#endif
  s += "mpi: " + (mpi_built() ? mpi_library_version() : std::string("not built in")) + "\n";
  return s;
}

}  // namespace clreduce
