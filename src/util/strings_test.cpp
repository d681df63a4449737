// Tests for the string helpers.
#include "util/strings.h"

#include <gtest/gtest.h>

namespace kf {

TEST(Strings, SplitKeepsEmptyFields) {
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split_lines("x\r\ny\n"), (std::vector<std::string>{"x", "y"}));
}

TEST(Strings, TrimAndJoin) {
  EXPECT_EQ(trim("  a b \n"), "a b");
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
}

TEST(Strings, NearestSuggestsCloseWordsOnly) {
  std::vector<std::string> keys = {"max_iters", "branches_per_iteration", "build_timeout"};
  EXPECT_EQ(nearest("max_iter", keys), "max_iters");
  EXPECT_EQ(nearest("branches_per_iter", keys), "branches_per_iteration");
  EXPECT_EQ(nearest("zzzzzzzzzzzz", keys), "");
}

TEST(Strings, Utf8ValidationAndEscape) {
  EXPECT_TRUE(is_valid_utf8("plain, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("a\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // cut short
  EXPECT_EQ(escape_invalid_utf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(escape_invalid_utf8("a\xff"
                                "b\xe2\x82"),
            "a\\xffb\\xe2\\x82");
  EXPECT_TRUE(is_valid_utf8(escape_invalid_utf8(std::string("\x80\x00\xfe", 3))));
}

TEST(Strings, TruncateMiddleKeepsBothEnds) {
  std::string s(1000, 'a');
  s.replace(0, 5, "HEAD:");
  s.replace(995, 5, ":TAIL");
  std::string t = truncate_middle(s, 10, 10);
  EXPECT_LT(t.size(), 100u);
  EXPECT_EQ(t.substr(0, 5), "HEAD:");
  EXPECT_EQ(t.substr(t.size() - 5), ":TAIL");
  EXPECT_NE(t.find("980 bytes cut"), std::string::npos);
}

TEST(Strings, Strprintf) {
  EXPECT_EQ(strprintf("%d-%s", 7, "x"), "7-x");
}

}  // namespace kf
