// Tests for where API keys may go: api_key_env as composed (provider default only for the
// provider's API), keys withheld from a server a task package names, the secret variables.
#include "config/api_keys.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

class ApiKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_api_keys_test_");
    ASSERT_TRUE(dir.is_ok()) << dir.message();
    pkg_ = *dir;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(pkg_, ec);
  }

  // Composes with the package's config.yaml holding `yaml` (none when empty), then `args`.
  Result<Config> compose_with(const std::string& yaml, std::vector<std::string> args = {}) {
    ComposeOptions options;
    const char* src = std::getenv("KF_SOURCE_DIR");
    options.config_dir = fs::path(src ? src : KF_TEST_SOURCE_DIR) / "configs";
    if (!yaml.empty()) {
      EXPECT_TRUE(write_file(pkg_ / "config.yaml", yaml).is_ok());
      options.task_config = pkg_ / "config.yaml";
    }
    options.args = std::move(args);
    return compose(options);
  }
  fs::path pkg_;
};

const std::string kPackageServer =
    "inference:\n"
    "  servers:\n"
    "    - server_type: openai\n"
    "      model_name: m\n"
    "      base_url: http://collector.example:9999/v1\n"
    "      api_key_env: OPENAI_API_KEY\n";

TEST_F(ApiKeys, ProviderDefaultOnlyForTheProvidersApi) {
  auto plain = compose_with("");
  ASSERT_TRUE(plain.is_ok()) << plain.message();
  EXPECT_EQ(plain->get_string("inference.servers.0.api_key_env"), "OPENAI_API_KEY");
  EXPECT_EQ(plain->origin("inference.servers.0.api_key_env").source,
            "default for server_type 'openai'");

  // A custom base_url: no variable is filled in, and `config show` says why.
  auto custom = compose_with("", {"inference.servers.0.base_url=http://localhost:8000/v1"});
  ASSERT_TRUE(custom.is_ok()) << custom.message();
  EXPECT_TRUE(custom->at("inference.servers.0.api_key_env").is_null());
  EXPECT_EQ(custom->origin("inference.servers.0.api_key_env").source, cfg::kNoKeyForCustomUrl);
  EXPECT_NE(custom->show().find(cfg::kNoKeyForCustomUrl), std::string::npos);
  EXPECT_TRUE(api_key_warnings(*custom).empty());

  // The user names the variable: it is kept, with its origin.
  auto named = compose_with("", {"inference.servers.0.base_url=http://localhost:8000/v1",
                                 "inference.servers.0.api_key_env=LOCAL_KEY"});
  ASSERT_TRUE(named.is_ok()) << named.message();
  EXPECT_EQ(named->get_string("inference.servers.0.api_key_env"), "LOCAL_KEY");
  EXPECT_EQ(named->origin("inference.servers.0.api_key_env").source,
            "command line argument 'inference.servers.0.api_key_env=LOCAL_KEY'");
}

TEST_F(ApiKeys, ADefaultFilledBeforeBaseUrlIsTakenBack) {
  auto config = compose_with("");
  ASSERT_TRUE(config.is_ok()) << config.message();
  ASSERT_TRUE(
      config->set("inference.servers.0.base_url", "http://proxy.example/v1", Origin{"test", 0})
          .is_ok());
  EXPECT_TRUE(config->at("inference.servers.0.api_key_env").is_null());
}

TEST_F(ApiKeys, PackageCannotPickBothServerAndKey) {
  auto config = compose_with(kPackageServer);
  ASSERT_TRUE(config.is_ok()) << config.message();
  EXPECT_TRUE(config->at("inference.servers.0.api_key_env").is_null());
  std::string why = config->origin("inference.servers.0.api_key_env").source;
  EXPECT_TRUE(starts_with(why, cfg::kWithheldPrefix)) << why;
  EXPECT_NE(why.find("config.yaml:5"), std::string::npos) << why;  // base_url's line
  EXPECT_NE(why.find("inference.servers[0].api_key_env=OPENAI_API_KEY"), std::string::npos) << why;
  auto warnings = api_key_warnings(*config);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("no API key is sent to http://collector.example:9999/v1"),
            std::string::npos)
      << warnings[0];
  // A later programmatic change re-derives the tree but keeps the key withheld.
  ASSERT_TRUE(config->set("language", "CPP", Origin{"test", 0}).is_ok());
  EXPECT_TRUE(config->at("inference.servers.0.api_key_env").is_null());
  EXPECT_EQ(api_key_warnings(*config).size(), 1u);
}

TEST_F(ApiKeys, UserMayConfirmEitherHalf) {
  auto key = compose_with(kPackageServer, {"inference.servers.0.api_key_env=OPENAI_API_KEY"});
  ASSERT_TRUE(key.is_ok()) << key.message();
  EXPECT_EQ(key->get_string("inference.servers.0.api_key_env"), "OPENAI_API_KEY");
  EXPECT_TRUE(api_key_warnings(*key).empty());

  auto url = compose_with(kPackageServer, {"inference.servers.0.base_url=http://mine:1/v1"});
  ASSERT_TRUE(url.is_ok()) << url.message();
  EXPECT_EQ(url->get_string("inference.servers.0.api_key_env"), "OPENAI_API_KEY");

  // The package alone picking the variable for the provider's API is not the case guarded here.
  auto only_key = compose_with(
      "inference:\n  servers:\n    - server_type: openai\n      model_name: m\n"
      "      api_key_env: MY_OPENAI_KEY\n");
  ASSERT_TRUE(only_key.is_ok()) << only_key.message();
  EXPECT_EQ(only_key->get_string("inference.servers.0.api_key_env"), "MY_OPENAI_KEY");
}

TEST_F(ApiKeys, SecretVariablesIncludeProviderDefaults) {
  auto config = compose_with("", {"inference=ensemble", "inference.servers.0.api_key_env=MINE",
                                  "inference.servers.0.base_url=http://localhost:1/v1"});
  ASSERT_TRUE(config.is_ok()) << config.message();
  auto names = api_key_variables(*config);
  for (const char* name : {"MINE", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

}  // namespace
}  // namespace kf
