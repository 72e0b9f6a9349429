// build_program.cpp: a quiet build, its log under --verbose.
#include "runtime/build_program.hpp"

#include <iostream>
#include <vector>

#include "runtime/quiet_stderr.hpp"

namespace clreduce {

void build_program(cl::Program& program, const cl::Device& device, const std::string& options,
                   bool verbose, const std::string& label) {
  const auto show_log = [&] {
    if (!verbose) return;
    std::string log;
    try {
      log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device);
    } catch (const cl::Error&) {
      return;
    }
    while (!log.empty() && (log.back() == '\n' || log.back() == ' ' || log.back() == '\0'))
      log.pop_back();
    if (log.find_first_not_of(" \n\t\r") != std::string::npos)
      std::cerr << "build log of " << label << " " << options << ":\n" << log << "\n";
  };
  try {
    QuietStderr quiet;
    program.build(std::vector<cl::Device>{device}, options.c_str());
  } catch (const cl::Error&) {
    show_log();
    throw;
  }
  show_log();
}

}  // namespace clreduce
