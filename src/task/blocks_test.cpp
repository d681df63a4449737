// Tests for block parsing and splicing.
#include <gtest/gtest.h>

#include <algorithm>

#include "task/task.h"

namespace kf {
namespace {

std::vector<Block> parse_ok(std::string_view file, std::string_view text) {
  auto r = parse_blocks(file, text);
  EXPECT_TRUE(r.is_ok()) << r.message();
  return r.is_ok() ? *r : std::vector<Block>{};
}

std::string parse_error(std::string_view file, std::string_view text) {
  auto r = parse_blocks(file, text);
  EXPECT_FALSE(r.is_ok());
  return r.message();
}

TEST(Blocks, KindNames) {
  EXPECT_EQ(block_kind_name(BlockKind::kEvolve), "EVOLVE");
  EXPECT_EQ(block_kind_name(BlockKind::kReference), "REFERENCE");
  EXPECT_EQ(block_kind_name(BlockKind::kUserInstructions), "USER_INSTRUCTIONS");
}

TEST(Blocks, SlashSlashMarkersAndTrimming) {
  auto blocks = parse_ok("k.cu",
                         "#include <x>\n"
                         "// [EVOLVE_START]\n"
                         "\n"
                         "   \n"
                         "__global__ void k() {\n"
                         "\n"
                         "  int x = 1;\n"
                         "}\n"
                         "\n"
                         "  // [EVOLVE_END] trailing words are fine\n"
                         "int main() {}\n");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].kind, BlockKind::kEvolve);
  EXPECT_EQ(blocks[0].file, "k.cu");
  EXPECT_EQ(blocks[0].index, 0);
  EXPECT_EQ(blocks[0].start_line, 2);
  EXPECT_EQ(blocks[0].end_line, 10);
  EXPECT_EQ(blocks[0].content, "__global__ void k() {\n\n  int x = 1;\n}\n");
}

TEST(Blocks, HashAndBlockCommentMarkers) {
  auto py = parse_ok("k.py", "# [REFERENCE_START]\ndef ref(x):\n    return x\n# [REFERENCE_END]\n");
  ASSERT_EQ(py.size(), 1u);
  EXPECT_EQ(py[0].kind, BlockKind::kReference);
  EXPECT_EQ(py[0].content, "def ref(x):\n    return x\n");

  auto cl = parse_ok("k.cl",
                     "/* [USER_INSTRUCTIONS_START] */\r\n"
                     "Use local memory.\r\n"
                     "   /* [USER_INSTRUCTIONS_END] */\r\n");
  ASSERT_EQ(cl.size(), 1u);
  EXPECT_EQ(cl[0].kind, BlockKind::kUserInstructions);
  EXPECT_EQ(cl[0].content, "Use local memory.\n");  // CRLF normalised

  auto md = parse_ok("README.md", "<!-- [EVOLVE_START] -->\n<!-- [EVOLVE_END] -->\n");
  ASSERT_EQ(md.size(), 1u);
  EXPECT_EQ(md[0].content, "");  // an empty block: the model writes it from scratch
}

TEST(Blocks, SeveralBlocksAreIndexedPerKind) {
  auto blocks = parse_ok("k.cu",
                         "// [EVOLVE_START]\na\n// [EVOLVE_END]\n"
                         "// [REFERENCE_START]\nr\n// [REFERENCE_END]\n"
                         "// [EVOLVE_START]\nb\n// [EVOLVE_END]\n"
                         "// [REFERENCE_START]\ns\n// [REFERENCE_END]\n");
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0].kind, BlockKind::kEvolve);
  EXPECT_EQ(blocks[0].index, 0);
  EXPECT_EQ(blocks[1].kind, BlockKind::kReference);
  EXPECT_EQ(blocks[1].index, 0);
  EXPECT_EQ(blocks[2].kind, BlockKind::kEvolve);
  EXPECT_EQ(blocks[2].index, 1);
  EXPECT_EQ(blocks[2].content, "b\n");
  EXPECT_EQ(blocks[2].start_line, 7);
  EXPECT_EQ(blocks[3].index, 1);
  EXPECT_EQ(blocks[3].content, "s\n");
}

TEST(Blocks, NestedStartNamesBothLines) {
  std::string err = parse_error("k.cu",
                                "// [EVOLVE_START]\n"
                                "x\n"
                                "// [REFERENCE_START]\n"
                                "// [REFERENCE_END]\n"
                                "// [EVOLVE_END]\n");
  EXPECT_NE(err.find("nested [REFERENCE_START] at k.cu:3 inside [EVOLVE_START] opened at k.cu:1"),
            std::string::npos)
      << err;
  // The inner pair still matches, so the report does not cascade into more errors.
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

TEST(Blocks, UnterminatedBlock) {
  std::string err = parse_error("softmax.cl", "a\nb\nc\n// [EVOLVE_START]\nkernel\n");
  EXPECT_EQ(err, "[EVOLVE_START] at softmax.cl:4 has no [EVOLVE_END]");
}

TEST(Blocks, EndWithoutStartAndWrongKind) {
  EXPECT_EQ(parse_error("k.cu", "x\n// [EVOLVE_END]\n"),
            "[EVOLVE_END] at k.cu:2 has no matching [EVOLVE_START]");
  std::string err = parse_error("k.cu", "// [EVOLVE_START]\n// [REFERENCE_END]\n// [EVOLVE_END]\n");
  EXPECT_NE(err.find("[REFERENCE_END] at k.cu:2 does not close the open [EVOLVE_START] from "
                     "k.cu:1 (expected [EVOLVE_END])"),
            std::string::npos)
      << err;
}

TEST(Blocks, AFileFullOfBadMarkersGivesABoundedError) {
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "// [EVOLVE_END]\n";
  std::string err = parse_error("k.cu", text);
  EXPECT_LT(err.size(), 4000u) << "one line per bad marker made megabytes of message";
  EXPECT_NE(err.find("[EVOLVE_END] at k.cu:1 has no matching"), std::string::npos) << err;
  EXPECT_NE(err.find("... and 99980 more marker error(s)"), std::string::npos) << err;
}

TEST(Blocks, MarkerOutsideCommentIsAnError) {
  std::string err = parse_error("k.cu",
                                "const char* s = \"[EVOLVE_START]\";\n"
                                "const char* t = \"// [EVOLVE_END]\";\n"
                                "/* c */ [REFERENCE_START]\n");
  EXPECT_NE(err.find("[EVOLVE_START] at k.cu:1 is not inside a comment"), std::string::npos) << err;
  EXPECT_NE(err.find("[EVOLVE_END] at k.cu:2 is not inside a comment"), std::string::npos) << err;
  EXPECT_NE(err.find("[REFERENCE_START] at k.cu:3 is not inside a comment"), std::string::npos)
      << err;
  EXPECT_NE(err.find("put the marker in a comment"), std::string::npos);
  // A Python string is not a comment either, but a '#' after it is.
  EXPECT_FALSE(parse_blocks("k.py", "x = '# [EVOLVE_START]'\n").is_ok());
  EXPECT_TRUE(parse_blocks("k.py", "x = 'a'  # [EVOLVE_START]\n# [EVOLVE_END]\n").is_ok());
  // Apostrophes in prose do not open a string.
  EXPECT_TRUE(
      parse_blocks("k.cu", "int x; // don't touch [EVOLVE_START]\n// [EVOLVE_END]\n").is_ok());
}

TEST(Blocks, ReportsEveryProblemOnItsOwnLine) {
  std::string err = parse_error("k.cu",
                                "// [EVOLVE_END]\n"
                                "\"[EVOLVE_START]\"\n"
                                "// [EVOLVE_START] [EVOLVE_END]\n"
                                "// [REFERENCE_START]\n");
  EXPECT_NE(err.find("k.cu:1"), std::string::npos);
  EXPECT_NE(err.find("k.cu:2"), std::string::npos);
  EXPECT_NE(err.find("[EVOLVE_START] and [EVOLVE_END] on one line at k.cu:3"), std::string::npos);
  EXPECT_NE(err.find("[REFERENCE_START] at k.cu:4 has no [REFERENCE_END]"), std::string::npos);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 3) << err;
}

constexpr std::string_view kKernel =
    "#include <cuda.h>\n"
    "  // [EVOLVE_START] keep this comment\n"
    "old body\n"
    "  // [EVOLVE_END]\n"
    "middle\n"
    "// [EVOLVE_START]\n"
    "second\n"
    "// [EVOLVE_END]\n"
    "tail without newline";

TEST(Splice, KeepsMarkersAndOtherTextByteIdentical) {
  auto r =
      splice_block(kKernel, "k.cu", BlockKind::kEvolve, 0, "\n\nnew line 1\n  new line 2\n\n\n");
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(*r,
            "#include <cuda.h>\n"
            "  // [EVOLVE_START] keep this comment\n"
            "new line 1\n"
            "  new line 2\n"
            "  // [EVOLVE_END]\n"
            "middle\n"
            "// [EVOLVE_START]\n"
            "second\n"
            "// [EVOLVE_END]\n"
            "tail without newline");
  auto second = splice_block(kKernel, "k.cu", BlockKind::kEvolve, 1, "no newline");
  ASSERT_TRUE(second.is_ok());
  EXPECT_NE(second->find("// [EVOLVE_START]\nno newline\n// [EVOLVE_END]\ntail"),
            std::string::npos);
  // Re-parsing the result finds the new content.
  auto blocks = parse_blocks("k.cu", *second);
  ASSERT_TRUE(blocks.is_ok());
  EXPECT_EQ((*blocks)[1].content, "no newline\n");
  EXPECT_EQ((*blocks)[0].content, "old body\n");
}

TEST(Splice, StripsEchoedMarkers) {
  auto r = splice_block(kKernel, "k.cu", BlockKind::kEvolve, 0,
                        "// [EVOLVE_START]\nfresh\n// [EVOLVE_END]\n");
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_NE(r->find("keep this comment\nfresh\n  // [EVOLVE_END]\nmiddle"), std::string::npos)
      << *r;
  EXPECT_TRUE(parse_blocks("k.cu", *r).is_ok());
}

TEST(Splice, EmptyCodeAndCrlf) {
  auto empty = splice_block(kKernel, "k.cu", BlockKind::kEvolve, 0, "  \n");
  ASSERT_TRUE(empty.is_ok());
  EXPECT_NE(empty->find("comment\n  // [EVOLVE_END]\n"), std::string::npos);

  auto crlf = splice_block("// [EVOLVE_START]\r\nold\r\n// [EVOLVE_END]\r\n", "k.cl",
                           BlockKind::kEvolve, 0, "a\nb\n");
  ASSERT_TRUE(crlf.is_ok());
  EXPECT_EQ(*crlf, "// [EVOLVE_START]\r\na\r\nb\r\n// [EVOLVE_END]\r\n");
}

TEST(Splice, UnknownBlockIsAnError) {
  auto r = splice_block(kKernel, "k.cu", BlockKind::kEvolve, 2, "x");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.message(), "k.cu has no EVOLVE block 2 (it has 2)");
  EXPECT_FALSE(splice_block("// [EVOLVE_START]\n", "k.cu", BlockKind::kEvolve, 0, "x").is_ok());
}

}  // namespace
}  // namespace kf
