// Tests for sandboxed(): the environment allow-list, secret scrubbing and limits.
#include "proc/sandbox.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  for (const std::string& l : split_lines(text))
    if (l == line) return true;
  return false;
}

bool has_prefix_line(const std::string& text, const std::string& prefix) {
  for (const std::string& l : split_lines(text))
    if (starts_with(l, prefix)) return true;
  return false;
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_sandbox_test_");
    ASSERT_TRUE(dir.is_ok()) << dir.message();
    dir_ = *dir;
    for (const char* name : kVars) ::unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : kVars) ::unsetenv(name);
    fs::remove_all(dir_);
  }

  static constexpr const char* kVars[] = {"OPENAI_API_KEY",       "HF_TOKEN",     "KF_RANDOM_VAR",
                                          "CUDA_VISIBLE_DEVICES", "POCL_DEVICES", "KF_EXTRA_A"};
  fs::path dir_;
};

TEST_F(SandboxTest, ChildSeesOnlyTheSafeListAndNoSecrets) {
  ::setenv("OPENAI_API_KEY", "sk-secret", 1);
  ::setenv("HF_TOKEN", "hf-secret", 1);
  ::setenv("KF_RANDOM_VAR", "x", 1);
  ::setenv("CUDA_VISIBLE_DEVICES", "3", 1);
  ::setenv("POCL_DEVICES", "cpu", 1);

  ProcessSpec spec;
  spec.argv = {"env"};
  spec.work_dir = dir_;
  spec.env = {{"KF_TASK", "t1"}, {"MY_SERVICE_TOKEN", "leak"}};
  ProcessResult r = PosixProcessRunner().run(sandboxed(spec));
  ASSERT_TRUE(r.success()) << r.describe() << r.output;

  EXPECT_EQ(r.output.find("secret"), std::string::npos) << r.output;
  EXPECT_FALSE(has_prefix_line(r.output, "OPENAI_API_KEY="));
  EXPECT_FALSE(has_prefix_line(r.output, "HF_TOKEN="));
  EXPECT_FALSE(has_prefix_line(r.output, "MY_SERVICE_TOKEN="));
  EXPECT_FALSE(has_prefix_line(r.output, "KF_RANDOM_VAR="));
  EXPECT_TRUE(has_line(r.output, "CUDA_VISIBLE_DEVICES=3"));
  EXPECT_TRUE(has_line(r.output, "POCL_DEVICES=cpu"));
  EXPECT_TRUE(has_line(r.output, "KF_TASK=t1"));
  EXPECT_TRUE(has_line(r.output, "HOME=" + dir_.string()));
  EXPECT_TRUE(has_line(r.output, "TMPDIR=" + (dir_ / "tmp").string()));
  EXPECT_TRUE(has_line(r.output, "LANG=C"));
  EXPECT_TRUE(has_prefix_line(r.output, "PATH="));
  EXPECT_TRUE(fs::is_directory(dir_ / "tmp"));
}

TEST_F(SandboxTest, PassThroughListAddsNamesAndPrefixesButNeverSecrets) {
  ::setenv("KF_EXTRA_A", "a", 1);
  ::setenv("HF_TOKEN", "hf-secret", 1);
  SandboxOptions options;
  options.pass_through = {"KF_EXTRA_*", "HF_TOKEN"};
  ProcessSpec spec = sandboxed(ProcessSpec{{"env"}, dir_}, options);
  bool extra = false, token = false;
  for (const auto& [name, value] : spec.env) {
    extra = extra || (name == "KF_EXTRA_A" && value == "a");
    token = token || name == "HF_TOKEN";
  }
  EXPECT_TRUE(extra);
  EXPECT_FALSE(token);
  EXPECT_FALSE(spec.inherit_env);
}

TEST_F(SandboxTest, AppliesTheTighterLimit) {
  SandboxOptions options;
  options.file_size_limit_bytes = 1000;
  options.cpu_limit_s = 30;
  ProcessSpec loose;
  loose.work_dir = dir_;
  loose.file_size_limit_bytes = 5000;
  ProcessSpec applied = sandboxed(loose, options);
  EXPECT_EQ(applied.file_size_limit_bytes, 1000u);
  EXPECT_EQ(applied.cpu_limit_s, 30);
  EXPECT_EQ(applied.memory_limit_bytes, 0u);

  ProcessSpec tight = loose;
  tight.file_size_limit_bytes = 10;
  EXPECT_EQ(sandboxed(tight, options).file_size_limit_bytes, 10u);
  EXPECT_GT(sandboxed(ProcessSpec{{"x"}, dir_}).file_size_limit_bytes, 0u);  // on by default
}

TEST(SecretNames, RecognisesCredentialsOnly) {
  for (const char* name :
       {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN", "DB_PASSWORD", "SSH_AUTH_SOCK", "openrouter_api_key", "PRIVATE_KEY"})
    EXPECT_TRUE(is_secret_env_name(name)) << name;
  for (const char* name : {"PATH", "HOME", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
                           "POCL_DEVICES", "KEYBOARD_LAYOUT"})
    EXPECT_FALSE(is_secret_env_name(name)) << name;
}

}  // namespace
}  // namespace kf
