// Tests for composing the shipped tree, task files and the command line, and for the messages.
#include "config/config.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "config/schema.h"
#include "config/tree.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

fs::path source_dir() {
  const char* dir = std::getenv("KF_SOURCE_DIR");
  return dir ? fs::path(dir) : fs::path(KF_TEST_SOURCE_DIR);
}

fs::path config_dir() {
  return source_dir() / "configs";
}

Result<Config> compose_args(std::vector<std::string> args, fs::path task_config = {},
                            fs::path overrides = {}) {
  ComposeOptions options;
  options.config_dir = config_dir();
  options.task_config = std::move(task_config);
  options.task_overrides = std::move(overrides);
  options.args = std::move(args);
  return compose(options);
}

// 1-based line of the first line of `file` that starts (after indentation) with `prefix`.
int line_of(const fs::path& file, std::string_view prefix) {
  auto text = read_file(file);
  if (!text.is_ok()) return -1;
  std::vector<std::string> lines = split_lines(*text);
  for (size_t i = 0; i < lines.size(); ++i)
    if (starts_with(trim(lines[i]), prefix)) return static_cast<int>(i + 1);
  return -1;
}

class TempTask : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_config_test_");
    ASSERT_TRUE(dir.is_ok()) << dir.message();
    dir_ = *dir;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    EXPECT_TRUE(write_file(path, text).is_ok());
    return path;
  }
  fs::path dir_;
};

TEST(Compose, ShippedTreeComposesWithEveryKeyAtItsDefault) {
  auto config = compose_args({});
  ASSERT_TRUE(config.is_ok()) << config.message();
  for (const cfg::KeySpec& spec : cfg::schema()) {
    // A list element's fields are checked on the first server.
    std::string path = replace_all(spec.path, "[]", ".0");
    const nlohmann::json* node = cfg::find_node(config->tree(), path);
    ASSERT_NE(node, nullptr) << "missing key " << spec.path;
    // Every key must come from a shipped file, not from the schema's fallback.
    EXPECT_NE(config->origin(path).source, "built-in default") << spec.path;
    if (spec.kind == cfg::Kind::kSection || spec.kind == cfg::Kind::kServerList) continue;
    if (ends_with(spec.path, ".model_name") || ends_with(spec.path, ".api_key_env")) continue;
    EXPECT_EQ(*node, spec.default_value)
        << "shipped default differs from the schema: " << spec.path;
  }
  EXPECT_EQ(config->get_int("max_iters"), 3);
  EXPECT_EQ(config->get_int("branches_per_iteration"), 2);
  EXPECT_EQ(config->get_string("gpu_arch"), "native");
  EXPECT_DOUBLE_EQ(config->get_double("eval_config.noise_target"), 0.005);
  EXPECT_EQ(config->get_string("paths.kernels_db_path"), "runs/kernels.sqlite3");
  EXPECT_FALSE(config->has("task_name"));
  EXPECT_TRUE(config->at("task_name").is_null());
  EXPECT_EQ(config->at("inference.servers").size(), 1u);
  EXPECT_EQ(config->get_string("inference.servers.0.api_key_env"), "OPENAI_API_KEY");
  EXPECT_EQ(config->get_string("inference.servers[0].model_name"), "gpt-4o");
  EXPECT_FALSE(config->get_bool("prompt.meta_prompting.enabled"));
}

TEST(Compose, OriginsNameShippedFileAndLine) {
  auto config = compose_args({});
  ASSERT_TRUE(config.is_ok()) << config.message();
  Origin o = config->origin("max_iters");
  EXPECT_TRUE(ends_with(o.source, "configs/run.yaml")) << o.source;
  EXPECT_EQ(o.line, line_of(config_dir() / "run.yaml", "max_iters:"));
  Origin s = config->origin("inference.servers.0.temperature");
  EXPECT_TRUE(ends_with(s.source, "configs/inference/server.yaml")) << s.source;
  EXPECT_EQ(s.line, line_of(config_dir() / "inference" / "server.yaml", "temperature:"));
  EXPECT_EQ(s.describe(), s.source + ":" + std::to_string(s.line));
}

TEST_F(TempTask, EachLayerOverridesThePreviousAndOriginFollows) {
  fs::path task = write("config.yaml",
                        "task_name: softmax\n"
                        "job_name: first\n"
                        "max_iters: 7\n"
                        "eval_config:\n"
                        "  num_seeds: 5\n"
                        "branches_per_iteration: 4\n");
  fs::path over = write("overrides.yaml", "# tweak\nmax_iters: 9\n");
  auto config = compose_args({"branches_per_iteration=1"}, task, over);
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_EQ(config->get_string("task_name"), "softmax");
  EXPECT_EQ(config->origin("task_name").source, task.string());
  EXPECT_EQ(config->origin("task_name").line, 1);
  EXPECT_EQ(config->get_int("eval_config.num_seeds"), 5);
  EXPECT_EQ(config->origin("eval_config.num_seeds").line, 5);
  // Maps merge: the other eval_config keys keep their shipped values.
  EXPECT_EQ(config->get_int("eval_config.min_samples"), 10);
  EXPECT_TRUE(ends_with(config->origin("eval_config.min_samples").source, "run.yaml"));
  EXPECT_EQ(config->get_int("max_iters"), 9);
  EXPECT_EQ(config->origin("max_iters").describe(), over.string() + ":2");
  EXPECT_EQ(config->get_int("branches_per_iteration"), 1);
  EXPECT_EQ(config->origin("branches_per_iteration").describe(),
            "command line argument 'branches_per_iteration=1'");
}

TEST_F(TempTask, MissingTaskFilesAreSkipped) {
  auto config = compose_args({}, dir_ / "nope.yaml", dir_ / "overrides.yaml");
  EXPECT_TRUE(config.is_ok()) << config.message();
}

TEST(Compose, CommandLineValuesAreTyped) {
  auto config = compose_args({"max_iters=5", "validate=true", "gpu_arch=lnl,ptl,bmg",
                              "eval_config.noise_target=0.01", "inference.weights=[1]",
                              "job_name=007", "language=cuda", "kernels_iter_0_path=best"});
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_TRUE(config->at("max_iters").is_number_integer());
  EXPECT_EQ(config->get_int("max_iters"), 5);
  EXPECT_TRUE(config->get_bool("validate"));
  EXPECT_EQ(config->at("gpu_arch"), "lnl,ptl,bmg");  // kept as written; consumers split it
  EXPECT_EQ(normalize_gpu_archs(*config), (std::vector<std::string>{"lnl", "ptl", "bmg"}));
  EXPECT_DOUBLE_EQ(config->get_double("eval_config.noise_target"), 0.01);
  EXPECT_EQ(config->at("inference.weights"), nlohmann::json::array({1}));
  EXPECT_EQ(config->at("job_name"), "007");   // a text key keeps its text
  EXPECT_EQ(config->at("language"), "CUDA");  // any case in, canonical spelling out
  EXPECT_EQ(config->origin("eval_config.noise_target").describe(),
            "command line argument 'eval_config.noise_target=0.01'");
}

TEST(Compose, GpuArchAsYamlList) {
  auto config = compose_args({"gpu_arch=[h100, bmg, h100]"});
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_EQ(normalize_gpu_archs(*config), (std::vector<std::string>{"h100", "bmg"}));
  EXPECT_EQ(config->get_list("gpu_arch").size(), 3u);
  auto plain = compose_args({});
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ(normalize_gpu_archs(*plain), std::vector<std::string>{"native"});
}

TEST(Compose, GroupSelectionReplacesTheSubtree) {
  auto config = compose_args({"inference.servers.0.temperature=0.1", "inference=ensemble"});
  ASSERT_TRUE(config.is_ok()) << config.message();
  ASSERT_GT(config->at("inference.servers").size(), 1u);
  EXPECT_EQ(config->get_string("inference.servers.1.server_type"), "anthropic");
  EXPECT_EQ(config->get_string("inference.servers.1.api_key_env"), "ANTHROPIC_API_KEY");
  // The earlier dotted override was replaced with the whole group.
  EXPECT_DOUBLE_EQ(config->get_double("inference.servers.0.temperature"), 0.7);
  EXPECT_TRUE(ends_with(config->origin("inference.weights").source, "inference/ensemble.yaml"));
  EXPECT_EQ(config->get_list("inference.weights").size(), config->at("inference.servers").size());

  auto meta = compose_args({"prompt=meta_prompting"});
  ASSERT_TRUE(meta.is_ok()) << meta.message();
  EXPECT_TRUE(meta->get_bool("prompt.meta_prompting.enabled"));
}

TEST(Compose, MetaPromptingTakesAMapOrTheBooleanShorthand) {
  auto on =
      compose_args({"prompt.meta_prompting.evolution_interval=3", "prompt.meta_prompting=true"});
  ASSERT_TRUE(on.is_ok()) << on.message();
  EXPECT_TRUE(on->get_bool("prompt.meta_prompting.enabled"));
  // The shorthand sets `enabled` only: the other keys keep their values.
  EXPECT_EQ(on->get_int("prompt.meta_prompting.evolution_interval"), 3);
  EXPECT_EQ(on->get_int("prompt.meta_prompting.max_prompts"), 8);
  EXPECT_EQ(on->get_string("prompt.meta_prompting.mode"), "holistic");

  auto off = compose_args({"prompt=meta_prompting", "prompt.meta_prompting=false"});
  ASSERT_TRUE(off.is_ok()) << off.message();
  EXPECT_FALSE(off->get_bool("prompt.meta_prompting.enabled"));

  auto bad = compose_args({"prompt.meta_prompting.mode=iterative"});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("holistic"), std::string::npos) << bad.message();
}

TEST_F(TempTask, MetaPromptingShorthandInAFile) {
  fs::path task = write("config.yaml", "prompt:\n  meta_prompting: true\n");
  auto config = compose_args({}, task);
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_TRUE(config->get_bool("prompt.meta_prompting.enabled"));
  EXPECT_EQ(config->get_int("prompt.meta_prompting.evolution_interval"), 2);
}

TEST(Compose, ExperimentsMergeAtTheRoot) {
  auto wide = compose_args({"+experiment=wide_search"});
  ASSERT_TRUE(wide.is_ok()) << wide.message();
  EXPECT_EQ(wide->get_int("branches_per_iteration"), 3);
  EXPECT_EQ(wide->get_int("max_iters"), 15);
  EXPECT_TRUE(ends_with(wide->origin("max_iters").source, "experiment/wide_search.yaml"));

  // Later arguments win over the experiment; the experiment's eval_config merges.
  auto quick = compose_args({"+experiment=quick", "max_iters=2"});
  ASSERT_TRUE(quick.is_ok()) << quick.message();
  EXPECT_EQ(quick->get_int("max_iters"), 2);
  EXPECT_EQ(quick->get_int("eval_config.num_seeds"), 1);
  EXPECT_TRUE(quick->get_bool("eval_config.cold_samples"));

  auto best = compose_args({"+experiment=continue_from_best"});
  ASSERT_TRUE(best.is_ok()) << best.message();
  EXPECT_TRUE(best->get_bool("start_from_best"));
}

TEST_F(TempTask, TaskConfigCanPickGroupOptions) {
  fs::path task = write("config.yaml",
                        "defaults:\n  prompt: meta_prompting\n"
                        "inference: ensemble\n"
                        "prompt:\n  num_inspirations: 4\n");
  auto config = compose_args({}, task);
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_GT(config->at("inference.servers").size(), 1u);
  EXPECT_TRUE(config->get_bool("prompt.meta_prompting.enabled"));
  EXPECT_EQ(config->get_int("prompt.num_inspirations"), 4);
}

TEST_F(TempTask, ServerMapsGetDefaultsForMissingFields) {
  fs::path task = write("config.yaml",
                        "inference:\n"
                        "  servers:\n"
                        "    - server_type: Anthropic\n"
                        "      model_name: claude-x\n"
                        "    - server_type: replay\n"
                        "      replay_path: job:old\n");
  auto config =
      compose_args({"inference.servers.2.model_name=local", "inference.weights=1,3,0"}, task);
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_EQ(config->get_string("inference.servers.0.server_type"), "anthropic");
  EXPECT_EQ(config->get_int("inference.servers.0.max_tokens"), 8192);
  EXPECT_EQ(config->origin("inference.servers.0.max_tokens").source, "built-in default");
  EXPECT_EQ(config->get_string("inference.servers.1.api_key_env"), "");
  EXPECT_EQ(config->get_string("inference.servers.2.server_type"), "openai");
  EXPECT_EQ(config->at("inference.weights"), nlohmann::json::parse("[1, 3, 0]"));
}

TEST(Errors, UnknownCommandLineKeySuggestsNearest) {
  auto config = compose_args({"max_iter=5"});
  ASSERT_FALSE(config.is_ok());
  EXPECT_EQ(config.message(),
            "unknown key 'max_iter' (command line argument 'max_iter=5'); did you mean "
            "'max_iters'?");
  auto nested = compose_args({"eval_config.noise_targt=0.1"});
  ASSERT_FALSE(nested.is_ok());
  EXPECT_NE(nested.message().find("did you mean 'eval_config.noise_target'?"), std::string::npos)
      << nested.message();
  auto wrong_level = compose_args({"noise_target=0.1"});
  ASSERT_FALSE(wrong_level.is_ok());
  EXPECT_NE(wrong_level.message().find("did you mean 'eval_config.noise_target'?"),
            std::string::npos)
      << wrong_level.message();
}

TEST_F(TempTask, UnknownKeyInTaskConfigNamesFileAndLine) {
  fs::path task = write("config.yaml",
                        "task_name: t\n"
                        "job_name: j\n"
                        "brances_per_iteration: 3\n"
                        "inference:\n"
                        "  servers:\n"
                        "    - model_name: m\n"
                        "      temprature: 0.2\n");
  auto config = compose_args({}, task);
  ASSERT_FALSE(config.is_ok());
  std::vector<std::string> lines = split_lines(config.message());
  ASSERT_EQ(lines.size(), 2u) << config.message();
  EXPECT_EQ(lines[0], "unknown key 'brances_per_iteration' (" + task.string() +
                          ":3); did you mean 'branches_per_iteration'?");
  EXPECT_EQ(lines[1], "unknown key 'inference.servers[0].temprature' (" + task.string() +
                          ":7); did you mean 'inference.servers[0].temperature'?");
}

TEST_F(TempTask, WrongTypesAndRangesAreAllReported) {
  fs::path task = write("config.yaml",
                        "max_iters: abc\n"
                        "validate: yes\n"
                        "eval_config:\n"
                        "  noise_target: 1.5\n");
  auto config = compose_args(
      {"branches_per_iteration=0", "inference.servers.0.temperature=3", "language=fortran"}, task);
  ASSERT_FALSE(config.is_ok());
  const std::string& m = config.message();
  EXPECT_NE(m.find("'max_iters' must be an integer >= 0, got 'abc' (" + task.string() + ":1)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("'validate' must be true or false, got 'yes' (" + task.string() + ":2)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("'eval_config.noise_target' must be a number > 0 and < 1, got '1.5'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("'branches_per_iteration' must be an integer >= 1, got '0' (command line "
                   "argument 'branches_per_iteration=0')"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("'inference.servers[0].temperature' must be a number between 0 and 2 or null, "
                   "got '3'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("'language' must be one of CUDA, OCL, SYCL, triton, CPP or null, got 'fortran'"),
            std::string::npos)
      << m;
  EXPECT_EQ(split_lines(m).size(), 6u) << m;
}

TEST(FailureMemoryKeys, DefaultsAndRanges) {
  auto config = compose_args({});
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_EQ(config->get_int("prompt.max_attempts"), 4);
  EXPECT_EQ(config->get_int("prompt.max_attempts_chars"), 8000);
  EXPECT_EQ(config->get_int("feedback_llm_config.min_log_chars"), 2000);
  auto set = compose_args({"prompt.max_attempts=0", "feedback_llm_config.min_log_chars=10"});
  ASSERT_TRUE(set.is_ok()) << set.message();
  EXPECT_EQ(set->get_int("feedback_llm_config.min_log_chars"), 10);
  auto bad = compose_args({"feedback_llm_config.min_log_chars=-1", "prompt.max_attempts=-2",
                           "prompt.max_attempts_chars=x"});
  ASSERT_FALSE(bad.is_ok());
  const std::string& m = bad.message();
  EXPECT_NE(m.find("'feedback_llm_config.min_log_chars' must be an integer >= 0, got '-1'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("'prompt.max_attempts' must be an integer >= 0, got '-2'"), std::string::npos)
      << m;
  EXPECT_NE(m.find("'prompt.max_attempts_chars' must be an integer >= 0, got 'x'"),
            std::string::npos)
      << m;
}

TEST(Errors, ExactMessageForCommandLineTypeError) {
  auto config = compose_args({"max_iters=abc"});
  ASSERT_FALSE(config.is_ok());
  EXPECT_EQ(config.message(),
            "'max_iters' must be an integer >= 0, got 'abc' (command line argument "
            "'max_iters=abc')");
}

TEST(Errors, CrossKeyRules) {
  auto weights = compose_args({"inference.weights=[0.5,0.5]"});
  ASSERT_FALSE(weights.is_ok());
  EXPECT_NE(weights.message().find("'inference.weights' has 2 weight(s) but inference.servers "
                                   "has 1 server(s)"),
            std::string::npos)
      << weights.message();
  auto zero = compose_args({"inference=ensemble", "inference.weights=0,0,0"});
  ASSERT_FALSE(zero.is_ok());
  EXPECT_NE(zero.message().find("must not be all 0"), std::string::npos) << zero.message();
  auto replay = compose_args({"inference.servers.0.server_type=replay"});
  ASSERT_FALSE(replay.is_ok());
  EXPECT_NE(replay.message().find("'inference.servers[0].replay_path' must be set for a replay "
                                  "server"),
            std::string::npos)
      << replay.message();
  auto samples = compose_args({"eval_config.max_samples=5"});
  ASSERT_FALSE(samples.is_ok());
  EXPECT_NE(samples.message().find("'eval_config.max_samples' must be >= "
                                   "eval_config.min_samples (10), got '5'"),
            std::string::npos)
      << samples.message();
  auto hole = compose_args({"inference.servers.3.model_name=x"});
  ASSERT_FALSE(hole.is_ok());
  EXPECT_NE(hole.message().find("index 3 is out of range"), std::string::npos) << hole.message();
}

TEST(Errors, UnknownGroupOptionListsOptions) {
  auto config = compose_args({"inference=ensmble"});
  ASSERT_FALSE(config.is_ok());
  EXPECT_EQ(config.message(),
            "unknown option 'ensmble' for config group 'inference' (command line argument "
            "'inference=ensmble'); available: ensemble, server; did you mean 'ensemble'?");
  auto experiment = compose_args({"+experiment=nope"});
  ASSERT_FALSE(experiment.is_ok());
  EXPECT_NE(
      experiment.message().find("available: continue_from_best, quick, replay_demo, wide_search"),
      std::string::npos)
      << experiment.message();
}

TEST(Errors, MalformedArgumentsAndValues) {
  auto config = compose_args({"max_iters", "inference.weights=[0.5,", "a..b=1"});
  ASSERT_FALSE(config.is_ok());
  std::vector<std::string> lines = split_lines(config.message());
  ASSERT_EQ(lines.size(), 3u) << config.message();
  EXPECT_NE(lines[0].find("'max_iters' is not an override"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("malformed key 'a..b'"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("cannot parse the value of command line argument "
                          "'inference.weights=[0.5,'"),
            std::string::npos)
      << lines[2];
}

TEST_F(TempTask, YamlSyntaxErrorNamesFileLineAndColumn) {
  fs::path task = write("config.yaml", "task_name: t\nmax_iters: [1, 2\nvalidate: true\n");
  fs::path over = write("overrides.yaml", "max_iters: 1\nmax_iters: 2\n");
  auto config = compose_args({"max_iter=1"}, task, over);
  ASSERT_FALSE(config.is_ok());
  std::vector<std::string> lines = split_lines(config.message());
  ASSERT_EQ(lines.size(), 3u) << config.message();
  EXPECT_TRUE(starts_with(lines[0], task.string() + ":")) << lines[0];
  EXPECT_NE(lines[0].find(": YAML syntax error: end of sequence flow not found"), std::string::npos)
      << lines[0];
  EXPECT_EQ(lines[1], "duplicate key 'max_iters' (" + over.string() + ":2)");
  EXPECT_NE(lines[2].find("'max_iter=1'"), std::string::npos);
}

TEST(Errors, MissingShippedTree) {
  ComposeOptions options;
  options.config_dir = "/nonexistent/kf/configs";
  auto config = compose(options);
  ASSERT_FALSE(config.is_ok());
  EXPECT_NE(config.message().find("KERNELFOUNDRY_CONFIG_DIR"), std::string::npos);
}

TEST(ValidateForRun, RequiresNamesAndLanguage) {
  auto config = compose_args({});
  ASSERT_TRUE(config.is_ok());
  Status status = validate_for_run(*config);
  ASSERT_FALSE(status.is_ok());
  std::vector<std::string> lines = split_lines(status.message());
  ASSERT_EQ(lines.size(), 3u) << status.message();
  EXPECT_EQ(lines[0],
            "'task_name' is not set: set it in the task's config.yaml (task_name: my_task) or on "
            "the command line (task_name=my_task)");
  EXPECT_NE(lines[1].find("'job_name' is not set"), std::string::npos);
  EXPECT_NE(lines[2].find("'language' is not set"), std::string::npos);

  auto good = compose_args({"task_name=t", "job_name=j", "language=ocl"});
  ASSERT_TRUE(good.is_ok()) << good.message();
  EXPECT_TRUE(validate_for_run(*good).is_ok());

  auto slash = compose_args({"task_name=t", "job_name=../x", "language=CPP"});
  ASSERT_TRUE(slash.is_ok());
  EXPECT_NE(validate_for_run(*slash).message().find("plain name"), std::string::npos);
}

TEST(ValidateForRun, TemplatedNeedsAnExampleLanguage) {
  for (const char* language : {"OCL", "triton", "Triton", "ocl"}) {
    auto config = compose_args({"task_name=t", "job_name=j", std::string("language=") + language,
                                "prompt.allow_templated=true"});
    ASSERT_TRUE(config.is_ok()) << config.message();
    EXPECT_EQ(validate_for_run(*config).message(),
              "AssertionError: Must provide example if allow_templated=True")
        << language;
  }
  for (const char* language : {"CUDA", "SYCL", "CPP"}) {
    auto config = compose_args({"task_name=t", "job_name=j", std::string("language=") + language,
                                "prompt.allow_templated=true"});
    ASSERT_TRUE(config.is_ok()) << config.message();
    EXPECT_TRUE(validate_for_run(*config).is_ok()) << language;
  }
}

// prompt.parametrize_best needs templated kernels; the prompt=parametrize_best group sets both.
TEST(ValidateForRun, ParametrizeBestNeedsTemplatedKernels) {
  auto alone = compose_args(
      {"task_name=t", "job_name=j", "language=CPP", "prompt.parametrize_best=true"});
  ASSERT_TRUE(alone.is_ok()) << alone.message();
  std::string message = validate_for_run(*alone).message();
  EXPECT_NE(message.find("needs prompt.allow_templated: true"), std::string::npos) << message;
  EXPECT_NE(message.find("prompt=parametrize_best"), std::string::npos) << message;
  auto group = compose_args({"task_name=t", "job_name=j", "language=CPP", "prompt=parametrize_best"});
  ASSERT_TRUE(group.is_ok()) << group.message();
  EXPECT_TRUE(validate_for_run(*group).is_ok()) << validate_for_run(*group).message();
  EXPECT_TRUE(group->get_bool("prompt.parametrize_best"));
  EXPECT_TRUE(group->get_bool("prompt.allow_templated"));
}

TEST_F(TempTask, SeedPageSnippetsWorkAsWritten) {
  // Each "Or set it yourself" block of the optimisation-strategies page, in a task config.yaml.
  fs::path task = write("config.yaml",
                        "task_name: t\njob_name: j\nlanguage: SYCL\n"
                        "branches_per_iteration: 3\n"
                        "max_iters: 15\n"
                        "start_from_best: true\n"
                        "prompt:\n"
                        "  allow_templated: true   # off by default\n"
                        "eval_config:\n"
                        "  profile_original_model: true\n"
                        "use_feedback_llm: true\n"
                        "gpu_arch: lnl,ptl,bmg\n");
  auto config = compose_args({}, task);
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_TRUE(validate_for_run(*config).is_ok());
  EXPECT_EQ(config->get_int("branches_per_iteration"), 3);
  EXPECT_EQ(config->get_int("max_iters"), 15);
  EXPECT_TRUE(config->get_bool("start_from_best"));
  EXPECT_TRUE(config->get_bool("prompt.allow_templated"));
  EXPECT_TRUE(config->get_bool("eval_config.profile_original_model"));
  EXPECT_TRUE(config->get_bool("use_feedback_llm"));
  EXPECT_EQ(normalize_gpu_archs(*config), (std::vector<std::string>{"lnl", "ptl", "bmg"}));
}

TEST(ConfigSet, ValidatesAndRecordsOrigin) {
  auto config = compose_args({});
  ASSERT_TRUE(config.is_ok());
  Config c = *config;
  EXPECT_TRUE(c.set("language", "triton", Origin{"task package", 0}).is_ok());
  EXPECT_EQ(c.get_string("language"), "triton");
  EXPECT_EQ(c.origin("language").describe(), "task package");
  Status bad = c.set("max_iters", -1, Origin{"test", 0});
  EXPECT_EQ(bad.message(), "'max_iters' must be an integer >= 0, got '-1' (test)");
  EXPECT_EQ(c.get_int("max_iters"), 3);  // unchanged on error
  Status unknown = c.set("max_iter", 1, Origin{"test", 0});
  EXPECT_NE(unknown.message().find("did you mean 'max_iters'?"), std::string::npos);
  EXPECT_TRUE(c.set("inference.servers[0].model_name", "other", Origin{"test", 0}).is_ok());
  EXPECT_EQ(c.get_string("inference.servers.0.model_name"), "other");
  EXPECT_FALSE(c.set("inference.servers.4.model_name", "x", Origin{"test", 0}).is_ok());
}

TEST_F(TempTask, ShowListsEveryValueWithItsOrigin) {
  fs::path task = write("config.yaml", "task_name: softmax\nmax_iters: 4\n");
  auto config = compose_args({"gpu_arch=lnl,ptl", "inference.weights=[1]"}, task);
  ASSERT_TRUE(config.is_ok()) << config.message();
  std::string text = config->show();
  std::vector<std::string> lines = split_lines(text);
  auto line_with = [&](std::string_view start) {
    for (const auto& line : lines)
      if (starts_with(line, start)) return line;
    return std::string();
  };
  EXPECT_NE(line_with("task_name: softmax").find("# " + task.string() + ":1"), std::string::npos)
      << text;
  EXPECT_NE(line_with("max_iters: 4").find("# " + task.string() + ":2"), std::string::npos);
  EXPECT_NE(line_with("gpu_arch: lnl,ptl").find("# command line argument 'gpu_arch=lnl,ptl'"),
            std::string::npos)
      << text;
  EXPECT_NE(line_with("job_name: null").find("configs/base.yaml:"), std::string::npos);
  EXPECT_NE(text.find("    - server_type: openai"), std::string::npos) << text;
  EXPECT_NE(text.find("  weights: [1]"), std::string::npos) << text;
  // Schema order, not alphabetical: task_name comes before max_iters.
  EXPECT_LT(text.find("task_name:"), text.find("max_iters:"));
  EXPECT_LT(text.find("max_iters:"), text.find("inference:"));
}

TEST(DefaultConfigDir, EnvironmentVariableWins) {
  ::setenv("KERNELFOUNDRY_CONFIG_DIR", "/some/where", 1);
  EXPECT_EQ(default_config_dir(), fs::path("/some/where"));
  ::unsetenv("KERNELFOUNDRY_CONFIG_DIR");
  fs::path found = default_config_dir();
  EXPECT_TRUE(fs::exists(found / "base.yaml")) << found;
}

TEST(Docs, EveryKeyIsDocumented) {
  auto text = read_file(source_dir() / "docs" / "config.md");
  ASSERT_TRUE(text.is_ok()) << text.message();
  for (const cfg::KeySpec& spec : cfg::schema())
    EXPECT_NE(text->find("`" + spec.path + "`"), std::string::npos) << spec.path;
}

}  // namespace
}  // namespace kf
