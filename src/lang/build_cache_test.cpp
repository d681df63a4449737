// Tests for run_build(): sandboxed build steps (a source cannot #include files outside what the
// step is given), the content-hash check of cached objects and binaries, and the steps' pause
// group.
#include <sys/stat.h>

#include <mutex>

#include <gtest/gtest.h>

#include "lang/lang.h"
#include "proc/pause_group.h"
#include "proc/sandbox.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

class BuildCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_build_cache_test_");
    ASSERT_TRUE(dir.is_ok()) << dir.message();
    dir_ = *dir;
    ::chmod(dir_.c_str(), 0755);  // reachable by the sandbox's unprivileged user
    src_ = dir_ / "src";
    build_ = dir_ / "build";
    cache_ = dir_ / "cache";
    fs::create_directories(src_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One C source compiled and linked with the system cc.
  BuildPlan plan(const std::string& key) const {
    BuildPlan p;
    BuildStep compile;
    compile.label = "compile main.c";
    compile.output = build_ / "obj" / "main.o";
    compile.argv = {"cc", "-c", (src_ / "main.c").string(), "-o", compile.output.string()};
    compile.cache_key = "obj-" + key;
    p.compiles.push_back(compile);
    p.binary = build_ / "prog";
    p.link.label = "link prog";
    p.link.argv = {"cc", compile.output.string(), "-o", p.binary.string()};
    p.link.cache_key = "bin-" + key;
    return p;
  }

  BuildLimits limits(SandboxMode mode) const {
    BuildLimits l;
    l.timeout_s = 60;
    l.sandbox.mode = mode;
    l.sandbox.read_only_paths = {src_};
    return l;
  }

  fs::path dir_, src_, build_, cache_;
};

TEST_F(BuildCacheTest, SandboxedStepCannotIncludeFilesOutsideItsInputs) {
  if (!sandbox_probe().usable) GTEST_SKIP() << "bwrap is not usable: " << sandbox_probe().problem;
  ASSERT_TRUE(write_file(dir_ / ".env", "OPENAI_API_KEY=sk-leak-through-the-compiler\n"));
  ASSERT_TRUE(write_file(src_ / "main.c", "#include \"" + (dir_ / ".env").string() +
                                              "\"\nint main(void) { return 0; }\n"));
  PosixProcessRunner runner;
  BuildOutcome out = run_build(plan("leak"), cache_, limits(SandboxMode::kBwrap), runner);
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.output.find("No such file"), std::string::npos) << out.output;
  EXPECT_EQ(out.output.find("sk-leak"), std::string::npos) << out.output;

  // Without the sandbox the compiler quotes the file: the leak this stops.
  fs::remove_all(build_);
  BuildOutcome open = run_build(plan("leak"), cache_, limits(SandboxMode::kNone), runner);
  EXPECT_NE(open.output.find("sk-leak"), std::string::npos) << open.output;
}

TEST_F(BuildCacheTest, SandboxedBuildStillBuilds) {
  ASSERT_TRUE(write_file(src_ / "main.c", "int main(void) { return 7; }\n"));
  PosixProcessRunner runner;
  BuildOutcome out = run_build(plan("ok"), cache_, limits(SandboxMode::kAuto), runner);
  ASSERT_TRUE(out.ok) << out.error << out.output;
  ProcessSpec spec;
  spec.argv = {out.binary.string()};
  EXPECT_EQ(runner.run(spec).exit_code, 7);
}

TEST_F(BuildCacheTest, ChangedCacheEntriesAreRebuiltNotUsed) {
  ASSERT_TRUE(write_file(src_ / "main.c", "int main(void) { return 7; }\n"));
  PosixProcessRunner runner;
  BuildOutcome first = run_build(plan("h"), cache_, limits(SandboxMode::kAuto), runner);
  ASSERT_TRUE(first.ok) << first.error << first.output;
  fs::path bin = cache_ / "bin" / "bin-h", obj = cache_ / "obj" / "obj-h.o";
  EXPECT_TRUE(fs::exists(bin.string() + ".sha256"));
  EXPECT_TRUE(fs::exists(obj.string() + ".sha256"));

  BuildOutcome cached = run_build(plan("h"), cache_, limits(SandboxMode::kAuto), runner);
  EXPECT_TRUE(cached.ok);
  EXPECT_EQ(cached.steps_run, 0);

  // A wrapper put in place of the cached binary (and of the object) is not run.
  ASSERT_TRUE(write_file(bin, "#!/bin/sh\nexit 0\n"));
  ASSERT_TRUE(write_file(obj, "not an object"));
  BuildOutcome rebuilt = run_build(plan("h"), cache_, limits(SandboxMode::kAuto), runner);
  ASSERT_TRUE(rebuilt.ok) << rebuilt.error << rebuilt.output;
  EXPECT_EQ(rebuilt.steps_run, 2);
  EXPECT_NE(rebuilt.output.find("[cached binary " + bin.string() +
                                " changed on disk since it was stored; rebuilt]"),
            std::string::npos)
      << rebuilt.output;
  EXPECT_NE(rebuilt.output.find("[cached object " + obj.string() +
                                " changed on disk since it was stored; rebuilt]"),
            std::string::npos)
      << rebuilt.output;
  ProcessSpec spec;
  spec.argv = {rebuilt.binary.string()};
  EXPECT_EQ(runner.run(spec).exit_code, 7);
}

// Runs children for real and records the pause group of each.
class RecordingRunner : public PosixProcessRunner {
 public:
  ProcessResult run(const ProcessSpec& spec) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      groups_.push_back(spec.pause_group);
    }
    return PosixProcessRunner::run(spec);
  }
  std::vector<PauseGroup*> groups() {
    std::lock_guard<std::mutex> lock(mutex_);
    return groups_;
  }

 private:
  std::mutex mutex_;
  std::vector<PauseGroup*> groups_;
};

TEST_F(BuildCacheTest, EveryStepRunsInTheJobsPauseGroup) {
  ASSERT_TRUE(write_file(src_ / "main.c", "int main(void) { return 7; }\n"));
  PauseGroup group;
  BuildLimits l = limits(SandboxMode::kAuto);
  l.pause_group = &group;
  RecordingRunner runner;
  BuildOutcome out = run_build(plan("paused"), cache_, l, runner);
  ASSERT_TRUE(out.ok) << out.error << out.output;
  EXPECT_EQ(out.steps_run, 2);
  EXPECT_EQ(runner.groups(), (std::vector<PauseGroup*>{&group, &group}));
  EXPECT_EQ(out.paused_s, 0);
  EXPECT_EQ(group.size(), 0u);
}

}  // namespace
}  // namespace kf
