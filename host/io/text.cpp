// text.cpp: escaping for messages, byte by byte, with a small UTF-8 decoder so that valid
// non-ASCII text (a file name in another script) stays readable.
#include "io/text.hpp"

#include <cstdint>
#include <cstdio>

namespace clreduce {
namespace {

// Length of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0 when it is not one
// (overlong forms, surrogates and values above U+10FFFF are not valid); cp gets its code point.
std::size_t utf8_length(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t len;
  std::uint32_t min;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1Fu;
    min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0Fu;
    min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07u;
    min = 0x10000;
  } else
    return 0;
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

// Code points a terminal or an editor treats as control: C1 controls, line and paragraph
// separators, and the bidirectional embeddings, overrides and isolates.
bool is_control(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E ||
         cp == 0x200F || cp == 0x061C;
}

void escape_byte(std::string& out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(c));
  out += buf;
}

}  // namespace

std::string printable(std::string_view s, std::size_t max_bytes) {
  const bool cut = s.size() > max_bytes;
  if (cut) s = s.substr(0, max_bytes);
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x80) {
      escape_byte(out, c);
      ++i;
    } else {
      std::uint32_t cp = 0;
      const std::size_t len = utf8_length(s, i, cp);
      if (len == 0 || is_control(cp)) {
        for (std::size_t k = 0; k < (len ? len : 1); ++k)
          escape_byte(out, static_cast<unsigned char>(s[i + k]));
        i += len ? len : 1;
      } else {
        out.append(s.substr(i, len));
        i += len;
      }
    }
  }
  if (cut) out += "...";
  return out;
}

}  // namespace clreduce
