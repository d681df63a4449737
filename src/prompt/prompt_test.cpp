// Tests for prompt building: which sections appear for which inputs, the contract view, log
// trimming, feedback summaries, templated kernels and template overrides.
#include "prompt/prompt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "eval/verdict.h"
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
  std::vector<std::string> expected = {"role",      "contract",   "user_instructions",
                                       "reference", "objectives", "requirements",
                                       "tips",      "pitfalls",   "response_format"};
  EXPECT_EQ(p.sections, expected);
  EXPECT_TRUE(has(p.system, "OpenCL C")) << p.system;
  EXPECT_TRUE(has(p.user, "No kernel has been evaluated yet")) << p.user;
  EXPECT_TRUE(has(p.user, "softmax_reference")) << "the reference is shown";
  EXPECT_FALSE(has(p.user, "{{")) << "no tag survives rendering";
  EXPECT_FALSE(has(p.user, "## Target hardware"));
  EXPECT_FALSE(has(p.user, "## Best kernel so far"));
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
