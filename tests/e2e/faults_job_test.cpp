// End-to-end fault tests (issue 7), job: bounds on branches, the first Ctrl-C stopping a job
// within seconds (a hanging candidate included) and resume finishing it, a killed job read as
// interrupted, a second resume of a live job refused, progress lines kept when stdout is a file,
// and a failed start giving its job name back.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "e2e/cli_helpers.h"
#include "llm_server/llm_server_fixture.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// As cli_helpers.h's, with the text shown cut to 4000 characters (these outputs are long).
#undef EXPECT_CONTAINS
#define EXPECT_CONTAINS(haystack, needle)                                                       \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing: " << (needle) << "\nin:\n" \
                                                        << (haystack).substr(0, 4000)

std::string cpp_answer(const std::string& file) {
  return "Here it is.\n\n```cpp\n" + file_text(candidate("reduction_cpp", file)) + "```\n";
}

std::string server_arg(const LlmTestServer& server) {
  return "inference.servers=[{server_type: openai, model_name: scripted, base_url: '" +
         server.base_url_openai() + "', timeout: 60, max_retry: 0}]";
}

std::vector<std::string> job_args(const Scratch& scratch, const std::string& job_name,
                                  std::vector<std::string> more) {
  std::vector<std::string> args = {"run", "task=" + example("reduction_cpp").string(),
                                   "job_name=" + job_name};
  for (const auto& a : scratch.isolation_args()) args.push_back(a);
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Polls until `done` holds or `timeout_s` passes.
template <typename F>
bool wait_for(F done, double timeout_s) {
  auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (Clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

std::optional<JobRecord> job_row(const Scratch& scratch, const std::string& name) {
  if (!db_started(scratch.db())) return std::nullopt;
  auto store = Store::open(scratch.db());
  if (!store) return std::nullopt;
  auto job = (*store)->job(name);
  if (!job || !job->has_value()) return std::nullopt;
  return **job;
}

// Waits until the job's row names `pid` as its owner (the run has taken the job).
bool wait_for_owner(const Scratch& scratch, const std::string& name, pid_t pid) {
  return wait_for(
      [&] {
        auto row = job_row(scratch, name);
        return row && row->owner_pid == pid;
      },
      60);
}

// The status column of `kernelfoundry jobs` for `name`.
std::string listed_status(const Scratch& scratch, const std::string& name) {
  CliRun jobs = scratch.run({"jobs", "paths.kernels_db_path=" + scratch.db().string()});
  for (const std::string& line : split_lines(jobs.output)) {
    auto cols = split(line, ' ');
    std::vector<std::string> words;
    for (const auto& c : cols)
      if (!c.empty()) words.push_back(c);
    if (words.size() >= 5 && words[0] == name) return words[4];
  }
  return "";
}

int answered(const LlmTestServer& server) {
  int n = 0;
  for (const auto& line : server.log_lines()) n += line.value("status", 0) == 200;
  return n;
}

TEST(FaultsJob, TenThousandBranchesAreRefusedBeforeAnyCall) {
  Scratch scratch;
  nlohmann::json script = {{"default", {{"content", cpp_answer("correct.cpp")}}}};
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();
  CliRun run = scratch.run(
      job_args(scratch, "wide", {"branches_per_iteration=10000", server_arg(**server)}));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_CONTAINS(run.output, "'branches_per_iteration' is 10000");
  EXPECT_CONTAINS(run.output, "limits.branches_per_iteration (64)");
  EXPECT_CONTAINS(run.output, "limits.branches_per_iteration=10000");
  EXPECT_TRUE(server.value()->log_lines().empty()) << "no LLM call was made";
  EXPECT_FALSE(job_row(scratch, "wide").has_value()) << "no job was recorded";

  // Raised on purpose, the bound lets it through (validate=true: no call is made either way).
  CliRun raised =
      scratch.run(job_args(scratch, "wide",
                           {"branches_per_iteration=10000", "limits.branches_per_iteration=10000",
                            "validate=true", server_arg(**server)}));
  EXPECT_EQ(raised.exit_code, 0) << raised.output;
}

TEST(FaultsJob, FirstCtrlCStopsWithinSecondsAndResumeFinishes) {
  Scratch scratch;
  // Both branches of iteration 1 get a kernel that never returns: only a stop of the running
  // test child ends the job before test_timeout (120 s).
  nlohmann::json script = {{"default", {{"content", cpp_answer("hang.cpp")}}}};
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();
  std::vector<std::string> args = job_args(
      scratch, "ctrl_c",
      {"max_iters=1", "branches_per_iteration=2", "test_timeout=120", server_arg(**server)});
  fs::path log = scratch.dir() / "first.txt";
  pid_t pid = spawn_cli(scratch, args, log);
  ASSERT_GT(pid, 0);
  // Both answers are paid and a hanging test is running.
  ASSERT_TRUE(wait_for([&] { return answered(**server) >= 2; }, 120)) << file_text(log);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto sent = Clock::now();
  ::kill(pid, SIGINT);
  int status = 0;
  bool ended = wait_for([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 20);
  double stop_s = std::chrono::duration<double>(Clock::now() - sent).count();
  if (!ended) {
    ::kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(ended) << "the job did not stop within 20 s of Ctrl-C:\n" << file_text(log);
  EXPECT_LT(stop_s, 10.0);
  std::string output = file_text(log);
  EXPECT_CONTAINS(output, "interrupted by Ctrl-C: continue with resume=true job_name=ctrl_c");
  auto row = job_row(scratch, "ctrl_c");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->status, "interrupted");
  EXPECT_EQ(listed_status(scratch, "ctrl_c"), "interrupted");

  // Resume: the paid answers are reused (no new call), the hanging kernels now meet a short
  // test_timeout, and the job finishes.
  int calls_before = answered(**server);
  std::vector<std::string> resume = args;
  resume.push_back("resume=true");
  resume.push_back("test_timeout=3");
  JobOutcome job = scratch.run_job("ctrl_c", resume, 300);
  EXPECT_EQ(job.cli.exit_code, 0) << job.cli.output;
  ASSERT_TRUE(job.job.has_value());
  EXPECT_EQ(job.job->status, "done");
  EXPECT_EQ(job.kernels.size(), 3u) << job.cli.output;
  EXPECT_EQ(answered(**server), calls_before) << "nothing is paid twice";
  for (const auto& k : job.kernels)
    if (k.trial == 1) EXPECT_EQ(k.verdict, 2) << k.reason;  // timed out
}

TEST(FaultsJob, KilledJobReadsInterruptedAndALiveJobCannotBeResumedTwice) {
  Scratch scratch;
  // Every answer takes a while, so the job is alive (waiting on the LLM) for as long as we need.
  nlohmann::json script = {{"default", {{"content", cpp_answer("correct.cpp")}, {"delay_s", 30}}}};
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();
  std::vector<std::string> args = job_args(
      scratch, "liveness", {"max_iters=1", "branches_per_iteration=1", server_arg(**server)});

  fs::path log = scratch.dir() / "first.txt";
  pid_t first = spawn_cli(scratch, args, log);
  ASSERT_GT(first, 0);
  ASSERT_TRUE(wait_for_owner(scratch, "liveness", first)) << file_text(log);
  ASSERT_TRUE(wait_for([&] { return file_text(log).find("verdict 5") != std::string::npos; }, 120))
      << file_text(log);
  EXPECT_EQ(listed_status(scratch, "liveness"), "running");
  ::kill(-first, SIGKILL);
  int status = 0;
  waitpid(first, &status, 0);

  // Progress lines written before the kill are in the file (flushed line by line).
  std::string before = file_text(log);
  EXPECT_CONTAINS(before, "job liveness: task reduction_cpp");
  EXPECT_CONTAINS(before, "reference: building and timing ... ok");
  EXPECT_CONTAINS(before, "[iter 0]         start");
  // The row still says running; its owner is gone, so it reads as interrupted.
  EXPECT_EQ(job_row(scratch, "liveness")->status, "running");
  EXPECT_EQ(listed_status(scratch, "liveness"), "interrupted");

  // A resume takes it over; while that one is alive, a second resume is refused.
  std::vector<std::string> resume = args;
  resume.push_back("resume=true");
  fs::path log2 = scratch.dir() / "second.txt";
  pid_t second = spawn_cli(scratch, resume, log2);
  ASSERT_GT(second, 0);
  ASSERT_TRUE(wait_for_owner(scratch, "liveness", second)) << file_text(log2);
  CliRun third = scratch.run(resume);
  EXPECT_EQ(third.exit_code, 2) << third.output;
  EXPECT_CONTAINS(third.output, "is still running (pid " + std::to_string(second) + " on host");
  EXPECT_EQ(listed_status(scratch, "liveness"), "running");
  auto kernels = Store::open(scratch.db());
  ASSERT_TRUE(kernels.is_ok());
  auto rows = (*kernels)->kernels({.job_name = "liveness"});
  ASSERT_TRUE(rows.is_ok());
  EXPECT_EQ(rows->size(), 1u) << "the refused resume added no kernel rows";

  ::kill(second, SIGINT);
  ASSERT_TRUE(wait_for([&] { return waitpid(second, &status, WNOHANG) == second; }, 20))
      << file_text(log2);
  EXPECT_EQ(job_row(scratch, "liveness")->status, "interrupted");
}

TEST(FaultsJob, AFailedStartGivesItsJobNameBack) {
  Scratch scratch;
  nlohmann::json script = {{"default", {{"content", cpp_answer("correct.cpp")}}}};
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();
  // The reference cannot be built: this package's reference does not compile.
  fs::path task = scratch.dir() / "broken";
  fs::copy(example("reduction_cpp"), task, fs::copy_options::recursive);
  bool broke = false;
  for (const auto& entry : fs::directory_iterator(task)) {
    std::string text = file_text(entry.path());
    if (text.find("[REFERENCE_START]") == std::string::npos) continue;
    ASSERT_TRUE(write_file(entry.path(), replace_all(text, "[REFERENCE_START]",
                                                     "[REFERENCE_START]\n#error broken on purpose"))
                    .is_ok());
    broke = true;
  }
  ASSERT_TRUE(broke) << "the example has a REFERENCE block";
  std::vector<std::string> args =
      job_args(scratch, "reused_name", {"max_iters=1", server_arg(**server)});
  args[1] = "task=" + task.string();
  CliRun run = scratch.run(args);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_CONTAINS(run.output, "the job name 'reused_name' is free again");
  EXPECT_FALSE(job_row(scratch, "reused_name").has_value());
  // The same command again uses the same name (not reused_name_2).
  CliRun again = scratch.run(args);
  EXPECT_EQ(again.output.find("reused_name_2"), std::string::npos) << again.output;
}

// Ctrl-C during `kernelfoundry tune`: the job reads interrupted, the first-pass results that
// finished are kept, and resume=true takes them instead of running those combinations again.
TEST(FaultsJob, CtrlCStopsATuneAndResumeTakesWhatFinished) {
  Scratch scratch;
  std::vector<std::string> args = {"tune", "task=" + example("reduction_cpp").string(),
                                   "job_name=tune_ctrl_c"};
  for (const auto& a : scratch.isolation_args()) args.push_back(a);
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  args.push_back(candidate("reduction_cpp", "templated.cpp").string());
  fs::path log = scratch.dir() / "first.txt";
  pid_t pid = spawn_cli(scratch, args, log);
  ASSERT_GT(pid, 0);
  // The first of the four first-pass runs has finished (and is kept): stop now.
  ASSERT_TRUE(
      wait_for([&] { return file_text(log).find("first pass 1/4") != std::string::npos; }, 120))
      << file_text(log);
  ::kill(pid, SIGINT);
  int status = 0;
  bool ended = wait_for([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 60);
  if (!ended) {
    ::kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(ended) << file_text(log);
  std::string output = file_text(log);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << output;
  EXPECT_CONTAINS(output, "interrupted (Ctrl-C) while tuning: ");
  EXPECT_CONTAINS(output, "run the same command with resume=true to go on from there");
  auto row = job_row(scratch, "tune_ctrl_c");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->status, "interrupted");
  // What the state holds is what resume takes.
  fs::path state_file;
  for (const auto& e : fs::recursive_directory_iterator(scratch.dir()))
    if (starts_with(e.path().filename().string(), "tune_state_")) state_file = e.path();
  ASSERT_FALSE(state_file.empty()) << output;
  auto state = nlohmann::json::parse(file_text(state_file), nullptr, false);
  ASSERT_TRUE(state.is_object() && state["entries"].is_object()) << file_text(state_file);
  size_t kept = state["entries"].size();
  EXPECT_GE(kept, 1u) << file_text(state_file);

  std::vector<std::string> resume = args;
  resume.insert(resume.end() - 1, "resume=true");
  JobOutcome job = scratch.run_job("tune_ctrl_c", resume, 300);
  EXPECT_EQ(job.cli.exit_code, 0) << job.cli.output;
  ASSERT_TRUE(job.job.has_value());
  EXPECT_EQ(job.job->status, "done");
  size_t taken = 0;
  for (size_t at = job.cli.output.find(", kept from the earlier tune"); at != std::string::npos;
       at = job.cli.output.find(", kept from the earlier tune", at + 1))
    ++taken;
  EXPECT_EQ(taken, kept) << job.cli.output;
  ASSERT_FALSE(job.kernels.empty());
  EXPECT_EQ(job.kernels.back().verdict, 5) << job.kernels.back().reason;
}

}  // namespace
}  // namespace kf::e2e
