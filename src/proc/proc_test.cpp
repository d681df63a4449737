// Tests for the process runners: exit codes, signals, timeouts and group kills, output capture,
// stdin, start errors, resource limits, parallel runs, and the scripted fake.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "proc/output_capture.h"
#include "proc/process.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

ProcessSpec shell(const std::string& script) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  return spec;
}

// Alive = listed in /proc and not a zombie (an orphaned zombie may wait for a slow init).
bool process_alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return false;
  char state = text[paren + 2];
  return state != 'Z' && state != 'X';
}

// Polls for up to a second: the kernel delivers SIGKILL asynchronously.
bool dies_soon(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    if (!process_alive(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class ProcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_proc_test_");
    ASSERT_TRUE(dir.is_ok()) << dir.message();
    dir_ = *dir;
  }
  void TearDown() override { fs::remove_all(dir_); }

  pid_t read_pid(const std::string& name) {
    auto text = read_file(dir_ / name);
    EXPECT_TRUE(text.is_ok()) << text.message();
    return text.is_ok() ? static_cast<pid_t>(std::stol(trim(*text))) : -1;
  }

  fs::path dir_;
  PosixProcessRunner runner_;
};

TEST_F(ProcTest, ReportsExitCodes) {
  ProcessResult ok = runner_.run(shell("exit 0"));
  EXPECT_TRUE(ok.started);
  EXPECT_TRUE(ok.success());
  EXPECT_EQ(ok.describe(), "exit code 0");

  ProcessResult three = runner_.run(shell("exit 3"));
  EXPECT_TRUE(three.started);
  EXPECT_FALSE(three.success());
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_EQ(three.term_signal, 0);
  EXPECT_EQ(three.describe(), "exit code 3");
}

TEST_F(ProcTest, MergesStdoutAndStderrInOrder) {
  ProcessResult r = runner_.run(shell("echo out; echo err >&2; echo out2"));
  EXPECT_EQ(r.output, "out\nerr\nout2\n");
  EXPECT_EQ(r.output_bytes, r.output.size());
}

TEST_F(ProcTest, ReportsDeathBySignal) {
  ProcessResult r = runner_.run(shell("kill -SEGV $$"));
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.term_signal, SIGSEGV);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.describe(), "killed by SIGSEGV (segmentation fault)");
}

TEST_F(ProcTest, TimeoutKillsTheWholeGroupIncludingGrandchildren) {
  ProcessSpec spec = shell("sleep 100 & echo $! > grandchild.pid; wait");
  spec.work_dir = dir_;
  spec.timeout_s = 0.3;
  ProcessResult r = runner_.run(spec);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.term_signal, SIGTERM);
  EXPECT_LT(r.wall_s, 3.0);
  EXPECT_EQ(r.describe(), "timed out after 0.3 s");
  pid_t grandchild = read_pid("grandchild.pid");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dies_soon(grandchild)) << "grandchild " << grandchild << " survived the timeout";
}

TEST_F(ProcTest, TimeoutEscalatesToSigkillWhenSigtermIsIgnored) {
  PosixProcessRunner quick(/*kill_grace_s=*/0.2);
  ProcessSpec spec = shell("trap '' TERM; sleep 100 & echo $! > grandchild.pid; wait");
  spec.work_dir = dir_;
  spec.timeout_s = 0.2;
  ProcessResult r = quick.run(spec);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_LT(r.wall_s, 3.0);
  pid_t grandchild = read_pid("grandchild.pid");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dies_soon(grandchild));
}

TEST_F(ProcTest, CancelStopsRunningChildrenAndRefusesNewOnes) {
  ProcessSpec spec = shell("sleep 100 & echo $! > grandchild.pid; wait");
  spec.work_dir = dir_;
  spec.timeout_s = 60;
  std::thread ctrl_c([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel_processes();
  });
  ProcessResult r = runner_.run(spec);
  ctrl_c.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.success());
  EXPECT_LT(r.wall_s, 5.0) << "a cancelled child must not run to its 60 s timeout";
  EXPECT_EQ(r.describe(), "stopped: the job is stopping (Ctrl-C)");
  pid_t grandchild = read_pid("grandchild.pid");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dies_soon(grandchild));

  ProcessResult refused = runner_.run(shell("echo should not run"));
  EXPECT_FALSE(refused.started);
  EXPECT_TRUE(refused.cancelled);
  EXPECT_EQ(refused.output, "");
  reset_process_cancel();
  EXPECT_TRUE(runner_.run(shell("true")).success());
}

TEST_F(ProcTest, InactivityTimeoutKillsSilentChild) {
  ProcessSpec spec = shell("echo start; sleep 100");
  spec.inactivity_timeout_s = 0.3;
  ProcessResult r = runner_.run(spec);
  EXPECT_TRUE(r.inactive);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.output, "start\n");
  EXPECT_LT(r.wall_s, 3.0);
  EXPECT_EQ(r.describe(), "no output for 0.3 s (inactivity timeout)");
}

TEST_F(ProcTest, InactivityTimeoutSparesChildThatKeepsTalking) {
  // 0.8 s in total, but never silent for 0.4 s.
  ProcessSpec spec = shell("for i in 1 2 3 4; do echo tick; sleep 0.2; done");
  spec.inactivity_timeout_s = 0.4;
  ProcessResult r = runner_.run(spec);
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.output, "tick\ntick\ntick\ntick\n");
}

TEST_F(ProcTest, OutputCapKeepsHeadAndTail) {
  ProcessSpec spec =
      shell("echo BEGIN; i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done; echo END");
  spec.output_cap = 1000;
  ProcessResult r = runner_.run(spec);
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_TRUE(starts_with(r.output, "BEGIN\nline0\n")) << r.output.substr(0, 50);
  EXPECT_TRUE(ends_with(r.output, "line1999\nEND\n"));
  EXPECT_NE(r.output.find("bytes of output cut"), std::string::npos);
  EXPECT_LT(r.output.size(), 1100u);
  EXPECT_GT(r.output_bytes, 15000u);  // the full length, not the kept one
}

TEST_F(ProcTest, LargeOutputDoesNotDeadlock) {
  ProcessResult r = runner_.run({{"head", "-c", "10000000", "/dev/zero"}});
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.output_bytes, 10000000u);
  EXPECT_LE(r.output.size(), (1u << 20) + 100);
}

TEST_F(ProcTest, StdinIsFedWhileOutputIsRead) {
  // cat echoes as it reads: 4 MB in and out at once deadlocks a runner that writes stdin first.
  ProcessSpec spec;
  spec.argv = {"cat"};
  spec.stdin_data = std::string(4 << 20, 'x');
  spec.output_cap = 16;
  ProcessResult r = runner_.run(spec);
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.output_bytes, 4u << 20);

  spec.stdin_data = "hello";
  spec.output_cap = 1 << 20;
  EXPECT_EQ(runner_.run(spec).output, "hello");
}

TEST_F(ProcTest, EmptyStdinIsDevNull) {
  ProcessSpec spec;
  spec.argv = {"cat"};
  spec.timeout_s = 5;
  ProcessResult r = runner_.run(spec);
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.output, "");
}

TEST_F(ProcTest, ChildThatStopsReadingStdinDoesNotHurtUs) {
  ProcessSpec spec = shell("exec 0<&-; echo closed");
  spec.stdin_data = std::string(1 << 20, 'x');
  ProcessResult r = runner_.run(spec);  // a SIGPIPE here would kill the test binary
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.output, "closed\n");
}

TEST_F(ProcTest, MissingExecutableGivesClearStartError) {
  ProcessResult r = runner_.run({{"kf-no-such-tool-xyz", "--version"}});
  EXPECT_FALSE(r.started);
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.start_error, "cannot run 'kf-no-such-tool-xyz': not found in PATH");
  EXPECT_EQ(r.describe(), r.start_error);

  ProcessSpec in_missing_dir = shell("true");
  in_missing_dir.work_dir = dir_ / "absent";
  ProcessResult r2 = runner_.run(in_missing_dir);
  EXPECT_FALSE(r2.started);
  EXPECT_NE(r2.start_error.find("working directory"), std::string::npos) << r2.start_error;

  ASSERT_TRUE(write_file(dir_ / "data.txt", "not a program").is_ok());
  ProcessSpec not_executable;
  not_executable.argv = {"./data.txt"};
  not_executable.work_dir = dir_;
  ProcessResult r3 = runner_.run(not_executable);
  EXPECT_FALSE(r3.started);
  EXPECT_NE(r3.start_error.find("not an executable file"), std::string::npos) << r3.start_error;

  EXPECT_FALSE(runner_.run(ProcessSpec{}).started);
}

TEST_F(ProcTest, FindsProgramsInTheChildsPathAndWorkDir) {
  fs::create_directories(dir_ / "bin");
  ASSERT_TRUE(write_file(dir_ / "bin" / "kf-tool", "#!/bin/sh\necho tool $1\n").is_ok());
  fs::permissions(dir_ / "bin" / "kf-tool", fs::perms::owner_all);
  ProcessSpec spec;
  spec.argv = {"kf-tool", "ran"};
  spec.env = {{"PATH", (dir_ / "bin").string() + ":/usr/bin:/bin"}};
  EXPECT_EQ(runner_.run(spec).output, "tool ran\n");

  ProcessSpec relative;
  relative.argv = {"./bin/kf-tool", "here"};
  relative.work_dir = dir_;
  EXPECT_EQ(runner_.run(relative).output, "tool here\n");
}

TEST_F(ProcTest, RunsInWorkDirWithGivenEnvironment) {
  ProcessSpec spec = shell("pwd; echo \"$KF_TEST_VAR\"");
  spec.work_dir = dir_;
  spec.env = {{"KF_TEST_VAR", "value 1"}};
  ProcessResult r = runner_.run(spec);
  EXPECT_EQ(r.output, fs::canonical(dir_).string() + "\nvalue 1\n");

  ::setenv("KF_PROC_TEST_INHERITED", "yes", 1);
  ProcessSpec inherit = shell("echo \"${KF_PROC_TEST_INHERITED:-unset}\"");
  EXPECT_EQ(runner_.run(inherit).output, "yes\n");
  inherit.inherit_env = false;
  EXPECT_EQ(runner_.run(inherit).output, "unset\n");
  ::unsetenv("KF_PROC_TEST_INHERITED");
}

TEST_F(ProcTest, NoFileDescriptorsLeakIntoTheChild) {
  // Deliberately without O_CLOEXEC, as a careless library would open it.
  int opened = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(opened, 0);
  ASSERT_EQ(::dup2(opened, 57), 57);
  ::close(opened);
  ProcessResult r = runner_.run(shell("for f in /proc/$$/fd/*; do echo ${f##*/}; done"));
  ::close(57);
  std::vector<std::string> fds = split_lines(r.output);
  // 0-2 are its std fds; 3, if present, is the directory the glob itself is reading.
  if (fds.size() == 4 && fds[3] == "3") fds.pop_back();
  EXPECT_EQ(fds, (std::vector<std::string>{"0", "1", "2"})) << r.output;
}

TEST_F(ProcTest, DaemonisedGrandchildHoldingThePipeDoesNotHang) {
  ProcessSpec spec = shell("sleep 100 & echo $! > grandchild.pid; echo started");
  spec.work_dir = dir_;
  ProcessResult r = runner_.run(spec);
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.output, "started\n");
  EXPECT_LT(r.wall_s, 3.0);
  pid_t grandchild = read_pid("grandchild.pid");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dies_soon(grandchild));
}

TEST_F(ProcTest, MemoryLimitMakesBigAllocationFail) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "needs /usr/bin/python3";
  ProcessSpec spec;
  spec.argv = {"/usr/bin/python3", "-c", "x = bytearray(400 * 1024 * 1024); print('allocated')"};
  ProcessResult unlimited = runner_.run(spec);
  ASSERT_TRUE(unlimited.success()) << unlimited.describe() << unlimited.output;
  spec.memory_limit_bytes = 200ull << 20;
  ProcessResult limited = runner_.run(spec);
  EXPECT_FALSE(limited.success());
  EXPECT_NE(limited.output.find("MemoryError"), std::string::npos) << limited.output;
}

TEST_F(ProcTest, FileSizeLimitStopsBigWrites) {
  ProcessSpec spec = shell("exec head -c 2000000 /dev/zero > big");
  spec.work_dir = dir_;
  spec.file_size_limit_bytes = 1 << 20;
  ProcessResult r = runner_.run(spec);
  EXPECT_EQ(r.term_signal, SIGXFSZ) << r.describe();
  EXPECT_LE(fs::file_size(dir_ / "big"), 1u << 20);
}

TEST_F(ProcTest, CpuLimitStopsBusyLoop) {
  ProcessSpec spec = shell("while :; do :; done");
  spec.cpu_limit_s = 0.5;  // rounded up to 1 s of CPU
  spec.timeout_s = 10;
  ProcessResult r = runner_.run(spec);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGXCPU) << r.describe();
}

TEST_F(ProcTest, RunAllRunsConcurrentlyAndKeepsOrder) {
  auto start = std::chrono::steady_clock::now();
  std::vector<ProcessResult> two = runner_.run_all({shell("sleep 0.5"), shell("sleep 0.5")}, 2);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(two.size(), 2u);
  EXPECT_TRUE(two[0].success() && two[1].success());
  EXPECT_LT(elapsed, 0.95) << "two 0.5 s sleeps did not overlap";

  // The slow first one must still come first.
  std::vector<ProcessResult> ordered =
      runner_.run_all({shell("sleep 0.2; echo a"), shell("echo b"), shell("echo c")}, 3);
  ASSERT_EQ(ordered.size(), 3u);
  EXPECT_EQ(ordered[0].output, "a\n");
  EXPECT_EQ(ordered[1].output, "b\n");
  EXPECT_EQ(ordered[2].output, "c\n");
}

TEST_F(ProcTest, RunAllRespectsTheParallelBound) {
  auto start = std::chrono::steady_clock::now();
  std::vector<ProcessSpec> specs(4, shell("sleep 0.25"));
  std::vector<ProcessResult> results = runner_.run_all(specs, 2);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(results.size(), 4u);
  EXPECT_GE(elapsed, 0.5) << "more than 2 ran at once";
  EXPECT_TRUE(runner_.run_all({}, 4).empty());
}

TEST(OutputCapture, KeepsEverythingUnderTheCap) {
  OutputCapture capture(10);
  capture.append("abc", 3);
  capture.append("defg", 4);
  EXPECT_EQ(capture.total_bytes(), 7u);
  EXPECT_EQ(capture.take(), "abcdefg");
}

TEST(OutputCapture, KeepsHeadAndTailOfChunkedInput) {
  OutputCapture capture(8);
  std::string all;
  for (int i = 0; i < 100; ++i) {
    std::string chunk = std::to_string(i) + ",";
    all += chunk;
    capture.append(chunk.data(), chunk.size());
  }
  std::string kept = capture.take();
  EXPECT_TRUE(starts_with(kept, all.substr(0, 4))) << kept;
  EXPECT_TRUE(ends_with(kept, all.substr(all.size() - 4))) << kept;
  EXPECT_NE(kept.find("[... " + std::to_string(all.size() - 8) + " bytes"), std::string::npos);
}

TEST(FakeProcessRunner, AnswersFromQueueThenHandlerAndRecordsSpecs) {
  FakeProcessRunner fake;
  fake.push(FakeProcessRunner::exited(0, "built"));
  fake.push(FakeProcessRunner::killed(SIGSEGV));
  fake.set_handler([](const ProcessSpec& spec) {
    return FakeProcessRunner::exited(7, "handled " + spec.argv.at(0));
  });
  EXPECT_EQ(fake.run({{"nvcc"}}).output, "built");
  EXPECT_EQ(fake.run({{"./test"}}).describe(), "killed by SIGSEGV (segmentation fault)");
  ProcessResult third = fake.run({{"./bench"}});
  EXPECT_EQ(third.exit_code, 7);
  EXPECT_EQ(third.output, "handled ./bench");
  ASSERT_EQ(fake.calls(), 3u);
  EXPECT_EQ(fake.specs()[1].argv[0], "./test");
}

TEST(FakeProcessRunner, UnscriptedCallIsAStartError) {
  FakeProcessRunner fake;
  ProcessResult r = fake.run({{"nvcc"}});
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.start_error.find("no scripted result for 'nvcc'"), std::string::npos);
}

TEST(FakeProcessRunner, RunAllKeepsOrderWithConcurrentHandler) {
  FakeProcessRunner fake([](const ProcessSpec& spec) {
    std::this_thread::sleep_for(std::chrono::milliseconds(spec.argv[0] == "0" ? 50 : 0));
    return FakeProcessRunner::exited(0, spec.argv[0]);
  });
  std::vector<ProcessSpec> specs;
  for (int i = 0; i < 6; ++i) specs.push_back({{std::to_string(i)}});
  std::vector<ProcessResult> results = fake.run_all(specs, 3);
  ASSERT_EQ(results.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(results[i].output, std::to_string(i));
  EXPECT_EQ(fake.calls(), 6u);
}

TEST(ProcessResult, DescribesEachOutcome) {
  EXPECT_EQ(FakeProcessRunner::timeout(10).describe(), "timed out after 10.0 s");
  ProcessResult silent = FakeProcessRunner::killed(SIGTERM);
  silent.inactive = true;
  silent.limit_s = 60;
  EXPECT_EQ(silent.describe(), "no output for 60 s (inactivity timeout)");
  EXPECT_FALSE(silent.success());
  EXPECT_EQ(describe_signal(SIGABRT), "SIGABRT (aborted)");
  EXPECT_EQ(describe_signal(63), "signal 63");
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

// A line-by-line service: answers "got <line>" then "end <line>"; "die" exits 3; "slow" sleeps.
ProcessSpec echo_service() {
  return shell(
      "while read -r line; do case \"$line\" in die) exit 3;; slow) sleep 30;; esac; "
      "echo \"got $line\"; echo \"end $line\"; done");
}

TEST(ServiceProcess, AnswersRequestsInTurnUpToTheEndLine) {
  PosixProcessRunner runner;
  auto service = runner.start_service(echo_service());
  ASSERT_TRUE(service) << service.message();
  for (const char* word : {"one", "two"}) {
    std::string output;
    auto rest = (*service)->request(word, std::string("end "), 10, &output);
    ASSERT_TRUE(rest) << rest.message();
    EXPECT_EQ(*rest, word);
    EXPECT_EQ(output, std::string("got ") + word + "\n");
  }
  EXPECT_TRUE((*service)->running());
}

TEST(ServiceProcess, AChildThatExitsIsAnErrorNamingHowItEnded) {
  PosixProcessRunner runner;
  auto service = runner.start_service(echo_service());
  ASSERT_TRUE(service) << service.message();
  auto rest = (*service)->request("die", "end ", 10, nullptr);
  ASSERT_FALSE(rest);
  EXPECT_NE(rest.message().find("exited"), std::string::npos) << rest.message();
  EXPECT_NE(rest.message().find("exit code 3"), std::string::npos) << rest.message();
  EXPECT_FALSE((*service)->running());
  EXPECT_FALSE((*service)->request("one", "end ", 10, nullptr));
}

TEST(ServiceProcess, NoAnswerWithinTheTimeoutKillsTheWholeGroup) {
  PosixProcessRunner runner;
  auto service = runner.start_service(echo_service());
  ASSERT_TRUE(service) << service.message();
  auto start = std::chrono::steady_clock::now();
  auto rest = (*service)->request("slow", "end ", 0.3, nullptr);
  ASSERT_FALSE(rest);
  EXPECT_NE(rest.message().find("no answer within"), std::string::npos) << rest.message();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
  EXPECT_FALSE((*service)->running());
}

TEST(ServiceProcess, EndsWithItsOwnerAndTheFakeRunnerStartsNone) {
  PosixProcessRunner runner;
  pid_t pid = -1;
  {
    auto service = runner.start_service(shell("echo pid $$; echo \"end $$\"; exec sleep 60"));
    ASSERT_TRUE(service) << service.message();
    auto rest = (*service)->request("", "end ", 10, nullptr);
    ASSERT_TRUE(rest) << rest.message();
    pid = std::stoi(*rest);
    EXPECT_TRUE(process_alive(pid));
  }
  EXPECT_FALSE(process_alive(pid));
  FakeProcessRunner fake;
  EXPECT_FALSE(fake.start_service(echo_service()));
}

}  // namespace
}  // namespace kf
