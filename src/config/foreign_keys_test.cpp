// Tests for the Python KernelFoundry's `_target_` / `verbose` keys in inference configs: accepted,
// dropped and named in one note; the same keys elsewhere stay errors.
#include "config/foreign_keys.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "config/config.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

fs::path shipped_config_dir() {
  const char* dir = std::getenv("KF_SOURCE_DIR");
  return (dir ? fs::path(dir) : fs::path(KF_TEST_SOURCE_DIR)) / "configs";
}

class ForeignKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_foreign_keys_test_");
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
  Result<Config> compose_with(std::vector<std::string> args, fs::path task_config = {},
                              fs::path config_dir = {}) {
    ComposeOptions options;
    options.config_dir = config_dir.empty() ? shipped_config_dir() : config_dir;
    options.task_config = std::move(task_config);
    options.args = std::move(args);
    return compose(options);
  }
  fs::path dir_;
};

// The inference section as the Python KernelFoundry's configs write it (Hydra).
constexpr const char* kPythonInference =
    "inference:\n"                                                  // 1
    "  _target_: kernelgen.inference_server.LLMEnsemble\n"          // 2
    "  servers:\n"                                                  // 3
    "    - _target_: kernelgen.inference_server.InferenceServer\n"  // 4
    "      server_type: openai\n"                                   // 5
    "      model_name: gpt-5.2\n"                                   // 6
    "      temperature: 0.0\n"                                      // 7
    "      verbose: False\n"                                        // 8
    "    - _target_: kernelgen.inference_server.InferenceServer\n"  // 9
    "      model_name: gpt-5.3-codex\n"                             // 10
    "  weights: uniform\n";                                         // 11

TEST_F(ForeignKeys, PythonInferenceSectionComposesWithOneNote) {
  fs::path task = write("config.yaml", kPythonInference);
  auto config = compose_with({}, task);
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_EQ(config->get_string("inference.servers.0.model_name"), "gpt-5.2");
  EXPECT_EQ(config->get_double("inference.servers.0.temperature"), 0.0);
  EXPECT_EQ(config->get_string("inference.servers.1.model_name"), "gpt-5.3-codex");
  EXPECT_FALSE(config->tree()["inference"].contains("_target_"));
  EXPECT_FALSE(config->tree()["inference"]["servers"][0].contains("_target_"));
  EXPECT_FALSE(config->tree()["inference"]["servers"][0].contains("verbose"));
  EXPECT_FALSE(config->show().find("_target_") != std::string::npos);
  ASSERT_EQ(config->notes().size(), 1u);
  const std::string t = task.string();
  EXPECT_EQ(config->notes()[0],
            "ignoring `_target_`, `verbose` in inference (" + t + ":2), inference.servers[0] (" +
                t + ":4), inference.servers[1] (" + t +
                ":9): keys of the Python KernelFoundry's configs; KernelFoundry chooses the "
                "client from server_type and prints the same progress either way");
}

TEST_F(ForeignKeys, FeedbackLlmConfigAndNestedMapsToo) {
  fs::path task = write("config.yaml",
                        "feedback_llm_config:\n"
                        "  _target_: kernelgen.inference_server.InferenceServer\n"
                        "  thinking:\n"
                        "    verbose: true\n");
  auto config = compose_with({}, task);
  ASSERT_TRUE(config.is_ok()) << config.message();
  ASSERT_EQ(config->notes().size(), 1u);
  EXPECT_TRUE(starts_with(config->notes()[0],
                          "ignoring `_target_`, `verbose` in "
                          "feedback_llm_config (" +
                              task.string() +
                              ":2), "
                              "feedback_llm_config.thinking (" +
                              task.string() + ":4): "))
      << config->notes()[0];
}

TEST_F(ForeignKeys, CommandLineFormsAreAcceptedToo) {
  auto config = compose_with({"inference.servers.0.verbose=true",
                              "+inference._target_=kernelgen.inference_server.LLMEnsemble",
                              "inference.servers[0]._target_=x", "max_iters=2"});
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_EQ(config->get_int("max_iters"), 2);
  ASSERT_EQ(config->notes().size(), 1u);
  EXPECT_EQ(config->notes()[0],
            "ignoring `_target_`, `verbose` in inference.servers[0] (command line argument "
            "'inference.servers.0.verbose=true'), inference (command line argument "
            "'+inference._target_=kernelgen.inference_server.LLMEnsemble'): keys of the Python "
            "KernelFoundry's configs; KernelFoundry chooses the client from server_type and "
            "prints the same progress either way");
  // A map value on the command line is cleaned the same way.
  auto map_value =
      compose_with({"inference.servers.0={_target_: x, model_name: m, server_type: openai}"});
  ASSERT_TRUE(map_value.is_ok()) << map_value.message();
  EXPECT_EQ(map_value->get_string("inference.servers.0.model_name"), "m");
  ASSERT_EQ(map_value->notes().size(), 1u);
  EXPECT_TRUE(starts_with(map_value->notes()[0], "ignoring `_target_` in inference.servers[0] "))
      << map_value->notes()[0];
}

TEST_F(ForeignKeys, GroupOptionFilesMayHoldThem) {
  // A config tree whose inference option was written for the Python KernelFoundry.
  fs::path tree = dir_ / "configs";
  fs::copy(shipped_config_dir(), tree, fs::copy_options::recursive);
  write("configs/inference/python.yaml",
        "_target_: kernelgen.inference_server.LLMEnsemble\n"
        "servers:\n"
        "  - _target_: kernelgen.inference_server.InferenceServer\n"
        "    model_name: gpt-4o\n");
  auto config = compose_with({"inference=python"}, {}, tree);
  ASSERT_TRUE(config.is_ok()) << config.message();
  ASSERT_EQ(config->notes().size(), 1u);
  EXPECT_NE(config->notes()[0].find("in inference ("), std::string::npos) << config->notes()[0];
  EXPECT_NE(config->notes()[0].find("inference.servers[0] ("), std::string::npos);
}

TEST_F(ForeignKeys, ElsewhereTheyAreStillUnknownKeys) {
  fs::path task = write("config.yaml",
                        "_target_: x\n"
                        "verbose: true\n"
                        "eval_config:\n"
                        "  _target_: y\n"
                        "inference:\n"
                        "  servers:\n"
                        "    - model_name: m\n"
                        "      verbos: true\n");
  auto config = compose_with({}, task);
  ASSERT_FALSE(config.is_ok());
  const std::string& m = config.message();
  EXPECT_EQ(split_lines(m).size(), 4u) << m;
  for (const std::string& expected :
       {"unknown key '_target_' (" + task.string() + ":1)",
        "unknown key 'verbose' (" + task.string() + ":2)",
        "unknown key 'eval_config._target_' (" + task.string() + ":4)",
        "unknown key 'inference.servers[0].verbos' (" + task.string() + ":8)"}) {
    EXPECT_NE(m.find(expected), std::string::npos) << expected << "\n" << m;
  }
  auto arg = compose_with({"verbose=true"});
  ASSERT_FALSE(arg.is_ok());
  EXPECT_TRUE(starts_with(arg.message(), "unknown key 'verbose' (command line argument"))
      << arg.message();
}

TEST_F(ForeignKeys, NoNoteWithoutThemAndTheNoteSurvivesSet) {
  auto plain = compose_with({});
  ASSERT_TRUE(plain.is_ok()) << plain.message();
  EXPECT_TRUE(plain->notes().empty());
  fs::path task = write("config.yaml", kPythonInference);
  auto config = compose_with({}, task);
  ASSERT_TRUE(config.is_ok()) << config.message();
  ASSERT_TRUE(config->set("language", "CPP", Origin{"task package", 0}).is_ok());
  EXPECT_EQ(config->notes().size(), 1u);
}

TEST(ForeignKeysNote, NamesAtMostFourPlaces) {
  cfg::ForeignKeys found;
  for (int i = 0; i < 6; ++i)
    cfg::record_foreign_key("inference.servers." + std::to_string(i) + "._target_",
                            Origin{"c.yaml", 3 + i}, &found);
  cfg::record_foreign_key("inference.servers.0._target_", Origin{"c.yaml", 3}, &found);
  EXPECT_EQ(cfg::foreign_keys_note(found),
            "ignoring `_target_` in inference.servers[0] (c.yaml:3), inference.servers[1] "
            "(c.yaml:4), inference.servers[2] (c.yaml:5), inference.servers[3] (c.yaml:6) and 2 "
            "more: keys of the Python KernelFoundry's configs; KernelFoundry chooses the client "
            "from server_type");
  EXPECT_EQ(cfg::foreign_keys_note(cfg::ForeignKeys{}), "");
}

}  // namespace
}  // namespace kf
