// Tests for prompt building: which sections appear for which inputs, the contract view, log
// trimming, feedback summaries, templated kernels and template overrides.
#include "prompt/prompt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "eval/verdict.h"
#include "prompt/fit.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

fs::path source_dir() {
  const char* env = std::getenv("KF_SOURCE_DIR");
  return env ? fs::path(env) : fs::path(KF_TEST_SOURCE_DIR);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool has_section(const Prompt& p, const std::string& name) {
  return std::find(p.sections.begin(), p.sections.end(), name) != p.sections.end();
}

// The text of the user prompt from `heading` ("## Integration contract") to the next "## ".
std::string section_text(const Prompt& p, const std::string& heading) {
  size_t begin = p.user.find(heading);
  if (begin == std::string::npos) return "";
  size_t end = p.user.find("\n## ", begin + heading.size());
  return p.user.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

class PromptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = *make_temp_dir(fs::temp_directory_path(), "kf-prompt-test");
    auto templates = PromptTemplates::load(source_dir() / "configs" / "prompts");
    ASSERT_TRUE(templates.is_ok()) << templates.message();
    templates_ = std::move(*templates);
    softmax_ = load("softmax_ocl");
  }
  void TearDown() override { fs::remove_all(tmp_); }

  TaskPackage load(const std::string& example) {
    auto task = load_task(source_dir() / "examples" / "tasks" / example, tmp_ / "extract");
    EXPECT_TRUE(task.is_ok()) << task.message();
    return task.is_ok() ? *task : TaskPackage();
  }

  PromptInputs inputs(const TaskPackage& task, Language language = Language::kOcl) {
    PromptInputs in;
    in.task = &task;
    in.language = language;
    return in;
  }

  // An earlier attempt that started from `parent_code`, with one error line in its log.
  static PromptAttempt attempt(int verdict, std::string code, std::string parent_code,
                               const std::string& error_line, int trial) {
    PromptAttempt a;
    a.kernel = kernel(verdict, std::move(code));
    a.kernel.eval_log = "verdict: " + std::to_string(verdict) + "\n== build\n" + error_line + "\n";
    a.parent_codes = {std::move(parent_code)};
    a.trial = trial;
    return a;
  }

  static PromptKernel kernel(int verdict, std::string code, std::optional<double> speedup = {}) {
    PromptKernel k;
    k.codes = {std::move(code)};
    k.verdict = verdict;
    k.reason = std::string(verdict_name(verdict));
    k.speedup = speedup;
    return k;
  }

  Prompt build_ok(const PromptInputs& in) {
    auto prompt = build_prompt(templates_, in);
    EXPECT_TRUE(prompt.is_ok()) << prompt.message();
    return prompt.is_ok() ? *prompt : Prompt();
  }

  fs::path tmp_;
  PromptTemplates templates_;
  TaskPackage softmax_;
};

TEST_F(PromptTest, FirstPromptHoldsOnlySectionsWithInputs) {
  Prompt p = build_ok(inputs(softmax_));
  // The sections that are the same on every call of a job come first (a provider's prompt cache
  // reuses them); the objectives and the response format end the prompt.
  std::vector<std::string> expected = {"role",      "contract",     "user_instructions",
                                       "reference", "requirements", "tips",
                                       "pitfalls",  "objectives",   "response_format"};
  EXPECT_EQ(p.sections, expected);
  EXPECT_TRUE(has(p.system, "OpenCL C")) << p.system;
  EXPECT_TRUE(has(p.user, "No kernel has been evaluated yet")) << p.user;
  EXPECT_TRUE(has(p.user, "softmax_reference")) << "the reference is shown";
  EXPECT_FALSE(has(p.user, "{{")) << "no tag survives rendering";
  EXPECT_FALSE(has(p.user, "## Target hardware"));
  EXPECT_FALSE(has(p.user, "## Best kernel so far"));
}

TEST_F(PromptTest, StaticPrefixIsTheSameOnEveryCallAndEndsBeforeTheHistory) {
  PromptInputs first = inputs(softmax_);
  first.trial = 1;
  first.max_iters = 5;
  Prompt a = build_ok(first);
  PromptInputs later = inputs(softmax_);
  later.trial = 4;
  later.max_iters = 5;
  later.parent = kernel(1, "__kernel void broken( {}");
  later.best = kernel(5, "__kernel void best() {}", 1.5);
  Prompt b = build_ok(later);
  ASSERT_GT(a.static_user_chars, 0u);
  EXPECT_EQ(a.static_user_chars, b.static_user_chars);
  EXPECT_EQ(a.user.substr(0, a.static_user_chars), b.user.substr(0, b.static_user_chars));
  const std::string prefix = b.user.substr(0, b.static_user_chars);
  EXPECT_TRUE(has(prefix, "softmax_reference")) << "the reference is in the prefix";
  EXPECT_FALSE(has(prefix, "## Objectives")) << prefix;
  EXPECT_FALSE(has(prefix, "broken")) << "the parent follows the prefix";
  EXPECT_TRUE(has(b.user.substr(b.static_user_chars), "broken"));
  EXPECT_EQ(prefix.substr(prefix.size() - 2), "\n\n") << "the prefix ends at a section break";
}

TEST_F(PromptTest, EachOptionalSectionAppearsWithItsInputs) {
  PromptInputs in = inputs(softmax_);
  in.archs = {*find_arch("h200"), *find_arch("lnl")};
  in.parent = kernel(kCorrect, "__kernel void softmax() { /* parent */ }\n", 1.2);
  in.best = kernel(kCorrect, "__kernel void softmax() { /* best */ }\n", 2.5);
  in.inspirations = {kernel(kWrongValues, "__kernel void softmax() { /* other */ }\n")};
  in.include_reference = false;
  Prompt p = build_ok(in);
  for (const char* name : {"hardware", "inspirations", "best", "parent"})
    EXPECT_TRUE(has_section(p, name)) << name;
  EXPECT_FALSE(has_section(p, "reference"));
  EXPECT_FALSE(has(p.user, "softmax_reference"));
  EXPECT_TRUE(has(p.user, describe_arch(*find_arch("h200"))));
  EXPECT_TRUE(has(p.user, "geometric mean")) << "several archs are explained";
  EXPECT_TRUE(has(section_text(p, "## Best kernel so far"), "/* best */"));
  EXPECT_TRUE(has(section_text(p, "## Best kernel so far"), "speedup 2.500x"));
  EXPECT_TRUE(has(section_text(p, "## Current kernel"), "/* parent */"));
  EXPECT_TRUE(has(p.user, "the best kernel so far reaches 2.500x"));
}

TEST_F(PromptTest, BestIsLeftOutWhenItIsTheParent) {
  PromptInputs in = inputs(softmax_);
  in.parent = kernel(kCorrect, "same\n", 1.5);
  in.best = in.parent;
  Prompt p = build_ok(in);
  EXPECT_FALSE(has_section(p, "best"));
  EXPECT_TRUE(has(section_text(p, "## Current kernel"), "also the best kernel found so far"));
}

TEST_F(PromptTest, UserInstructionsAreVerbatim) {
  std::string instructions = softmax_.user_instructions();
  ASSERT_FALSE(instructions.empty());
  Prompt p = build_ok(inputs(softmax_));
  EXPECT_TRUE(has(section_text(p, "## Instructions from the task author"), instructions));
}

TEST_F(PromptTest, ContractShowsSurroundingCodeWithoutTheBlock) {
  PromptInputs in = inputs(softmax_);
  in.parent = kernel(kCompileError, "broken\n");
  Prompt p = build_ok(in);
  std::string contract = section_text(p, "## Integration contract");
  EXPECT_TRUE(has(contract, "File `softmax.cl`:")) << contract;
  EXPECT_TRUE(has(contract, "Launch contract (fixed by task.cpp; keep it)")) << contract;
  EXPECT_TRUE(has(contract, "// [EVOLVE block 1 (softmax.cl): your code goes here")) << contract;
  EXPECT_TRUE(has(contract, "// [USER_INSTRUCTIONS block: shown in")) << contract;
  EXPECT_FALSE(has(contract, "[EVOLVE_START]")) << contract;
  EXPECT_FALSE(has(contract, "Naive version")) << contract;
  EXPECT_FALSE(has(p.user, "Naive version")) << "the old block is not shown once a parent exists";
}

TEST_F(PromptTest, ContractOfSeveralBlocksShowsHeadersAndNumbersBlocks) {
  fs::path dir = tmp_ / "two_blocks";
  ASSERT_TRUE(make_dirs(dir).is_ok());
  ASSERT_TRUE(
      write_file(dir / "config.yaml", "task_name: t\njob_name: j\nlanguage: CUDA\n").is_ok());
  ASSERT_TRUE(write_file(dir / "k.h", "void run_k(float* y, int n);\n").is_ok());
  ASSERT_TRUE(write_file(dir / "k.cu",
                         "#include \"k.h\"\n"
                         "// [EVOLVE_START]\n__global__ void first_old() {}\n// [EVOLVE_END]\n"
                         "static int keep_me = 3;\n"
                         "  // [EVOLVE_START]\n  void second_old() {}\n  // [EVOLVE_END]\n")
                  .is_ok());
  ASSERT_TRUE(write_file(dir / "task.cpp", "int main() {}\n").is_ok());
  auto task = load_task(dir, tmp_ / "extract");
  ASSERT_TRUE(task.is_ok()) << task.message();
  PromptInputs in = inputs(*task, Language::kCuda);
  in.parent = kernel(kCorrect, "a\n", 1.0);
  in.parent->codes.push_back("b\n");
  Prompt p = build_ok(in);
  std::string contract = section_text(p, "## Integration contract");
  EXPECT_TRUE(has(contract, "// [EVOLVE block 1 (k.cu)")) << contract;
  EXPECT_TRUE(has(contract, "  // [EVOLVE block 2 (k.cu)")) << contract;
  EXPECT_TRUE(has(contract, "static int keep_me = 3;")) << contract;
  EXPECT_TRUE(has(contract, "Header `k.h` (included by `k.cu`)")) << contract;
  EXPECT_TRUE(has(contract, "void run_k(float* y, int n);")) << contract;
  EXPECT_FALSE(has(contract, "_old")) << contract;
  std::string format = section_text(p, "## Response format");
  EXPECT_TRUE(has(format, "exactly 2 fenced code blocks")) << format;
  EXPECT_TRUE(has(format, "2. EVOLVE block 2 (k.cu)")) << format;
  EXPECT_TRUE(has(format, "```cuda")) << format;
  EXPECT_TRUE(has(section_text(p, "## Current kernel"), "EVOLVE block 2 (k.cu):\n```cuda\nb\n```"));
}

TEST_F(PromptTest, ObjectivesFollowTheParentsVerdict) {
  PromptInputs in = inputs(softmax_);
  std::vector<std::string> seen = {section_text(build_ok(in), "## Objectives")};
  const char* expected[] = {"no code was found",      "does not compile", "fails when it runs",
                            "expected shape or size", "wrong values",     "Make it faster"};
  for (int v = kNoCode; v <= kCorrect; ++v) {
    in.parent =
        kernel(v, v == kNoCode ? "" : "code\n", v == kCorrect ? std::optional(1.1) : std::nullopt);
    std::string objectives = section_text(build_ok(in), "## Objectives");
    EXPECT_TRUE(has(objectives, expected[v])) << v << ": " << objectives;
    EXPECT_EQ(std::count(seen.begin(), seen.end(), objectives), 0) << v;
    seen.push_back(objectives);
  }
  in.parent = kernel(9, "code\n");
  auto bad = build_prompt(templates_, in);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(has(bad.message(), "verdict 9")) << bad.message();
}

TEST_F(PromptTest, IterationIsShownWhenKnown) {
  PromptInputs in = inputs(softmax_);
  in.trial = 3;
  in.max_iters = 10;
  EXPECT_TRUE(has(build_ok(in).user, "## Objectives (iteration 3 of 10)"));
}

TEST(TrimLog, KeepsErrorLinesAndRespectsTheCap) {
  std::string log = "verdict: 1 (compile error): build failed\n";
  for (int i = 0; i < 300; ++i) log += "note " + std::to_string(i) + std::string(40, '.') + "\n";
  log += "k.cl:12:3: error: use of undeclared identifier 'foo'\n      ^\n";
  for (int i = 0; i < 300; ++i) log += "tail " + std::to_string(i) + std::string(40, '.') + "\n";
  for (size_t cap : {200u, 1000u, 3000u}) {
    std::string out = trim_log_for_prompt(log, cap);
    EXPECT_LE(out.size(), cap);
    EXPECT_TRUE(has(out, "error: use of undeclared identifier 'foo'")) << out;
    EXPECT_TRUE(has(out, "verdict: 1 (compile error)")) << out;
    EXPECT_TRUE(has(out, " lines omitted ...]")) << out;
  }
  std::string wide = trim_log_for_prompt(log, 3000);
  EXPECT_TRUE(has(wide, "note 0.")) << "the head fills remaining room";
  EXPECT_TRUE(has(wide, "tail 299.")) << "and the tail";
  EXPECT_EQ(trim_log_for_prompt("short log\n", 100), "short log\n");
}

TEST_F(PromptTest, ParentLogIsTrimmedIntoThePrompt) {
  PromptInputs in = inputs(softmax_);
  in.max_log_chars = 500;
  in.parent = kernel(kCompileError, "x\n");
  for (int i = 0; i < 100; ++i) in.parent->eval_log += "build line " + std::to_string(i) + "\n";
  in.parent->eval_log += "softmax.cl:3:1: error: expected ';'\n";
  std::string parent = section_text(build_ok(in), "## Current kernel");
  EXPECT_TRUE(has(parent, "### Its evaluation log")) << parent;
  EXPECT_TRUE(has(parent, "softmax.cl:3:1: error: expected ';'")) << parent;
  EXPECT_FALSE(has(parent, "build line 50\n")) << parent;
}

TEST_F(PromptTest, FeedbackSummaryReplacesTheLogAndIsLabelled) {
  PromptInputs in = inputs(softmax_);
  in.parent = kernel(kCompileError, "x\n");
  in.parent->eval_log = "RAW LOG LINE: error: something\n";
  Prompt raw = build_ok(in);
  EXPECT_TRUE(has(raw.user, "RAW LOG LINE"));
  EXPECT_FALSE(has(raw.user, "feedback model"));

  in.parent->feedback = "SUMMARY: line 3 uses an undeclared name.";
  std::string parent = section_text(build_ok(in), "## Current kernel");
  EXPECT_TRUE(has(parent, "SUMMARY: line 3 uses an undeclared name.")) << parent;
  EXPECT_TRUE(has(parent, "Summary of its evaluation (written by the feedback model")) << parent;
  EXPECT_FALSE(has(parent, "RAW LOG LINE")) << parent;
  EXPECT_FALSE(has(parent, "### Its evaluation log")) << parent;
}

TEST_F(PromptTest, TemplatedSectionOnlyWhenAllowed) {
  TaskPackage matmul = load("matmul_cuda");
  PromptInputs in = inputs(matmul, Language::kCuda);
  Prompt plain = build_ok(in);
  EXPECT_FALSE(has_section(plain, "templated"));
  EXPECT_FALSE(has(plain.user, "forward_templated"));

  in.allow_templated = true;
  Prompt templated = build_ok(in);
  EXPECT_TRUE(has_section(templated, "templated"));
  std::string section = section_text(templated, "## Templated kernels");
  EXPECT_TRUE(has(section, "template <int kThreads, int kItems>")) << section;
  EXPECT_TRUE(has(section, "return forward_templated<128, 4>(x, y, alpha, n);")) << section;

  PromptInputs ocl = inputs(softmax_);
  ocl.allow_templated = true;
  auto refused = build_prompt(templates_, ocl);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_TRUE(has(refused.message(), "Must provide example if allow_templated=True"));
}

// prompt.parametrize_best (issue 11, item 4): a correct parent that is not templated gets the
// parametrise objectives; a templated one, or a wrong one, the usual ones; off, never.
TEST_F(PromptTest, ParametrizeBestAsksForATemplatedVersionOfACorrectKernel) {
  TaskPackage matmul = load("matmul_cuda");
  PromptInputs in = inputs(matmul, Language::kCuda);
  in.allow_templated = true;
  in.parametrize_best = true;
  in.parent = kernel(kCorrect, "// THE BEST KERNEL\n", 2.0);
  Prompt ask = build_ok(in);
  std::string objectives = section_text(ask, "## Objectives");
  EXPECT_TRUE(has(objectives, "parametrises it")) << objectives;
  EXPECT_TRUE(has(objectives, "the value the current kernel uses")) << objectives;
  EXPECT_TRUE(has_section(ask, "templated"));

  PromptKernel templated = kernel(kCorrect, "// ALREADY TEMPLATED\n", 2.5);
  templated.templates = "- tile=16: verdict 5, 2.50x (chosen)";
  in.parent = templated;
  EXPECT_FALSE(has(section_text(build_ok(in), "## Objectives"), "parametrises it"));

  in.parent = kernel(kWrongValues, "// WRONG\n");
  EXPECT_FALSE(has(section_text(build_ok(in), "## Objectives"), "parametrises it"));

  in.parent = kernel(kCorrect, "// THE BEST KERNEL\n", 2.0);
  in.parametrize_best = false;
  EXPECT_FALSE(has(section_text(build_ok(in), "## Objectives"), "parametrises it"));
}

TEST_F(PromptTest, InspirationsCarryTheirResults) {
  PromptInputs in = inputs(softmax_);
  PromptKernel fast = kernel(kCorrect, "// INSPIRATION ONE\n", 1.5);
  fast.cell = "m1-c0-p2";
  fast.model = "model-a";
  PromptKernel broken = kernel(kCompileError, "// INSPIRATION TWO\n");
  broken.reason = "softmax.cl:4: error: expected ')'";
  broken.cell = "m0-c2-p1";
  in.inspirations = {fast, broken};
  std::string section = section_text(build_ok(in), "## Inspirations");
  EXPECT_TRUE(has(section, "(2)")) << section;
  EXPECT_TRUE(has(section, "### Inspiration 1 (archive cell m1-c0-p2)")) << section;
  EXPECT_TRUE(
      has(section, "Result: correct, speedup 1.500x over the reference (written by model-a)"))
      << section;
  EXPECT_TRUE(has(section, "// INSPIRATION ONE")) << section;
  EXPECT_TRUE(has(section, "### Inspiration 2 (archive cell m0-c2-p1)")) << section;
  EXPECT_TRUE(has(section, "Result: compile error.")) << section;
  EXPECT_TRUE(has(section, "Evaluation: softmax.cl:4: error: expected ')'")) << section;
  EXPECT_TRUE(has(section, "// INSPIRATION TWO")) << section;
}

TEST_F(PromptTest, FeedbackPromptAsksForFixesOrBottlenecks) {
  PromptInputs in = inputs(softmax_);
  PromptKernel failed = kernel(kCompileError, "bad code\n");
  failed.eval_log = "softmax.cl:9:2: error: unknown type name 'flaot'\n";
  auto p = build_feedback_prompt(templates_, in, failed);
  ASSERT_TRUE(p.is_ok()) << p.message();
  EXPECT_EQ(p->sections, (std::vector<std::string>{"feedback_system", "feedback_user"}));
  EXPECT_TRUE(has(p->system, "evaluation logs")) << p->system;
  EXPECT_TRUE(has(p->user, "The offending lines")) << p->user;
  EXPECT_TRUE(has(p->user, "unknown type name 'flaot'")) << p->user;
  EXPECT_TRUE(has(p->user, "bad code")) << p->user;
  EXPECT_FALSE(has(p->user, "The bottlenecks")) << p->user;

  PromptKernel good = kernel(kCorrect, "good code\n", 1.3);
  good.eval_log = "geometric-mean speedup: 1.300x\n";
  auto q = build_feedback_prompt(templates_, in, good);
  ASSERT_TRUE(q.is_ok()) << q.message();
  EXPECT_TRUE(has(q->user, "The bottlenecks")) << q->user;
  EXPECT_FALSE(has(q->user, "The offending lines")) << q->user;
}

TEST_F(PromptTest, GuidanceVariantReplacesTheTipsAndMetaPromptShowsVariants) {
  PromptInputs in = inputs(softmax_);
  auto shipped = render_guidance(templates_, in);
  ASSERT_TRUE(shipped.is_ok()) << shipped.message();
  EXPECT_TRUE(has(*shipped, "## Optimisation tips (OpenCL)")) << *shipped;
  EXPECT_TRUE(has(build_ok(in).user, *shipped)) << "the shipped guidance is the tips section";

  in.guidance = "## Optimisation tips (OpenCL)\n\n- EVOLVED-TIP: use vload16.";
  Prompt p = build_ok(in);
  EXPECT_TRUE(has(p.user, "EVOLVED-TIP")) << p.user;
  EXPECT_FALSE(has(p.user, "Coalesce: neighbouring work-items")) << p.user;
  EXPECT_EQ(std::count(p.sections.begin(), p.sections.end(), "tips"), 1);

  MetaPromptRequest request;
  request.variants = "### Variant 1 (the shipped guidance; score no children yet)";
  request.outcomes = "- iteration 1, branch 0, variant 1: compile error";
  request.max_chars = 3000;
  auto meta = build_meta_prompt(templates_, inputs(softmax_), request);
  ASSERT_TRUE(meta.is_ok()) << meta.message();
  EXPECT_EQ(meta->sections, (std::vector<std::string>{"meta_system", "meta_user"}));
  EXPECT_TRUE(has(meta->system, "optimisation guidance")) << meta->system;
  EXPECT_TRUE(has(meta->user, request.variants)) << meta->user;
  EXPECT_TRUE(has(meta->user, request.outcomes)) << meta->user;
  EXPECT_TRUE(has(meta->user, "at most 3000 characters")) << meta->user;
  EXPECT_FALSE(has(meta->user, "(none yet)")) << meta->user;
}

// A kernel of about `bytes` characters in lines of ~110: "// <tag> head", filler, "// <tag> tail".
std::string big_code(const std::string& tag, size_t bytes) {
  std::string code = "// " + tag + " head\n";
  std::string line = "  acc += x[i] * w[i]; // " + tag + " " + std::string(80, '.') + "\n";
  while (code.size() + line.size() < bytes) code += line;
  return code + "// " + tag + " tail\n";
}

size_t prompt_size(const Prompt& p) {
  return p.system.size() + p.user.size();
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(CutMiddle, KeepsHeadAndTailOnLineEndsAndCountsTheCut) {
  std::string text;
  for (int i = 0; i < 100; ++i)
    text += strprintf("line %03d %s\n", i, std::string(40, 'x').c_str());
  EXPECT_EQ(cut_middle(text, text.size(), "//"), text);
  std::string out = cut_middle(text, 1000, "//");
  EXPECT_LE(out.size(), 1000u);
  EXPECT_TRUE(starts_with(out, "line 000 ")) << out;
  EXPECT_TRUE(ends_with(out, "line 099 " + std::string(40, 'x') + "\n")) << out;
  size_t at = out.find("// [... ");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_EQ(out[at - 1], '\n') << "the marker is a line of its own";
  size_t chars = 0, lines = 0;
  ASSERT_EQ(
      std::sscanf(out.c_str() + at, "// [... %zu characters (%zu lines) cut here", &chars, &lines),
      2)
      << out;
  size_t marker = out.find('\n', at) + 1 - at;
  EXPECT_EQ(out.size() - marker + chars, text.size()) << "the count is what is missing";
  EXPECT_EQ(lines * 50, chars) << "whole lines were cut";
  // One 3 MB line of two-byte characters: cut by size, never inside a character.
  std::string wide;
  for (int i = 0; i < 1500000; ++i) wide += "\xc3\xa9";
  std::string cut = cut_middle(wide, 5000, "#");
  EXPECT_LE(cut.size(), 5000u);
  EXPECT_TRUE(is_valid_utf8(cut));
  EXPECT_TRUE(has(cut, "\n# [... ")) << cut.substr(0, 3000);
}

TEST_F(PromptTest, NormalPromptsOfTheExamplesAreNotTrimmed) {
  const std::pair<const char*, Language> examples[] = {{"softmax_ocl", Language::kOcl},
                                                       {"softmax_cuda", Language::kCuda},
                                                       {"matmul_cuda", Language::kCuda},
                                                       {"reduction_cpp", Language::kCpp},
                                                       {"box_blur_cpp", Language::kCpp}};
  for (const auto& [example, language] : examples) {
    TaskPackage task = load(example);
    PromptInputs in = inputs(task, language);
    EXPECT_EQ(in.max_chars, 200000u) << "the default of prompt.max_chars";
    in.archs = {*find_arch("h200")};
    in.parent = kernel(kCompileError, big_code("parent", 8000));
    for (int i = 0; i < 500; ++i) in.parent->eval_log += "build line " + std::to_string(i) + "\n";
    in.best = kernel(kCorrect, big_code("best", 8000), 1.5);
    in.inspirations = {kernel(kCorrect, big_code("one", 8000), 1.2),
                       kernel(kWrongValues, big_code("two", 8000))};
    PromptInputs unbounded = in;
    unbounded.max_chars = size_t{1} << 40;
    Prompt p = build_ok(in);
    EXPECT_EQ(p.user, build_ok(unbounded).user) << example;
    EXPECT_FALSE(has_section(p, "trimmed")) << example;
    EXPECT_FALSE(has(p.user, "cut here")) << example;
    EXPECT_TRUE(has(section_text(p, "## Current kernel"), in.parent->codes[0])) << example;
    EXPECT_EQ(count_of(p.user, "### Inspiration "), 2u) << example;
  }
}

TEST_F(PromptTest, HugeParentAndInspirationsAreCutToMaxChars) {
  PromptInputs normal = inputs(softmax_);
  normal.parent = kernel(kCorrect, "__kernel void softmax() {}\n", 1.1);
  normal.best = kernel(kCorrect, "__kernel void softmax() { /* best */ }\n", 2.0);
  Prompt plain = build_ok(normal);

  PromptInputs in = inputs(softmax_);
  in.parent = kernel(kCorrect, big_code("parent", 3000000), 1.1);  // the 3 MB request of issue 7
  for (int i = 0; i < 100000; ++i) in.parent->eval_log += "timing line " + std::to_string(i) + "\n";
  in.best = kernel(kCorrect, big_code("best", 1000000), 2.0);
  in.inspirations = {kernel(kCorrect, big_code("one", 1000000), 1.5),
                     kernel(kCorrect, big_code("two", 1000000), 1.2)};
  Prompt p = build_ok(in);
  EXPECT_LE(prompt_size(p), in.max_chars);
  EXPECT_TRUE(has_section(p, "trimmed"));
  std::string note = section_text(p, "## Note: this prompt was shortened");
  EXPECT_TRUE(has(note, "longer than its limit of 200000 characters (prompt.max_chars)")) << note;
  EXPECT_TRUE(has(note, "- the current kernel's code: cut in the middle from " +
                            std::to_string(in.parent->codes[0].size()) + " to "))
      << note;
  EXPECT_TRUE(has(note, "- inspirations: 1 of 2 left out")) << note;
  EXPECT_TRUE(has(note, "never copy a marker line")) << note;

  // Inspirations go first: one is dropped while the parent keeps its whole share (a quarter).
  EXPECT_EQ(count_of(p.user, "### Inspiration "), 1u);
  EXPECT_FALSE(has(p.user, "// two head"));
  std::string parent = section_text(p, "## Current kernel");
  EXPECT_GT(parent.size(), in.max_chars / 4 - 1000) << "the parent was not cut below its share";
  EXPECT_LT(parent.size(), in.max_chars / 4 + in.max_log_chars + 2000);
  EXPECT_TRUE(has(parent, "// parent head\n")) << "the head of the code stays";
  EXPECT_TRUE(has(parent, "// parent tail\n")) << "and the tail";
  EXPECT_EQ(count_of(parent, "// [... "), 1u);

  // What is never cut.
  for (const char* heading : {"## Integration contract", "## Instructions from the task author",
                              "## Objectives", "## Response format"})
    EXPECT_EQ(section_text(p, heading), section_text(plain, heading)) << heading;
  EXPECT_EQ(p.system, plain.system);
}

TEST_F(PromptTest, PartsAreCutInTheDocumentedOrder) {
  // Every part well under a quarter of the smallest limit tried, so only the order cuts them.
  PromptInputs in = inputs(softmax_);
  in.parent = kernel(kCompileError, big_code("parent", 2300));
  for (int i = 0; i < 150; ++i) in.parent->eval_log += "build line " + std::to_string(i) + "\n";
  in.best = kernel(kCorrect, big_code("best", 2300), 2.0);
  in.inspirations = {kernel(kCorrect, big_code("one", 2300), 1.5),
                     kernel(kCorrect, big_code("two", 2300), 1.2)};
  for (int i = 0; i < 2; ++i)
    in.attempts.push_back(attempt(kCompileError, big_code("attempt", 1000), in.parent->codes[0],
                                  "k.cl:3:1: error: attempt " + std::to_string(i), i + 1));
  in.max_attempts_chars = 1500;
  const std::vector<std::string> order = {"- inspirations:",
                                          "- the best kernel",
                                          "- earlier attempts:",
                                          "- the current kernel's evaluation log",
                                          "- the reference implementation",
                                          "- the current kernel's code"};
  std::set<std::string> seen;
  for (size_t max = 30000; max >= 9600; max -= 200) {
    in.max_chars = max;
    Prompt p = build_ok(in);
    ASSERT_LE(prompt_size(p), max);
    std::string note = section_text(p, "## Note: this prompt was shortened");
    // A step is taken only when every earlier step's part is gone (or, for the log, cut).
    size_t inspirations = count_of(p.user, "### Inspiration ");
    bool best = has_section(p, "best");
    bool attempts = has_section(p, "attempts");
    bool log = has(p.user, "### Its evaluation log");
    bool reference = has_section(p, "reference");
    bool parent_cut = has(section_text(p, "## Current kernel"), "cut here");
    if (!best) {
      EXPECT_EQ(inspirations, 0u) << max;
    }
    if (attempts) {
      EXPECT_LE(section_text(p, "## Earlier attempts").size(), in.max_attempts_chars) << max;
    }
    if (has(note, "earlier attempts")) {
      EXPECT_FALSE(best) << max;
    }
    if (has(note, "evaluation log")) {
      EXPECT_FALSE(best) << max;
      EXPECT_FALSE(attempts) << max;
    }
    if (!reference) {
      EXPECT_FALSE(log) << max;
    }
    if (parent_cut) {
      EXPECT_FALSE(reference) << max;
    }
    EXPECT_EQ(has_section(p, "trimmed"), inspirations < 2) << max;
    // The note lists its items in the order cut.
    size_t last = 0;
    for (const auto& item : order) {
      size_t at = note.find(item);
      if (at == std::string::npos) continue;
      EXPECT_GE(at, last) << item << " at " << max << ":\n" << note;
      last = at;
      seen.insert(item);
    }
    EXPECT_TRUE(has(p.user, "## Response format")) << max;
  }
  EXPECT_EQ(seen.size(), order.size())
      << "every step was reached in the sweep: "
      << join(std::vector<std::string>(seen.begin(), seen.end()), "; ");
}

TEST_F(PromptTest, EarlierAttemptsShowVerdictErrorAndWhatChanged) {
  PromptInputs in = inputs(softmax_);
  const std::string parent_code = "__kernel void softmax() {\n  float m = 0;\n  y[0] = m;\n}\n";
  in.parent = kernel(kCorrect, parent_code, 1.0);
  in.parent->eval_log = "verdict: 5 (correct)\n";
  PromptAttempt a =
      attempt(kCompileError, replace_all(parent_code, "y[0] = m;", "y[0] = maximum;"), parent_code,
              "/tmp/w/t01_b00/softmax.cl:3:10: error: use of undeclared identifier "
              "'maximum'",
              1);
  a.summary = "Store the maximum directly.";
  a.kernel.model = "model-a";
  in.attempts = {a};
  Prompt p = build_ok(in);
  ASSERT_TRUE(has_section(p, "attempts")) << p.user;
  std::string section = section_text(p, "## Earlier attempts");
  EXPECT_TRUE(has(section, "### Attempt 1 (iteration 1): compile error")) << section;
  EXPECT_TRUE(has(section, "Started from the current kernel; written by model-a.")) << section;
  EXPECT_TRUE(has(section, "Its answer said: Store the maximum directly.")) << section;
  EXPECT_TRUE(has(section, "```diff\n@@ -1,4 +1,4 @@")) << section;
  EXPECT_TRUE(has(section, "\n-  y[0] = m;\n+  y[0] = maximum;\n")) << section;
  EXPECT_TRUE(has(section, "error: use of undeclared identifier 'maximum'")) << section;
  EXPECT_FALSE(has(section, "same mistake")) << "one failure is not a repeat";
  // After the current kernel, before the objectives.
  EXPECT_LT(p.user.find("## Current kernel"), p.user.find("## Earlier attempts"));
  EXPECT_LT(p.user.find("## Earlier attempts"), p.user.find("## Objectives"));

  // Switched off: no section.
  in.max_attempts_chars = 0;
  EXPECT_FALSE(has_section(build_ok(in), "attempts"));
}

TEST_F(PromptTest, TheSameMistakeTwiceIsNamed) {
  PromptInputs in = inputs(softmax_);
  in.parent = kernel(kCorrect, "int a;\n", 1.0);
  in.attempts = {
      attempt(kCompileError, "int b;\n", "int a;\n",
              "/w/t02_b00/softmax.cl:9:3: error: use of undeclared identifier 'maximum'", 2),
      attempt(kWrongValues, "int c;\n", "int a;\n", "", 1),
      attempt(kCompileError, "int d;\n", "int a;\n",
              "/w/t01_b00/softmax.cl:7:5: error: use of undeclared identifier 'maximum'", 1)};
  in.attempts[1].kernel.reason = "output 'y': 12 of 100 elements outside tolerance";
  Prompt p = build_ok(in);
  std::string section = section_text(p, "## Earlier attempts");
  EXPECT_TRUE(has(section, "The same mistake was made more than once")) << section;
  EXPECT_TRUE(has(section,
                  "- 2 times (iteration 2, iteration 1): `/w/t02_b00/softmax.cl:9:3: "
                  "error: use of undeclared identifier 'maximum'`"))
      << section;
  EXPECT_TRUE(has(section, "### Attempt 1 (iteration 2): compile error, a repeated mistake"));
  EXPECT_TRUE(has(section, "### Attempt 2 (iteration 1): wrong values\n")) << section;
  EXPECT_TRUE(has(section, "### Attempt 3 (iteration 1): compile error, a repeated mistake"));

  // A failed current kernel counts too.
  in.parent = kernel(kWrongValues, "int a;\n");
  in.parent->reason = "output 'y': 99 of 100 elements outside tolerance";
  section = section_text(build_ok(in), "## Earlier attempts");
  EXPECT_TRUE(has(section, "(iteration 1, the current kernel): `output 'y': 12 of 100")) << section;
}

TEST_F(PromptTest, EarlierAttemptsFitTheirBudgetAndShowSummariesInsteadOfLogs) {
  PromptInputs in = inputs(softmax_);
  in.parent = kernel(kCorrect, big_code("parent", 20000), 1.0);
  for (int t = 4; t >= 1; --t) {
    PromptAttempt a =
        attempt(kCompileError, big_code("child" + std::to_string(t), 20000), in.parent->codes[0],
                "k.cl:1:1: error: number " + std::to_string(t), t);
    for (int i = 0; i < 2000; ++i) a.kernel.eval_log += "note line " + std::to_string(i) + "\n";
    in.attempts.push_back(a);
  }
  in.attempts[0].kernel.feedback = "SUMMARY: the fourth attempt forgot a semicolon.";
  in.max_attempts_chars = 6000;
  Prompt p = build_ok(in);
  std::string section = section_text(p, "## Earlier attempts");
  EXPECT_LE(section.size(), 6000u);
  EXPECT_GE(count_of(section, "### Attempt "), 1u);
  EXPECT_TRUE(has(section, "more diff lines")) << section;
  EXPECT_TRUE(has(section, "SUMMARY: the fourth attempt forgot a semicolon.")) << section;
  EXPECT_TRUE(has(section, "written by the feedback model")) << section;
  EXPECT_TRUE(has(section, "error: number 4")) << "the log's error line survives the cut";
  if (count_of(section, "### Attempt ") < 4) {
    EXPECT_TRUE(has(section, " of 4)")) << "the heading says how many there were";
  }
}

TEST(MistakeKey, NumbersAndPathsDoNotMakeADifferentMistake) {
  EXPECT_EQ(
      mistake_key("/tmp/a/t01_b00/softmax.cl:7:5: error: use of undeclared identifier 'x'"),
      mistake_key("/tmp/b/t02_b01/softmax.cl:12:3:  error: use of undeclared identifier 'x'"));
  EXPECT_NE(mistake_key("error: use of undeclared identifier 'x'"),
            mistake_key("error: use of undeclared identifier 'y'"));
  EXPECT_EQ(first_error_line(kCompileError, "build failed",
                             "verdict: 1 (compile error): build failed\n== build\nIn file "
                             "included\nk.cl:3:1: error: expected ';'\nk.cl:4:1: error: more\n"),
            "k.cl:3:1: error: expected ';'");
  EXPECT_EQ(first_error_line(kWrongValues, "output 'y' wrong\nmore", "verdict: 4\n"),
            "output 'y' wrong");
  EXPECT_EQ(first_error_line(kCorrect, "", "error: nothing"), "");
}

TEST_F(PromptTest, FixedPartsLongerThanMaxCharsAreAnError) {
  PromptInputs in = inputs(softmax_);
  in.parent = kernel(kCorrect, big_code("parent", 3000000), 1.1);
  in.max_chars = 5000;
  auto p = build_prompt(templates_, in);
  ASSERT_FALSE(p.is_ok());
  EXPECT_TRUE(has(p.message(), "more than prompt.max_chars = 5000")) << p.message();
  EXPECT_TRUE(has(p.message(), "contract ")) << p.message();
  EXPECT_TRUE(has(p.message(), "raise prompt.max_chars above ")) << p.message();
}

TEST_F(PromptTest, OneHugeLineOfMultiByteCharactersIsCutCleanly) {
  PromptInputs in = inputs(softmax_);
  std::string line;
  for (int i = 0; i < 1500000; ++i) line += "\xc3\xa9";  // 3 MB, no newline
  in.parent = kernel(kCorrect, line, 1.0);
  Prompt p = build_ok(in);
  EXPECT_LE(prompt_size(p), in.max_chars);
  EXPECT_TRUE(is_valid_utf8(p.user));
  EXPECT_TRUE(has(section_text(p, "## Current kernel"), "\n// [... ")) << "the marker line";
}

TEST_F(PromptTest, FeedbackPromptIsCutToMaxChars) {
  PromptInputs in = inputs(softmax_);
  PromptKernel k = kernel(kCompileError, big_code("huge", 3000000));
  for (int i = 0; i < 2000; ++i) k.eval_log += "build line " + std::to_string(i) + "\n";
  k.eval_log += "softmax.cl:9:2: error: unknown type name 'flaot'\n";
  in.max_chars = 20000;
  auto p = build_feedback_prompt(templates_, in, k);
  ASSERT_TRUE(p.is_ok()) << p.message();
  EXPECT_LE(p->system.size() + p->user.size(), 20000u);
  EXPECT_TRUE(has(p->user, "unknown type name 'flaot'")) << "the log's error line stays";
  EXPECT_TRUE(has(p->user, "// huge head")) << p->user.substr(0, 2000);
  EXPECT_TRUE(has(p->user, "- the kernel's code: cut in the middle from " +
                               std::to_string(k.codes[0].size()) + " to "))
      << p->user;
}

class TemplateDirTest : public PromptTest {
 protected:
  fs::path shipped() const { return source_dir() / "configs" / "prompts"; }
  fs::path override_dir() {
    fs::path dir = tmp_ / "my_prompts";
    EXPECT_TRUE(make_dirs(dir).is_ok());
    return dir;
  }
};

TEST_F(TemplateDirTest, OverrideReplacesOneFile) {
  fs::path dir = override_dir();
  ASSERT_TRUE(
      write_file(dir / "tips_ocl.md", "## My own tips\nWrite good {{language}}.\n").is_ok());
  auto loaded = PromptTemplates::load(shipped(), dir);
  ASSERT_TRUE(loaded.is_ok()) << loaded.message();
  EXPECT_EQ(loaded->source("tips_ocl"), dir / "tips_ocl.md");
  EXPECT_EQ(loaded->source("pitfalls_ocl"), shipped() / "pitfalls_ocl.md");
  EXPECT_EQ(*loaded->find("role"), *templates_.find("role"));

  auto p = build_prompt(*loaded, inputs(softmax_));
  ASSERT_TRUE(p.is_ok()) << p.message();
  EXPECT_TRUE(has(p->user, "## My own tips\nWrite good OCL."));
  EXPECT_FALSE(has(p->user, "## Optimisation tips (OpenCL)"));
  EXPECT_TRUE(has(p->user, "## Pitfalls (OpenCL)"));
}

TEST_F(TemplateDirTest, EmptyOverrideDropsTheSection) {
  fs::path dir = override_dir();
  ASSERT_TRUE(write_file(dir / "pitfalls_ocl.md", "").is_ok());
  auto loaded = PromptTemplates::load(shipped(), dir);
  ASSERT_TRUE(loaded.is_ok()) << loaded.message();
  auto p = build_prompt(*loaded, inputs(softmax_));
  ASSERT_TRUE(p.is_ok()) << p.message();
  EXPECT_FALSE(has_section(*p, "pitfalls"));
  EXPECT_TRUE(has_section(*p, "tips"));
}

TEST_F(TemplateDirTest, UnknownPlaceholderIsAnErrorWithFileAndLine) {
  fs::path dir = override_dir();
  ASSERT_TRUE(write_file(dir / "role.md", "You are an expert.\nYou write {{langauge}}.\n").is_ok());
  auto loaded = PromptTemplates::load(shipped(), dir);
  ASSERT_FALSE(loaded.is_ok());
  std::string expected = (dir / "role.md").string() + ":2: unknown placeholder 'langauge'";
  EXPECT_TRUE(has(loaded.message(), expected)) << loaded.message();
  EXPECT_TRUE(has(loaded.message(), "did you mean 'language'")) << loaded.message();
  EXPECT_TRUE(has(loaded.message(), "valid placeholders: arch_names, fence, iteration"))
      << loaded.message();
}

TEST_F(TemplateDirTest, UnknownFileNameInOverrideDirIsAnError) {
  fs::path dir = override_dir();
  ASSERT_TRUE(write_file(dir / "tips_opencl.md", "x\n").is_ok());
  ASSERT_TRUE(write_file(dir / "notes.txt", "not a template, ignored\n").is_ok());
  auto loaded = PromptTemplates::load(shipped(), dir);
  ASSERT_FALSE(loaded.is_ok());
  EXPECT_TRUE(has(loaded.message(), "tips_opencl.md: not a prompt template name"))
      << loaded.message();
  EXPECT_TRUE(has(loaded.message(), "did you mean 'tips_ocl.md'")) << loaded.message();
  EXPECT_FALSE(has(loaded.message(), "notes.txt")) << loaded.message();
  EXPECT_FALSE(PromptTemplates::load(shipped(), tmp_ / "missing").is_ok());
}

TEST_F(TemplateDirTest, MissingShippedFileIsNamed) {
  fs::path copy = tmp_ / "shipped_copy";
  fs::copy(shipped(), copy);
  fs::remove(copy / "hardware.md");
  auto loaded = PromptTemplates::load(copy);
  ASSERT_FALSE(loaded.is_ok());
  EXPECT_TRUE(has(loaded.message(), (copy / "hardware.md").string() + ": missing prompt template"))
      << loaded.message();
  // An override supplies it.
  fs::path dir = override_dir();
  ASSERT_TRUE(write_file(dir / "hardware.md", "## Hardware\n{{archs}}\n").is_ok());
  EXPECT_TRUE(PromptTemplates::load(copy, dir).is_ok());
}

TEST(ShippedPromptDir, IsUnderTheConfigTree) {
  EXPECT_EQ(shipped_prompt_dir().filename(), "prompts");
}

}  // namespace
}  // namespace kf
