// Tests for the timing gate (PauseGroup): paused children make no progress and continue after,
// a child is not started inside a pause, paused time is not counted as a timeout, pauses nest,
// and a sandboxed child (its command setsid()'d out of the group) stops too.
#include "proc/pause_group.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "proc/process.h"
#include "proc/sandbox.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

using namespace std::chrono_literals;

// Waits up to 20 s (a generous bound on a loaded machine, never a measure of speed).
bool eventually(const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

// The process state letter /proc shows ('R', 'S', 'T', ...), '?' when it is gone.
char state_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return '?';
  size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ? '?' : text[paren + 2];
}

uintmax_t size_of(const fs::path& path) {
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

class PauseGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_pause_group_test_");
    ASSERT_TRUE(dir.is_ok()) << dir.message();
    dir_ = *dir;
    // Reachable and writable by a sandbox's unprivileged user.
    ::chmod(dir_.c_str(), 0777);
  }
  void TearDown() override {
    if (runner_thread_.joinable()) {
      (void)write_file(dir_ / "stop", "");
      runner_thread_.join();
    }
    fs::remove_all(dir_);
  }

  // A child that appends a line to `ticks` every 10 ms (through a fresh `sleep` process each
  // time) until the file `stop` appears.
  ProcessSpec ticker() {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c",
                 "while [ ! -e stop ]; do echo tick >> ticks; sleep 0.01; done; echo stopped"};
    spec.work_dir = dir_;
    spec.timeout_s = 120;
    spec.pause_group = &group_;
    return spec;
  }

  void start(ProcessSpec spec) {
    runner_thread_ = std::thread([this, spec] { result_ = PosixProcessRunner().run(spec); });
  }
  ProcessResult finish() {
    EXPECT_TRUE(write_file(dir_ / "stop", ""));
    runner_thread_.join();
    return result_;
  }

  // Paused: the file stays as it is for a while; resumed: it grows again.
  void expect_pause_stops(const fs::path& ticks) {
    ASSERT_TRUE(eventually([&] { return size_of(ticks) >= 3 * 5; })) << "the child never ticked";
    ASSERT_TRUE(eventually([&] { return group_.size() == 1; }));
    group_.pause();
    uintmax_t at_pause = size_of(ticks);
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(size_of(ticks), at_pause) << "the child ran on while paused";
    group_.resume();
    EXPECT_TRUE(eventually([&] { return size_of(ticks) > at_pause; }))
        << "the child did not continue after resume()";
  }

  fs::path dir_;
  PauseGroup group_;
  std::thread runner_thread_;
  ProcessResult result_;
};

TEST_F(PauseGroupTest, PausedChildMakesNoProgressAndContinuesAfter) {
  start(ticker());
  expect_pause_stops(dir_ / "ticks");
  ProcessResult r = finish();
  EXPECT_TRUE(r.success()) << r.describe() << r.output;
  EXPECT_NE(r.output.find("stopped"), std::string::npos) << r.output;
  EXPECT_GE(r.paused_s, 0.4);
  EXPECT_EQ(group_.size(), 0u);  // unregistered when it ended
}

TEST_F(PauseGroupTest, ChildStartedWhilePausedDoesNotRunUntilResumed) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo ran > ran.txt"};
  spec.work_dir = dir_;
  spec.pause_group = &group_;
  ProcessResult r;
  group_.pause();
  std::thread runner([&] { r = PosixProcessRunner().run(spec); });
  std::this_thread::sleep_for(500ms);
  EXPECT_FALSE(fs::exists(dir_ / "ran.txt")) << "the child ran inside the pause";
  EXPECT_EQ(group_.size(), 0u);
  group_.resume();
  runner.join();
  EXPECT_TRUE(r.success()) << r.describe() << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "ran.txt"));
  EXPECT_GE(r.paused_s, 0.4);  // the wait counts as paused time
}

TEST_F(PauseGroupTest, ChildRegisteredWhilePausedStopsAtOnce) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::execl("/bin/sh", "sh", "-c", "while :; do :; done", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(pid, 0);
  ::setpgid(pid, pid);
  ASSERT_TRUE(eventually([&] { return state_of(pid) == 'R'; }));
  group_.pause();
  group_.add(pid);
  EXPECT_EQ(state_of(pid), 'T');  // pause bookkeeping waits until the kernel shows it stopped
  group_.resume();
  EXPECT_TRUE(eventually([&] { return state_of(pid) != 'T'; }));
  group_.remove(pid);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

TEST_F(PauseGroupTest, PausedTimeIsNotCountedAsTimeoutOrInactivity) {
  ProcessSpec spec;
  // Silent until the test creates `go` after the pause: over 2 s of wall-clock time, longer than
  // both 1 s limits, but only a moment of its own.
  spec.argv = {"/bin/sh", "-c",
               "touch started; while [ ! -e go ]; do sleep 0.05; done; echo finished"};
  spec.work_dir = dir_;
  spec.timeout_s = 1;
  spec.inactivity_timeout_s = 1;
  spec.pause_group = &group_;
  start(spec);
  ASSERT_TRUE(eventually([&] { return fs::exists(dir_ / "started"); }));
  group_.pause();
  std::this_thread::sleep_for(2s);
  group_.resume();
  ASSERT_TRUE(write_file(dir_ / "go", ""));
  runner_thread_.join();
  EXPECT_TRUE(result_.success()) << result_.describe() << result_.output;
  EXPECT_FALSE(result_.timed_out);
  EXPECT_FALSE(result_.inactive);
  EXPECT_NE(result_.output.find("finished"), std::string::npos) << result_.output;
  EXPECT_GE(result_.wall_s, 2.0);
  EXPECT_GE(result_.paused_s, 1.9);

  // The limits still hold for the time it runs.
  ProcessSpec slow = spec;
  slow.argv = {"/bin/sh", "-c", "sleep 5"};
  ProcessResult r = PosixProcessRunner().run(slow);
  EXPECT_TRUE(r.timed_out || r.inactive) << r.describe();
}

TEST_F(PauseGroupTest, PauseDuringTheOutputDrainDoesNotCutItShort) {
  ProcessSpec spec;
  // The leader exits at once; a background grandchild still holds the output for 0.3 s, within
  // the runner's 0.5 s drain, which a 1.5 s pause must not use up.
  spec.argv = {"/bin/sh", "-c", "(sleep 0.3; echo late-output) & touch started; exit 0"};
  spec.work_dir = dir_;
  spec.pause_group = &group_;
  start(spec);
  ASSERT_TRUE(eventually([&] { return fs::exists(dir_ / "started"); }));
  group_.pause();
  std::this_thread::sleep_for(1500ms);
  group_.resume();
  runner_thread_.join();
  EXPECT_TRUE(result_.success()) << result_.describe();
  EXPECT_NE(result_.output.find("late-output"), std::string::npos) << result_.output;
}

TEST_F(PauseGroupTest, NestedHoldsResumeAtTheLastOne) {
  start(ticker());
  ASSERT_TRUE(eventually([&] { return size_of(dir_ / "ticks") > 0 && group_.size() == 1; }));
  {
    PauseGroup::Hold outer(&group_);
    {
      PauseGroup::Hold inner(&group_);
      EXPECT_TRUE(group_.paused());
    }
    EXPECT_TRUE(group_.paused());  // the outer hold still stands
    uintmax_t size = size_of(dir_ / "ticks");
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(size_of(dir_ / "ticks"), size) << "the inner hold's end resumed the child";
  }
  EXPECT_FALSE(group_.paused());
  EXPECT_EQ(group_.pauses(), 1);
  group_.resume();  // unmatched: nothing happens
  EXPECT_FALSE(group_.paused());
  uintmax_t size = size_of(dir_ / "ticks");
  EXPECT_TRUE(eventually([&] { return size_of(dir_ / "ticks") > size; }));
  PauseGroup::Hold none(nullptr);  // a null group is allowed
  EXPECT_TRUE(finish().success());
}

TEST_F(PauseGroupTest, SandboxedChildStopsToo) {
  const SandboxProbe& probe = sandbox_probe();
  if (!probe.usable) GTEST_SKIP() << "bwrap is not usable here: " << probe.problem;
  SandboxOptions options;
  options.mode = SandboxMode::kBwrap;
  options.create_tmp_dir = false;
  ProcessSpec spec = sandboxed(ticker(), options);
  ASSERT_EQ(fs::path(spec.argv[0]).filename(), "bwrap");
  ASSERT_EQ(spec.pause_group, &group_);
  start(spec);
  // The command runs setsid()'d in the sandbox's PID namespace, outside the wrapper's group.
  expect_pause_stops(dir_ / "ticks");
  ProcessResult r = finish();
  EXPECT_TRUE(r.success()) << r.describe() << r.output;
}

}  // namespace
}  // namespace kf
