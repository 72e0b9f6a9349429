// test_text.cpp: printable(), the one escape for text that came from a file: control characters,
// NUL, backslash, invalid UTF-8, the Unicode controls, and truncation.
#include <catch2/catch_test_macros.hpp>

#include <string>

#include "io/text.hpp"

using clreduce::printable;
using namespace std::string_literals;

TEST_CASE("printable escapes control characters and backslash, keeps plain text", "[text]") {
  CHECK(printable("descr") == "descr");
  CHECK(printable("a b_c-1.npy") == "a b_c-1.npy");
  CHECK(printable("\x1b[31mred\x1b[0m") == "\\x1B[31mred\\x1B[0m");
  CHECK(printable("line\nforged: all verified") == "line\\x0Aforged: all verified");
  CHECK(printable("a\rb\tc\x7f") == "a\\x0Db\\x09c\\x7F");
  CHECK(printable("ab\0cd"s) == "ab\\x00cd");  // a NUL cannot cut the message short
  CHECK(printable("C:\\x1B") == "C:\\\\x1B");  // a literal backslash is not mistaken for an escape
  CHECK(printable("") == "");
}

TEST_CASE("printable keeps valid UTF-8 text and escapes invalid bytes and Unicode controls",
          "[text]") {
  CHECK(printable("donn\xc3\xa9"
                  "es \xe2\x82\xac \xf0\x9f\x98\x80") ==
        "donn\xc3\xa9"
        "es \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(printable("\xc2\x9b"
                  "31m") == "\\xC2\\x9B31m");  // C1 CSI
  CHECK(printable("a\xe2\x80\xae"
                  "b") == "a\\xE2\\x80\\xAEb");               // right-to-left override
  CHECK(printable("x\xe2\x80\xa8y") == "x\\xE2\\x80\\xA8y");  // line separator
  CHECK(printable("\xff\xfe") == "\\xFF\\xFE");               // not UTF-8
  CHECK(printable("\xc0\xaf") == "\\xC0\\xAF");               // overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\\xED\\xA0\\x80");      // a surrogate
  CHECK(printable("\xe2\x82") == "\\xE2\\x82");               // cut short
}

TEST_CASE("printable cuts long text and says so", "[text]") {
  const std::string long_text(1000, 'k');
  CHECK(printable(long_text, 10) == "kkkkkkkkkk...");
  CHECK(printable(long_text).size() == 203);
  CHECK(printable("exactly10!", 10) == "exactly10!");
  CHECK(printable("\n\n\n\n", 2) == "\\x0A\\x0A...");
}
