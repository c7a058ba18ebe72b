//===- RuntimeQuoteTests.cpp - nncc_quote, how messages show names --------===//

#include "RuntimeTestUtil.h"

#include <cstring>
#include <string>

namespace {

std::string shown(const std::string &text) {
  size_t n = nncc_quote(text.data(), text.size(), nullptr, 0);
  std::string out(n, '\0');
  EXPECT_EQ(nncc_quote(text.data(), text.size(), &out[0], n + 1), n);
  EXPECT_EQ(std::strlen(out.c_str()), n);
  return out;
}

} // namespace

TEST(RuntimeQuote, EscapesWhatATerminalWouldActOn) {
  EXPECT_EQ(shown("fc.weight"), "'fc.weight'");
  EXPECT_EQ(shown(""), "''");
  // A forged message line, a screen clear, DEL.
  EXPECT_EQ(shown("x\nnncc: error: forged"), "'x\\x0anncc: error: forged'");
  EXPECT_EQ(shown("\x1b[2J\x7f"), "'\\x1b[2J\\x7f'");
  EXPECT_EQ(shown(std::string("a\0b", 3)), "'a\\x00b'");
  // C1 controls are valid UTF-8 (U+009B is the one-byte CSI): escaped by byte.
  EXPECT_EQ(shown("\xc2\x9b" "31m"), "'\\xc2\\x9b31m'");
  EXPECT_EQ(shown("\xc2\x85"), "'\\xc2\\x85'");
  // Backslash and quote.
  EXPECT_EQ(shown("it's a\\b"), "'it\\'s a\\\\b'");
  // Bytes outside UTF-8 (a stray continuation, an overlong '/', a
  // surrogate, a truncated sequence) one by one; valid UTF-8 as is.
  EXPECT_EQ(shown("\x80"), "'\\x80'");
  EXPECT_EQ(shown("\xc0\xaf"), "'\\xc0\\xaf'");
  EXPECT_EQ(shown("\xed\xa0\x80"), "'\\xed\\xa0\\x80'");
  EXPECT_EQ(shown("ab\xe2\x82"), "'ab\\xe2\\x82'");
  EXPECT_EQ(shown("\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
            "'\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80'");
  EXPECT_EQ(nncc_quote(nullptr, 5, nullptr, 0), 6u); // "(null)"
}

TEST(RuntimeQuote, CutsLongTextsBetweenCharacters) {
  EXPECT_EQ(shown(std::string(200, 'a')), "'" + std::string(200, 'a') + "'");
  EXPECT_EQ(shown(std::string(300, 'a')), "'" + std::string(200, 'a') + "'... (300 bytes)");
  // A two-byte character across the 200-byte mark is left out whole.
  std::string text = std::string(199, 'a') + "\xc3\xa9" + "zz";
  EXPECT_EQ(shown(text), "'" + std::string(199, 'a') + "'... (203 bytes)");
  // Too small a buffer: cut and NUL-terminated, the full length returned.
  char buf[5];
  EXPECT_EQ(nncc_quote("abcdef", 6, buf, sizeof buf), 8u);
  EXPECT_STREQ(buf, "'abc");
}
