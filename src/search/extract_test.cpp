// Tests for code extraction from LLM answers: tiers, precedence, markers, blocks, truncation.
#include "search/extract.h"

#include "search/bare_code.h"

#include <gtest/gtest.h>

namespace kf {
namespace {

Extraction must_extract(std::string_view answer, Language language, size_t blocks = 1) {
  auto r = extract_code(answer, language, blocks);
  EXPECT_TRUE(r.is_ok()) << r.message();
  return r.is_ok() ? *r : Extraction{};
}

TEST(ExtractTest, LanguageTagCaseInsensitive) {
  Extraction e =
      must_extract("Here:\n<CUDA>\n__global__ void k() {}\n</CUDA>\nDone.", Language::kCuda);
  ASSERT_EQ(e.codes.size(), 1u);
  EXPECT_EQ(e.codes[0], "__global__ void k() {}\n");
  EXPECT_EQ(e.method, "tag <cuda>");
  EXPECT_FALSE(e.unterminated);
}

TEST(ExtractTest, TagAliasesPerLanguage) {
  EXPECT_EQ(must_extract("<opencl>__kernel void k(){}</opencl>", Language::kOcl).method,
            "tag <opencl>");
  EXPECT_EQ(must_extract("<ocl>__kernel void k(){}</ocl>", Language::kOcl).method, "tag <ocl>");
  EXPECT_EQ(must_extract("<c++>int f();</c++>", Language::kCpp).method, "tag <c++>");
  EXPECT_EQ(must_extract("<python>import triton</python>", Language::kTriton).method,
            "tag <python>");
  EXPECT_EQ(must_extract("<sycl>q.submit();</sycl>", Language::kSycl).method, "tag <sycl>");
}

TEST(ExtractTest, IncludeIsNotATag) {
  Extraction e = must_extract("```cuda\n#include <cuda_runtime.h>\nint x;\n```", Language::kCuda);
  EXPECT_EQ(e.method, "fence ```cuda");
  EXPECT_EQ(e.codes[0], "#include <cuda_runtime.h>\nint x;\n");
}

TEST(ExtractTest, GenericCodeTagAndFenceInsideTag) {
  Extraction e = must_extract("<code>\n```cpp\nint a = 1;\n```\n</code>", Language::kCpp);
  EXPECT_EQ(e.method, "tag <code>");
  EXPECT_EQ(e.codes[0], "int a = 1;\n");
}

TEST(ExtractTest, LanguageTagBeatsGenericTagAndFences) {
  const char* answer =
      "```cuda\nlong long long fenced code that is longer than the tag;\n```\n"
      "<code>also long generic code block here;</code>\n<cuda>short;</cuda>";
  Extraction e = must_extract(answer, Language::kCuda);
  EXPECT_EQ(e.method, "tag <cuda>");
  EXPECT_EQ(e.codes[0], "short;\n");
}

TEST(ExtractTest, NamedFenceBeatsRelatedAndAnyFence) {
  const char* answer =
      "```\nan anonymous block that is clearly the longest of all of them;\n```\n"
      "```cpp\nhost code that is also rather long;\n```\n"
      "```cu\nkernel();\n```\n";
  Extraction e = must_extract(answer, Language::kCuda);
  EXPECT_EQ(e.method, "fence ```cu");
  EXPECT_EQ(e.codes[0], "kernel();\n");
}

TEST(ExtractTest, RelatedFenceBeatsAnonymous) {
  const char* answer = "```\nthe longest anonymous block here;\n```\n```c\nk();\n```\n";
  Extraction e = must_extract(answer, Language::kOcl);
  EXPECT_EQ(e.method, "fence ```c");
  EXPECT_EQ(e.codes[0], "k();\n");
}

TEST(ExtractTest, AnyFenceWithTildesAndIndentation) {
  Extraction e = must_extract("Code:\n  ~~~\n  int x;\n    int y;\n  ~~~\n", Language::kCpp);
  EXPECT_EQ(e.method, "fence");
  EXPECT_EQ(e.codes[0], "int x;\n  int y;\n");
}

TEST(ExtractTest, LongestBlockOfTheTierWins) {
  const char* answer =
      "First try:\n```cuda\nshort();\n```\nBetter:\n```cuda\nlonger();\nlonger();\n```\n"
      "```cuda\nmid();\n```";
  Extraction e = must_extract(answer, Language::kCuda);
  EXPECT_EQ(e.codes[0], "longer();\nlonger();\n");
}

TEST(ExtractTest, LongerFenceHoldsShorterOne) {
  Extraction e = must_extract("````cpp\nint a;\n```\nint b;\n````\n", Language::kCpp);
  EXPECT_EQ(e.codes[0], "int a;\n```\nint b;\n");
}

TEST(ExtractTest, MarkersStrippedInAnyCommentStyle) {
  const char* answer =
      "```cuda\n// [EVOLVE_START]\n  /* [EVOLVE_END] */\nint a; // [REFERENCE_START]\n"
      "# [USER_INSTRUCTIONS_END]\n<!-- [EVOLVE_START] -->\n/* [EVOLVE_END] */ int b;\nint c;\n```";
  Extraction e = must_extract(answer, Language::kCuda);
  EXPECT_EQ(e.codes[0], "int a;\nint b;\nint c;\n");
}

TEST(ExtractTest, MarkerOnlyBlockIsNoCode) {
  auto r = extract_code("```cuda\n// [EVOLVE_START]\n// [EVOLVE_END]\n```", Language::kCuda);
  EXPECT_FALSE(r.is_ok());
}

TEST(ExtractTest, MultipleBlocksInAnswerOrder) {
  const char* answer =
      "```cuda\nfirst();\n```\ntext\n```cuda\nsecond_is_longer();\n```\n"
      "```cuda\nthird();\n```";
  Extraction e = must_extract(answer, Language::kCuda, 2);
  ASSERT_EQ(e.codes.size(), 2u);
  EXPECT_EQ(e.codes[0], "first();\n");
  EXPECT_EQ(e.codes[1], "second_is_longer();\n");
}

TEST(ExtractTest, BlocksAddressedBySlot) {
  const char* fences = "```cuda block=2\ntwo();\n```\n```cuda block=1\none();\n```\n";
  Extraction e = must_extract(fences, Language::kCuda, 2);
  EXPECT_EQ(e.codes[0], "one();\n");
  EXPECT_EQ(e.codes[1], "two();\n");

  const char* tags = "<cuda block=\"3\">three();</cuda><cuda>first();</cuda><cuda>x();</cuda>";
  e = must_extract(tags, Language::kCuda, 3);
  EXPECT_EQ(e.codes[0], "first();\n");
  EXPECT_EQ(e.codes[1], "x();\n");
  EXPECT_EQ(e.codes[2], "three();\n");
}

TEST(ExtractTest, TooFewBlocksIsAnError) {
  auto r = extract_code("```cuda\nonly();\n```", Language::kCuda, 2);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("2 EVOLVE blocks"), std::string::npos) << r.message();
}

TEST(ExtractTest, UnterminatedFenceTakesTheRest) {
  Extraction e = must_extract("Sure:\n```cuda\n__global__ void k() {\n  int i;\n", Language::kCuda);
  EXPECT_TRUE(e.unterminated);
  EXPECT_EQ(e.codes[0], "__global__ void k() {\n  int i;\n");
}

TEST(ExtractTest, UnterminatedTag) {
  Extraction e = must_extract("<cuda>\nint a;\nint b;", Language::kCuda);
  EXPECT_TRUE(e.unterminated);
  EXPECT_EQ(e.codes[0], "int a;\nint b;\n");
}

TEST(ExtractTest, TagNamedInProseIsNotCode) {
  const char* answer =
      "I will answer in <cuda> tags as asked.\n```cuda\n__global__ void k() {}\n```\n";
  Extraction e = must_extract(answer, Language::kCuda);
  EXPECT_EQ(e.method, "fence ```cuda");
  EXPECT_FALSE(e.unterminated);
}

TEST(ExtractTest, FenceInfoStringVariants) {
  EXPECT_EQ(must_extract("```cuda:kernel.cu\nk();\n```", Language::kCuda).method, "fence ```cuda");
  EXPECT_EQ(must_extract("```{.opencl}\nk();\n```", Language::kOcl).method, "fence ```opencl");
  EXPECT_EQ(must_extract("```Python title=k.py\nk()\n```", Language::kTriton).method,
            "fence ```python");
}

TEST(ExtractTest, HeuristicFindsBareCode) {
  const char* answer =
      "Here is the optimised kernel, using shared memory.\n\n"
      "#include <cuda_runtime.h>\n"
      "__global__ void add(const float* a,\n"
      "                    float* b)\n"
      "{\n"
      "  int i = threadIdx.x;\n"
      "\n"
      "  b[i] += a[i];\n"
      "}\n"
      "\n"
      "This version is faster because it coalesces loads.\n"
      "int x;\n";
  Extraction e = must_extract(answer, Language::kCuda);
  EXPECT_EQ(e.method, "heuristic");
  EXPECT_EQ(e.codes[0],
            "#include <cuda_runtime.h>\n__global__ void add(const float* a,\n"
            "                    float* b)\n{\n  int i = threadIdx.x;\n\n  b[i] += a[i];\n}\n");
}

TEST(ExtractTest, NoCodeErrorNamesTheLanguage) {
  auto r = extract_code("I cannot help with that.", Language::kCuda);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.message(),
            "the answer contains no CUDA code: expected a ```cuda fenced block or "
            "<cuda>...</cuda>");
  r = extract_code("", Language::kOcl);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("no OCL code"), std::string::npos);
  EXPECT_NE(r.message().find("```opencl"), std::string::npos);
}

TEST(ExtractTest, CrlfAnswers) {
  Extraction e = must_extract("```cpp\r\nint a;\r\n```\r\n", Language::kCpp);
  EXPECT_EQ(e.codes[0], "int a;\n");
}

TEST(BareCodeTest, LineClassifier) {
  EXPECT_TRUE(looks_like_code("#include <x.h>", false));
  EXPECT_FALSE(looks_like_code("# Optimised kernel", false));  // a Markdown heading
  EXPECT_FALSE(looks_like_code("Use a semicolon; it works.", false));
  EXPECT_FALSE(looks_like_code("    float* b)", false));
  EXPECT_TRUE(looks_like_code("    float* b)", true));
  EXPECT_TRUE(looks_like_code("__kernel void k(__global float* a)", false));
}

TEST(BareCodeTest, RunsNeedTwoLinesAndAStrongOne) {
  EXPECT_TRUE(find_bare_code("Then {x} is fine.\nprose").empty());
  EXPECT_TRUE(find_bare_code("for (i in list)\nwhile (x)\n").empty());
  auto runs = find_bare_code("int a;\nint b;\nprose here\n\nint c;\n{\n}\n\n");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1], (std::vector<std::string>{"int c;", "{", "}"}));
}

TEST(StripMarkersTest, KeepsOtherLines) {
  EXPECT_EQ(strip_block_markers("a\n// [EVOLVE_START]\nb"), "a\nb");
  EXPECT_EQ(strip_block_markers("x = 1  # [EVOLVE_END]"), "x = 1");
  EXPECT_EQ(strip_block_markers("plain [not a marker]"), "plain [not a marker]");
}

}  // namespace
}  // namespace kf
