// Tests for the secret set: which values count, how they are replaced, the .env reader.
#include "util/secrets.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "util/fs.h"

namespace kf {
namespace {

class Secrets : public ::testing::Test {
 protected:
  void SetUp() override { clear_secrets(); }
  void TearDown() override {
    clear_secrets();
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  fs::path dir() {
    if (dir_.empty()) dir_ = *make_temp_dir(fs::temp_directory_path(), "kf_secrets_");
    return dir_;
  }
  fs::path dir_;
};

TEST_F(Secrets, ReplacesEachValueWithItsName) {
  EXPECT_EQ(redact_secrets("nothing registered: sk-abc-123456"),
            "nothing registered: sk-abc-123456");
  register_secret("OPENAI_API_KEY", "sk-abc-123456");
  register_secret("OTHER_TOKEN", "  tok-0987654321\n");  // trimmed
  EXPECT_EQ(
      redact_secrets("Incorrect API key sk-abc-123456, also tok-0987654321 and sk-abc-123456"),
      "Incorrect API key [redacted OPENAI_API_KEY], also [redacted OTHER_TOKEN] and "
      "[redacted OPENAI_API_KEY]");
  EXPECT_TRUE(contains_secret("x tok-0987654321 y"));
  EXPECT_FALSE(contains_secret("x tok-098765432 y"));
  EXPECT_EQ(redact_secrets("plain text"), "plain text");
}

TEST_F(Secrets, ShortValuesAreNotSecrets) {
  register_secret("DEBUG", "1");
  register_secret("MODE", "release");  // 7 characters
  EXPECT_EQ(redact_secrets("DEBUG=1 in release mode"), "DEBUG=1 in release mode");
  register_secret("EIGHT", "12345678");
  EXPECT_EQ(redact_secrets("id 12345678"), "id [redacted EIGHT]");
}

TEST_F(Secrets, LongerValueWinsOverOneInsideIt) {
  register_secret("SHORT", "abcdefgh");
  register_secret("LONG", "abcdefgh-ijklmnop");
  EXPECT_EQ(redact_secrets("abcdefgh-ijklmnop / abcdefgh"), "[redacted LONG] / [redacted SHORT]");
}

TEST_F(Secrets, SuffixThatMayStartASecret) {
  register_secret("KEY", "sk-live-0123456789");
  EXPECT_EQ(secret_prefix_suffix("progress sk-li"), 5u);
  EXPECT_EQ(secret_prefix_suffix("progress s"), 1u);
  EXPECT_EQ(secret_prefix_suffix("progress ..."), 0u);
  EXPECT_EQ(secret_prefix_suffix("sk-live-0123456789"), 0u) << "a whole value is not a prefix";
}

TEST_F(Secrets, EnvironmentAndEveryDotenvValue) {
  ASSERT_TRUE(write_file(dir() / ".env",
                         "# keys\nexport ANTHROPIC_API_KEY='sk-ant-from-dotenv'\nDEBUG=1\n"
                         "DB_PASSWORD = \"hunter2-hunter2\" # the database\n")
                  .is_ok());
  setenv("KF_SECRETS_TEST_KEY", "sk-env-value-42", 1);
  register_env_secrets({"KF_SECRETS_TEST_KEY", "KF_SECRETS_TEST_UNSET"}, dir());
  unsetenv("KF_SECRETS_TEST_KEY");
  EXPECT_EQ(redact_secrets("sk-env-value-42 sk-ant-from-dotenv hunter2-hunter2 DEBUG=1"),
            "[redacted KF_SECRETS_TEST_KEY] [redacted ANTHROPIC_API_KEY] [redacted DB_PASSWORD] "
            "DEBUG=1");
}

TEST_F(Secrets, DotenvForms) {
  ASSERT_TRUE(write_file(dir() / ".env",
                         "A=plain\nexport B=exported\nC = \"double quoted\"\nD='single' # note\n"
                         "E=commented # note\nnot a line\n=nameless\nA=last wins\r\n")
                  .is_ok());
  auto entries = read_dotenv(dir() / ".env");
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries[1], (std::pair<std::string, std::string>{"B", "exported"}));
  EXPECT_EQ(dotenv_value(dir() / ".env", "C"), "double quoted");
  EXPECT_EQ(dotenv_value(dir() / ".env", "D"), "single");
  EXPECT_EQ(dotenv_value(dir() / ".env", "E"), "commented");
  EXPECT_EQ(dotenv_value(dir() / ".env", "A"), "last wins");
  EXPECT_EQ(dotenv_value(dir() / ".env", "MISSING"), "");
  EXPECT_TRUE(read_dotenv(dir() / "no-such-file").empty());
}

}  // namespace
}  // namespace kf
