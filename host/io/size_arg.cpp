// size_arg.cpp: strict parsing; no silent truncation, no locale. Every value is worked out exactly
// in 128 bits, so a form is never refused for a part of it that its result does not need (2^64-1
// and 18446744073709551615 alike), and a part past 2^120 (2^99999999999, 1e9999999999) stops
// the work at once: no loop runs once per unit of an exponent.
#include "io/size_arg.hpp"

#include <algorithm>
#include <limits>

#include "clreduce/error.hpp"
#include "io/text.hpp"

namespace clreduce {

namespace {

using Wide = unsigned __int128;
// Past every size: a part that reaches it is refused (so the sum and difference of two parts are
// exact, and value * 10 + 9 never wraps).
constexpr Wide kPast = Wide{1} << 120;

// Digits only, at least one; their value, held at kPast once it gets there.
bool digits(const std::string& s, Wide& v) {
  if (s.empty()) return false;
  v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = std::min(kPast, v * 10 + static_cast<unsigned>(c - '0'));
  }
  return true;
}

// m * base^e, held at kPast: at most 120 steps whatever e is (and none for m = 0).
Wide power(Wide m, unsigned base, Wide e) {
  for (; e > 0 && m > 0 && m < kPast; --e) m = std::min(kPast, m * base);
  return m;
}

// The value of "2^K" or "NeK" (the caller has checked there is a '^', 'e' or 'E'), or of digits.
bool term(const std::string& s, Wide& v) {
  Wide m = 0, e = 0;
  if (const auto caret = s.find('^'); caret != std::string::npos) {
    if (s.compare(0, caret, "2") != 0 || !digits(s.substr(caret + 1), e)) return false;
    v = power(1, 2, e);
    return true;
  }
  if (const auto x = s.find_first_of("eE"); x != std::string::npos) {
    if (!digits(s.substr(0, x), m) || !digits(s.substr(x + 1), e)) return false;
    v = power(m, 10, e);
    return true;
  }
  return digits(s, v);
}

}  // namespace

bool parse_size_value(const std::string& s, std::uint64_t& value) {
  Wide v = 0;
  // A power of two or of ten, then + or - a count: 2^29+1, 1e6-1, 2^64-1.
  if (const auto pm = s.find_first_of("+-", 1); pm != std::string::npos) {
    const std::string head = s.substr(0, pm);
    Wide base = 0, m = 0;
    if (head.find_first_of("^eE") == std::string::npos || !term(head, base) ||
        !digits(s.substr(pm + 1), m) || base >= kPast || m >= kPast)
      return false;
    if (s[pm] == '+') {
      v = base + m;
    } else {
      if (m > base) return false;
      v = base - m;
    }
  } else if (!term(s, v)) {
    return false;
  }
  if (v > std::numeric_limits<std::uint64_t>::max()) return false;
  value = static_cast<std::uint64_t>(v);
  return true;
}

std::size_t parse_size(const std::string& s) {
  static_assert(sizeof(std::size_t) == sizeof(std::uint64_t), "sizes are 64-bit");
  std::uint64_t v = 0;
  if (!parse_size_value(s, v))
    throw Error(Errc::kUsage, "invalid size '" + printable(s) +
                                  "' (expected a count from 0 to 2^64-1 written N, 2^K, 2^K+M, "
                                  "2^K-M or NeK, e.g. 1000000, 2^20, 2^29+1, 1e6)");
  return v;
}

}  // namespace clreduce
