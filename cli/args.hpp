// args.hpp: the command line's value checks. Every value is read as text and checked here, so a
// mistake is one line in the reader's words ("--repeat must be a whole number from 1 to
// 1000000, not '0'") before any device is touched, never a wrapped, clamped or ignored value.
#pragma once

#include <cstdint>
#include <string>

namespace clreduce {

// A whole decimal number from lo to hi: digits only (no sign, space, suffix or exponent), no
// overflow. `range` words the range when it reads better than "from lo to hi" (e.g. "from 0 to
// 2^64-1"). Throws Error(Errc::kUsage): "FLAG must be a whole number RANGE, not 'TEXT'".
std::uint64_t parse_count(const std::string& flag, const std::string& text, std::uint64_t lo,
                          std::uint64_t hi, const std::string& range = "");

// A count as --size takes it (N, 2^K, NeK, 2^K+M, 2^K-M: io/size_arg.hpp) from lo to hi, every
// form alike; `range` words the range ("from 1 to 2^64-1"). Throws Error(Errc::kUsage): "FLAG must
// be a count RANGE, written ..., not 'TEXT'".
std::uint64_t parse_size_flag(const std::string& flag, const std::string& text, std::uint64_t lo,
                              std::uint64_t hi, const std::string& range);

// The largest --max-chunk, as the max-chunk knob takes it (bytes).
constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{1} << 62;

// Throws Error(Errc::kUsage) "FLAG needs WHAT" when a value given explicitly is empty.
void require_nonempty(const std::string& flag, const std::string& text, const std::string& what);

// The limits of --warmup and --repeat: every timed run's times are kept for the medians, the
// sequential loop is timed as often as the variants, and warmup + repeat must stay a small count.
constexpr std::uint64_t kMaxWarmup = 1000000;
constexpr std::uint64_t kMaxRepeat = 1000000;

// The largest --local-size before a device is known (no OpenCL device takes more than this).
constexpr std::uint64_t kMaxLocalSize = 1u << 20;

}  // namespace clreduce
