// size_arg.cpp: strict parsing; no silent truncation, no locale.
#include "io/size_arg.hpp"

#include <cctype>
#include <limits>

#include "clreduce/error.hpp"
#include "io/text.hpp"

namespace clreduce {

static bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::size_t parse_size(const std::string& s) {
  const Error bad(Errc::kUsage, "invalid size '" + printable(s) +
                                    "' (expected N, 2^K, 2^K+M, 2^K-M or NeK, e.g. 1000000, 2^20, "
                                    "2^29+1, 1e6)");
  // A power of two or of ten, then + or - a count: 2^29+1, 1e6-1.
  if (const auto pm = s.find_first_of("+-", 1); pm != std::string::npos && s.find('^') != 0) {
    const std::string head = s.substr(0, pm), tail = s.substr(pm + 1);
    if (head.find_first_of("^eE") == std::string::npos || !all_digits(tail)) throw bad;
    std::size_t base = 0;
    try {
      base = parse_size(head);
    } catch (const Error&) {
      throw bad;
    }
    const std::size_t m = std::stoull(tail);
    if (s[pm] == '+') {
      if (m > std::numeric_limits<std::size_t>::max() - base) throw bad;
      return base + m;
    }
    if (m > base) throw bad;
    return base - m;
  }
  auto pow_of = [&](const std::string& base_s, const std::string& exp_s, unsigned base_mul) {
    if (!all_digits(base_s) || !all_digits(exp_s)) throw bad;
    std::size_t v = std::stoull(base_s);
    const unsigned long e = std::stoul(exp_s);
    for (unsigned long k = 0; k < e; ++k) {
      if (v > std::numeric_limits<std::size_t>::max() / base_mul) throw bad;
      v *= base_mul;
    }
    return v;
  };
  if (const auto caret = s.find('^'); caret != std::string::npos) {
    if (s.substr(0, caret) != "2") throw bad;
    return pow_of("1", s.substr(caret + 1), 2);
  }
  if (const auto e = s.find_first_of("eE"); e != std::string::npos)
    return pow_of(s.substr(0, e), s.substr(e + 1), 10);
  if (!all_digits(s)) throw bad;
  return std::stoull(s);
}

}  // namespace clreduce
