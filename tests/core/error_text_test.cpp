// The error line main() prints (core/error_text.h): one line, every word of it at
// most ~200 characters, the whole at most ~1000.
#include <gtest/gtest.h>

#include <string>

#include "core/error_text.h"

namespace salt {
namespace {

TEST(ErrorText, ControlCharactersAreEscapedAndShortTextKept) {
  EXPECT_EQ(error_line("a\nb\rc\td\x01"), "a\\nb\\rc d?");
  const std::string word(197, 'w');  // with its quotes and colon: 200
  EXPECT_EQ(error_line("key '" + word + "': unknown"), "key '" + word + "': unknown");
}

TEST(ErrorText, ALongWordKeepsItsStartAndEndAroundAnEllipsis) {
  const std::string key = std::string(100, 'a') + std::string(10000, 'b') + std::string(100, 'c');
  EXPECT_EQ(error_line("'" + key + "': unknown key"),
            "'" + std::string(99, 'a') + "\u2026" + std::string(98, 'c') + "': unknown key");
}

TEST(ErrorText, NoUtf8CharacterIsCut) {
  // 'é' is two bytes: the cuts at 100 bytes from either end fall inside one.
  std::string word = "a";
  for (int i = 0; i < 200; ++i) word += "\xc3\xa9";
  const auto shown = error_line(word);
  const auto cut = shown.find("\u2026");
  ASSERT_NE(cut, std::string::npos);
  EXPECT_EQ(cut % 2, 1u) << "cut inside a character";  // "a" and whole é's
  EXPECT_EQ((shown.size() - cut - std::string("\u2026").size()) % 2, 0u);
}

TEST(ErrorText, ALongLineWithSpacesIsCappedToo) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "word ";
  const auto shown = error_line("'" + text + "': is not a name");
  EXPECT_LE(shown.size(), kMaxErrorLine + 3);
  EXPECT_NE(shown.find("\u2026"), std::string::npos);
  EXPECT_EQ(shown.substr(shown.size() - 16), "': is not a name");
}

}  // namespace
}  // namespace salt
