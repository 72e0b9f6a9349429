// args.cpp: strict value parsing for the command line; no locale, no silent wrapping.
#include "args.hpp"

#include <cctype>

#include "clreduce/error.hpp"
#include "io/size_arg.hpp"
#include "io/text.hpp"

namespace clreduce {

std::uint64_t parse_count(const std::string& flag, const std::string& text, std::uint64_t lo,
                          std::uint64_t hi, const std::string& range) {
  const std::string words =
      range.empty() ? "from " + std::to_string(lo) + " to " + std::to_string(hi) : range;
  const Error bad(Errc::kUsage,
                  flag + " must be a whole number " + words + ", not '" + printable(text) + "'");
  if (text.empty()) throw bad;
  std::uint64_t v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) throw bad;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) throw bad;  // past 2^64-1
    v = v * 10 + d;
  }
  if (v < lo || v > hi) throw bad;
  return v;
}

std::uint64_t parse_size_flag(const std::string& flag, const std::string& text, std::uint64_t lo,
                              std::uint64_t hi, const std::string& range) {
  std::uint64_t v = 0;
  if (!parse_size_value(text, v) || v < lo || v > hi)
    throw Error(Errc::kUsage, flag + " must be a count " + range +
                                  ", written N, 2^K, NeK, 2^K+M or 2^K-M (e.g. 1000, 2^10, 1e3), "
                                  "not '" +
                                  printable(text) + "'");
  return v;
}

void require_nonempty(const std::string& flag, const std::string& text, const std::string& what) {
  if (text.empty()) throw Error(Errc::kUsage, flag + " needs " + what + ", not an empty value");
}

}  // namespace clreduce
