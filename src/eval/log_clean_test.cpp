// Tests for compiler-output cleaning.
#include "eval/log_clean.h"

#include <gtest/gtest.h>

namespace kf {

TEST(LogClean, NormalisesPathsDropsIncludeStacksAndForeignWarnings) {
  std::string raw =
      "In file included from /tmp/job/src/task.cpp:3:\n"
      "                 from /tmp/job/src/other.h:1:\n"
      "/usr/include/foo.h:10:5: warning: deprecated thing [-Wdeprecated]\n"
      "   10 |   old();\n"
      "/usr/include/foo.h:11:5: note: declared here\n"
      "/tmp/job/src/kernel.cpp:42:7: error: 'x' was not declared in this scope\n"
      "   42 |   y = x + 1;\n"
      "      |       ^\n"
      "/tmp/job/src/kernel.cpp:50:1: warning: unused variable 'z' [-Wunused-variable]\n";
  LogCleanOptions o;
  o.strip_prefixes = {"/tmp/job/src"};
  o.own_files = {"kernel.cpp", "task.cpp"};
  std::string out = clean_compiler_output(raw, o);
  EXPECT_EQ(out.find("In file included"), std::string::npos) << out;
  EXPECT_EQ(out.find("foo.h"), std::string::npos) << out;
  EXPECT_NE(out.find("kernel.cpp:42:7: error: 'x' was not declared"), std::string::npos) << out;
  EXPECT_NE(out.find("      |       ^"), std::string::npos) << out;
  EXPECT_NE(out.find("kernel.cpp:50:1: warning: unused variable"), std::string::npos) << out;
  EXPECT_EQ(out.find("/tmp/job"), std::string::npos) << out;
}

TEST(LogClean, RemovesRepeatedDiagnosticsAndNvccFormat) {
  std::string raw =
      "/w/k.cu(12): error: identifier \"foo\" is undefined\n"
      "/w/k.cu(12): error: identifier \"foo\" is undefined\n"
      "/w/k.cu(13): error: expected a \";\"\n";
  LogCleanOptions o;
  o.strip_prefixes = {"/w"};
  o.own_files = {"k.cu"};
  std::string out = clean_compiler_output(raw, o);
  EXPECT_EQ(
      out, "k.cu(12): error: identifier \"foo\" is undefined\nk.cu(13): error: expected a \";\"\n");
}

TEST(LogClean, CapKeepsErrorsAndNotesTheCut) {
  std::string raw;
  for (int i = 0; i < 200; ++i)
    raw += "k.cpp:" + std::to_string(i) + ":1: warning: noise " + std::string(40, 'w') + "\n";
  raw += "k.cpp:999:1: error: the real problem\n";
  LogCleanOptions o;
  o.own_files = {"k.cpp"};
  o.max_chars = 1000;
  std::string out = clean_compiler_output(raw, o);
  EXPECT_NE(out.find("error: the real problem"), std::string::npos);
  EXPECT_LE(out.size(), 1200u);
  EXPECT_NE(out.find("less important lines omitted"), std::string::npos);
}

TEST(LogClean, ShortensLongLines) {
  LogCleanOptions o;
  o.max_line_chars = 50;
  std::string out = clean_compiler_output(std::string(500, 'a') + "\n", o);
  EXPECT_LT(out.size(), 70u);
}

}  // namespace kf
