// build_program.hpp: every OpenCL program build goes through here: the compiler's own writes to
// stderr are silenced (quiet_stderr.hpp) and its build log is printed under --verbose instead.
#pragma once

#include <string>

#include "clreduce/cl.hpp"

namespace clreduce {

// program.build() for `device` with `options`, fd 2 silenced meanwhile. With verbose, a
// non-blank build log is printed to stderr afterwards, headed by `label` (the file built), whether
// the build succeeded or not. Throws what program.build() throws (cl::Error on failure), so the
// caller can fetch the log for its message.
void build_program(cl::Program& program, const cl::Device& device, const std::string& options,
                   bool verbose, const std::string& label);

}  // namespace clreduce
