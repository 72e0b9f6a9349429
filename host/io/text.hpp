// text.hpp: text that came from a file (a .npy header, a name read from disk), made safe to put in
// a one-line message: nothing in it can move the cursor, colour the terminal, start a forged second
// line or cut the message short.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace clreduce {

// s with every control character (0x00-0x1F, 0x7F, the C1 controls U+0080-U+009F, the Unicode
// line separators and bidirectional overrides) and every byte that is not valid UTF-8 written as
// \xNN (each byte), and backslash as \\; other UTF-8 text unchanged. When s is longer than
// max_bytes, only its first max_bytes bytes are shown, followed by "...".
std::string printable(std::string_view s, std::size_t max_bytes = 200);

}  // namespace clreduce
