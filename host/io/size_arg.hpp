// size_arg.hpp: parses element counts written as 1000000, 2^20 or 1e6.
#pragma once

#include <cstddef>
#include <string>

namespace clreduce {

// Throws Error(Errc::kUsage) on anything else, negative values or overflow.
std::size_t parse_size(const std::string& s);

}  // namespace clreduce
