// size_arg.hpp: parses element counts written as 1000000, 2^20 or 1e6.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace clreduce {

// A count from 0 to 2^64-1 written N (decimal digits, any number of them), 2^K, NeK (or NEK), or
// 2^K or NeK then +M or -M (M decimal digits): 1000000, 2^20, 1e6, 2^29+1, 2^64-1. No sign, space,
// fraction or negative exponent. The value is exact whatever the form (a part of it may pass 2^64
// where the result does not, as 2^64 in 2^64-1); a part past 2^120 is refused. Never loops once
// per unit of an exponent: 0e9999999999999999 is 0 at once. False, value untouched, for anything
// else or anything past 2^64-1.
bool parse_size_value(const std::string& s, std::uint64_t& value);

// parse_size_value(), throwing Error(Errc::kUsage) for anything it refuses.
std::size_t parse_size(const std::string& s);

}  // namespace clreduce
