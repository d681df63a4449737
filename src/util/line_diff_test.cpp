// Tests for the unified line diff.
#include "util/line_diff.h"

#include <gtest/gtest.h>

#include "util/strings.h"

namespace kf {
namespace {

size_t count_substr(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::string numbered(int from, int to) {
  std::string out;
  for (int i = from; i <= to; ++i) out += "line " + std::to_string(i) + "\n";
  return out;
}

TEST(UnifiedDiff, SameLinesGiveNothing) {
  EXPECT_EQ(unified_diff("a\nb\n", "a\nb\n"), "");
  EXPECT_EQ(unified_diff("a\nb", "a\nb\n"), "") << "a missing last newline is no change";
}

TEST(UnifiedDiff, OneChangedLineWithContext) {
  std::string before = numbered(1, 10);
  std::string after = replace_all(before, "line 5\n", "line five\n");
  EXPECT_EQ(unified_diff(before, after, 2),
            "@@ -3,5 +3,5 @@\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n");
}

TEST(UnifiedDiff, NearbyChangesShareAHunkAndFarOnesDoNot) {
  std::string before = numbered(1, 30);
  std::string near = replace_all(replace_all(before, "line 5\n", "x\n"), "line 8\n", "y\n");
  EXPECT_EQ(count_substr(unified_diff(before, near, 2), "@@ -"), 1u);
  std::string far = replace_all(replace_all(before, "line 5\n", "x\n"), "line 25\n", "y\n");
  EXPECT_EQ(count_substr(unified_diff(before, far, 2), "@@ -"), 2u);
}

TEST(UnifiedDiff, InsertionsAndDeletions) {
  EXPECT_EQ(unified_diff("a\nb\nc\n", "a\nc\n", 1), "@@ -1,3 +1,2 @@\n a\n-b\n c\n");
  EXPECT_EQ(unified_diff("a\nc\n", "a\nb\nc\n", 1), "@@ -1,2 +1,3 @@\n a\n+b\n c\n");
  EXPECT_EQ(unified_diff("", "x\n", 1), "@@ -0,0 +1,1 @@\n+x\n");
}

TEST(UnifiedDiff, HugeRewriteIsShownAsReplacedWhole) {
  std::string before, after;
  for (int i = 0; i < 3000; ++i) before += "old " + std::to_string(i) + "\n";
  for (int i = 0; i < 3000; ++i) after += "new " + std::to_string(i) + "\n";
  std::string diff = unified_diff(before, after, 1);
  EXPECT_EQ(count_substr(diff, "\n-old "), 3000u);
  EXPECT_EQ(count_substr(diff, "\n+new "), 3000u);
}

}  // namespace
}  // namespace kf
