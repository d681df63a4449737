// Tests for compiler-output cleaning.
#include "eval/log_clean.h"

#include <gtest/gtest.h>

#include "util/strings.h"

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

TEST(LogClean, OneHugeLineIsCutWithANoteNotACrash) {
  // A debug printf without a newline: the old std::regex recursed per byte and overflowed the
  // stack on a line like this one.
  std::string line = "kernel.cpp:1:1: error: " + std::string(64 * 1024, 'x');
  LogCleanOptions o;
  o.own_files = {"kernel.cpp"};
  std::string out = clean_compiler_output(line + "\n" + std::string(200000, 'y'), o);
  EXPECT_NE(out.find("kernel.cpp:1:1: error: xxx"), std::string::npos) << out.substr(0, 400);
  EXPECT_NE(out.find("bytes cut]"), std::string::npos);
  EXPECT_LT(out.size(), 2 * o.max_line_chars + 10);
}

TEST(LogClean, DiagnosticFormsMatchedByHand) {
  std::string raw =
      "a.cpp:3:4: warning: own one\n"
      "a.cpp:5: warning: no column\n"
      "a.cu(7): warning: nvcc style\n"
      "x.h:1:1: warning: foreign\n"
      "x.h:1:1: note: its note\n"
      "x.h:2:2: fatal error: foreign errors stay\n"
      "a.cpp:9:1: warnings: not a severity word\n"
      "a.cpp:x: warning: no line number\n"
      "(a.cpp:1:1: warning: starts with a paren\n";
  LogCleanOptions o;
  o.own_files = {"a.cpp", "a.cu"};
  std::string out = clean_compiler_output(raw, o);
  EXPECT_EQ(out,
            "a.cpp:3:4: warning: own one\n"
            "a.cpp:5: warning: no column\n"
            "a.cu(7): warning: nvcc style\n"
            "x.h:2:2: fatal error: foreign errors stay\n"
            "a.cpp:9:1: warnings: not a severity word\n"
            "a.cpp:x: warning: no line number\n"
            "(a.cpp:1:1: warning: starts with a paren\n");
}

TEST(LogClean, InputIsBoundedAndOutputIsUtf8) {
  std::string flood;
  for (int i = 0; flood.size() < (9u << 20); ++i)
    flood +=
        "k.cpp:" + std::to_string(i) + ":1: error: \xff\xfe distinct " + std::to_string(i) + "\n";
  LogCleanOptions o;
  o.own_files = {"k.cpp"};
  std::string out = clean_compiler_output(flood, o);
  EXPECT_TRUE(is_valid_utf8(out));
  EXPECT_NE(out.find("error: \\xff\\xfe distinct 0\n"), std::string::npos) << out.substr(0, 200);
  EXPECT_LE(out.size(), 2 * o.max_chars + 100);
  EXPECT_NE(out.find("less important lines omitted"), std::string::npos);
}

TEST(LogClean, CutNeverSplitsACharacterOrAnEscape) {
  LogCleanOptions o;
  o.max_line_chars = 100;
  for (size_t shift = 0; shift < 6; ++shift) {
    std::string line = std::string(shift, 'a');
    for (int i = 0; i < 60; ++i) line += i % 2 ? "\xc3\xa9" : "\xff";
    std::string out = clean_compiler_output(line, o);
    EXPECT_TRUE(is_valid_utf8(out)) << shift;
    EXPECT_LE(out.size(), o.max_line_chars + 1) << out;
    EXPECT_EQ(out.find("\\x ["), std::string::npos) << out;
  }
}

}  // namespace kf
