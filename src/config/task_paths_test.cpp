// Tests for the paths a task package may set (inside itself only) and for non-UTF-8 values.
#include "config/task_paths.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "util/fs.h"

namespace kf {
namespace {

class TaskPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_task_paths_test_");
    ASSERT_TRUE(dir.is_ok()) << dir.message();
    dir_ = fs::canonical(*dir);
    pkg_ = dir_ / "pkg";
    ASSERT_TRUE(write_file(dir_ / "secret.txt", "hunter2\n").is_ok());
    ASSERT_TRUE(write_file(pkg_ / "seeds" / "start.cl", "// seed\n").is_ok());
    ASSERT_TRUE(make_dirs(pkg_ / "prompts").is_ok());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Composes with the package's config.yaml holding `yaml`, then `args`.
  Result<Config> compose_task(const std::string& yaml, std::vector<std::string> args = {}) {
    EXPECT_TRUE(write_file(pkg_ / "config.yaml", yaml).is_ok());
    ComposeOptions options;
    const char* src = std::getenv("KF_SOURCE_DIR");
    options.config_dir = fs::path(src ? src : KF_TEST_SOURCE_DIR) / "configs";
    options.task_config = pkg_ / "config.yaml";
    options.task_overrides = pkg_ / "overrides.yaml";
    options.args = std::move(args);
    return compose(options);
  }

  fs::path dir_, pkg_;
};

TEST_F(TaskPaths, PackageInputPathsMustStayInsideThePackage) {
  for (const std::string& value :
       {(dir_ / "secret.txt").string(), std::string("../secret.txt"), std::string("/etc/shadow"),
        std::string("seeds/../../secret.txt")}) {
    SCOPED_TRACE(value);
    auto c = compose_task("kernels_iter_0_path: " + value + "\n");
    ASSERT_FALSE(c.is_ok());
    EXPECT_NE(c.message().find("'kernels_iter_0_path' is '" + value + "'"), std::string::npos)
        << c.message();
    EXPECT_NE(c.message().find("config.yaml:1"), std::string::npos) << c.message();
    EXPECT_NE(c.message().find("outside the task package"), std::string::npos);
    EXPECT_NE(c.message().find("set kernels_iter_0_path=" + value + " on the command line"),
              std::string::npos);
  }
  // A symlink inside the package that leads out of it is resolved before the check.
  fs::create_symlink(dir_ / "secret.txt", pkg_ / "seeds" / "link.cl");
  EXPECT_FALSE(compose_task("kernels_iter_0_path: seeds/link.cl\n").is_ok());
  auto tpl = compose_task("prompt:\n  template_dir: ..\n");
  ASSERT_FALSE(tpl.is_ok());
  EXPECT_NE(tpl.message().find("'prompt.template_dir' is '..'"), std::string::npos);
  auto replay =
      compose_task("inference:\n  servers:\n    - server_type: replay\n      replay_path: /tmp\n");
  ASSERT_FALSE(replay.is_ok());
  EXPECT_NE(replay.message().find("'inference.servers[0].replay_path' is '/tmp'"),
            std::string::npos)
      << replay.message();
}

TEST_F(TaskPaths, PackageInputPathsInsideAreTakenRelativeToThePackage) {
  auto c = compose_task("kernels_iter_0_path: seeds/start.cl\nprompt:\n  template_dir: prompts\n");
  ASSERT_TRUE(c.is_ok()) << c.message();
  EXPECT_EQ(c->get_string("kernels_iter_0_path"), (pkg_ / "seeds" / "start.cl").string());
  EXPECT_EQ(c->get_string("prompt.template_dir"), (pkg_ / "prompts").string());
  EXPECT_NE(c->origin("kernels_iter_0_path").describe().find("config.yaml:1"), std::string::npos);
  // `best`, `best-<job>` and `best-<job1>/<job2>` name stored kernels, not files.
  for (const char* value : {"best", "best-other_job", "best-jobA/jobB"}) {
    auto b = compose_task(std::string("kernels_iter_0_path: ") + value + "\n");
    ASSERT_TRUE(b.is_ok()) << b.message();
    EXPECT_EQ(b->get_string("kernels_iter_0_path"), value);
  }
}

TEST_F(TaskPaths, PackageOutputPathsMustBeRelativeWithoutDotDot) {
  for (std::string key : {"kernels_db_path", "logdir", "results_dir", "cache_dir"}) {
    for (const std::string& value :
         {std::string("/tmp/x"), std::string("../x"), std::string("runs/../../x")}) {
      SCOPED_TRACE(key + "=" + value);
      auto c = compose_task("paths:\n  " + key + ": " + value + "\n");
      ASSERT_FALSE(c.is_ok());
      EXPECT_NE(c.message().find("'paths." + key + "' is '" + value + "' ("), std::string::npos)
          << c.message();
      EXPECT_NE(c.message().find("config.yaml:2"), std::string::npos) << c.message();
      EXPECT_NE(c.message().find("on the command line if you mean it"), std::string::npos);
    }
  }
  auto ok = compose_task("paths:\n  logdir: my_runs/here\n");
  ASSERT_TRUE(ok.is_ok()) << ok.message();
  EXPECT_EQ(ok->get_string("paths.logdir"), "my_runs/here");
}

TEST_F(TaskPaths, TheSameValuesFromTheCommandLineAreTheUsersChoice) {
  const std::string secret = (dir_ / "secret.txt").string();
  auto c = compose_task("kernels_iter_0_path: /etc/shadow\npaths:\n  logdir: /tmp/x\n",
                        {"kernels_iter_0_path=" + secret, "paths.logdir=" + dir_.string()});
  ASSERT_TRUE(c.is_ok()) << c.message();
  EXPECT_EQ(c->get_string("kernels_iter_0_path"), secret);
  EXPECT_EQ(c->get_string("paths.logdir"), dir_.string());
}

TEST_F(TaskPaths, NonUtf8ValuesAreErrorsNamingFileAndLine) {
  // A comment may hold any bytes; a value must be text.
  auto comment = compose_task("# caf\xe9\ntask_name: t # \xff\xfe\n");
  ASSERT_TRUE(comment.is_ok()) << comment.message();
  EXPECT_EQ(comment->get_string("task_name"), "t");
  auto value = compose_task("# ok\ntask_name: caf\xe9\n");
  ASSERT_FALSE(value.is_ok());
  EXPECT_NE(value.message().find("the value of 'task_name' is not valid UTF-8 text ("),
            std::string::npos)
      << value.message();
  EXPECT_NE(value.message().find("config.yaml:2"), std::string::npos) << value.message();
  EXPECT_NE(value.message().find("got 'caf\\xe9'"), std::string::npos) << value.message();
  auto arg = compose_task("task_name: t\n", {"paths.logdir=r\xff"});
  ASSERT_FALSE(arg.is_ok());
  EXPECT_NE(arg.message().find("'paths.logdir' is not valid UTF-8 text (command line argument "
                               "'paths.logdir=r\\xff')"),
            std::string::npos)
      << arg.message();
}

TEST_F(TaskPaths, PackageCannotRaiseTheLimits) {
  auto raised = compose_task("limits:\n  branches_per_iteration: 10000\n");
  ASSERT_FALSE(raised.is_ok());
  EXPECT_NE(raised.message().find("'limits.branches_per_iteration' is set by the task package"),
            std::string::npos)
      << raised.message();
  EXPECT_NE(raised.message().find("config.yaml:2"), std::string::npos) << raised.message();
  // The user may raise it.
  auto user = compose_task("max_iters: 2\n", {"limits.branches_per_iteration=10000"});
  EXPECT_TRUE(user.is_ok()) << user.message();
}

}  // namespace
}  // namespace kf
