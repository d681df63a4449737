// End to end: the optimisation job on the OCL example (PoCL) against the scripted LLM server on
// loopback — an evolutionary job that meets every fault, start_from_best in a second job, and a
// job killed mid-iteration then resumed without paying for any answer twice; meta-prompt
// evolution (variants written at the interval, sampled, stored, kept on resume).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "e2e/cli_helpers.h"
#include "llm_server/llm_server_fixture.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

std::string answer_with(const std::string& file, const std::string& words) {
  return words + "\n\n```opencl\n" + file_text(candidate("softmax_ocl", file)) + "```\n";
}

// Both formats on the one scripted server: an OpenAI-compatible and an Anthropic "model".
std::string servers_arg(const LlmTestServer& server, int max_retry) {
  return strprintf(
      "inference.servers=[{server_type: openai, model_name: scripted-openai, base_url: '%s', "
      "timeout: 1, max_retry: %d}, {server_type: anthropic, model_name: scripted-anthropic, "
      "base_url: '%s', timeout: 1, max_retry: %d}]",
      server.base_url_openai().c_str(), max_retry, server.base_url_anthropic().c_str(), max_retry);
}

// "job=..;trial=2;branch=1;purpose=generate" -> {2, 1}.
std::pair<int, int> trial_branch(const std::string& call) {
  int trial = -1, branch = -1;
  for (const std::string& part : split(call, ';')) {
    if (starts_with(part, "trial=")) trial = std::atoi(part.c_str() + 6);
    if (starts_with(part, "branch=")) branch = std::atoi(part.c_str() + 7);
  }
  return {trial, branch};
}

// Answered generate calls per (trial, branch), from the server's log (a malformed body is a 200
// that gave the client nothing to keep).
std::map<std::pair<int, int>, int> answered_calls(const LlmTestServer& server,
                                                  const std::string& job) {
  std::map<std::pair<int, int>, int> calls;
  for (const auto& line : server.log_lines()) {
    std::string call = line.value("call", "");
    if (call.find("job=" + job + ";") == std::string::npos) continue;
    if (call.find("purpose=generate") == std::string::npos) continue;
    bool malformed = line["fault"].is_string() && line["fault"] == "malformed";
    if (line.value("status", 0) == 200 && !malformed) ++calls[trial_branch(call)];
  }
  return calls;
}

// No profiling of correct kernels (perf stat, about 2 s each on PoCL): not what these tests check.
const std::vector<std::string> kBase = {"eval_config.num_seeds=1", "eval_config.time_budget=0.2",
                                        "llm_rate_limit=4", "save_best_kernel=true",
                                        "eval_config.profile_custom_model=false"};

TEST(SearchOcl, EvolutionaryJobSurvivesEveryFaultAndFindsTheFastestKernel) {
  Scratch scratch;
  // Responses go to whichever request comes next; the faults are retried into later ones.
  nlohmann::json script = {
      {"responses",
       {{{"fault", "rate_limit"}, {"retry_after", 1}},
        {{"fault", "server_error"}},
        {{"fault", "malformed"}},
        {{"fault", "hang"}, {"seconds", 3}},
        {{"fault", "truncated"},
         {"content", "Here is the kernel:\n```opencl\n__kernel void softmax("}},
        {{"content", "I would rather not rewrite this kernel."}},
        {{"content", answer_with("wrong_wide_rows.cl", "Wider rows per work-item.")}},
        {{"content", answer_with("compile_error.cl", "A quick rewrite.")}},
        {{"content", answer_with("out_of_bounds.cl", "Unrolled tail.")}},
        {{"content", answer_with("slower.cl", "Recompute everything.")}},
        {{"content", answer_with("faster.cl", "Vectorise the rows with float16.")}}}},
      {"default", {{"content", answer_with("correct.cl", "The same algorithm, tidied.")}}}};
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();

  std::vector<std::string> args = {"run",
                                   "task=" + example("softmax_ocl").string(),
                                   "job_name=e2e_search",
                                   "max_iters=3",
                                   "branches_per_iteration=4",
                                   servers_arg(**server, 5)};
  args.insert(args.end(), kBase.begin(), kBase.end());
  JobOutcome job = scratch.run_job("e2e_search", args, 600);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output << (*server)->stderr_text();
  ASSERT_TRUE(job.db_error.empty()) << job.db_error;
  ASSERT_TRUE(job.job.has_value());
  EXPECT_EQ(job.job->status, "done");

  // The starting kernel and 3 x 4 candidates, each stored once with its prompt and model.
  ASSERT_EQ(job.kernels.size(), 13u) << job.cli.output;
  std::set<std::pair<int, int>> seen;
  int truncated = 0, no_code = 0, compile_errors = 0, wrong = 0, runtime = 0;
  for (const KernelRecord& k : job.kernels) {
    EXPECT_TRUE(seen.insert({k.trial, k.branch}).second) << k.trial << "/" << k.branch;
    if (k.trial == 0) continue;
    EXPECT_FALSE(k.prompt.empty());
    EXPECT_NE(k.prompt.find("USER_INSTRUCTIONS"), std::string::npos)
        << "the prompt shows the package's instructions";
    EXPECT_TRUE(k.model == "scripted-openai" || k.model == "scripted-anthropic") << k.model;
    EXPECT_FALSE(k.answer.empty()) << k.reason;
    EXPECT_GT(k.prompt_tokens, 0);
    EXPECT_TRUE(fs::exists(job.run_dir / "kernels" / strprintf("t%02d_b%02d", k.trial, k.branch) /
                           "prompt.md"));
    if (k.reason.find("truncated") != std::string::npos) {
      ++truncated;
      EXPECT_EQ(k.verdict, 0) << "a cut answer is not a compile error";
    }
    if (k.verdict == 0 && k.reason.find("contains no OCL code") != std::string::npos) ++no_code;
    if (k.verdict == 1) ++compile_errors;
    if (k.verdict == 2) ++runtime;
    if (k.verdict == 4) ++wrong;
  }
  EXPECT_EQ(truncated, 1);
  EXPECT_EQ(no_code, 1);
  EXPECT_EQ(compile_errors, 1);
  EXPECT_GE(wrong + runtime, 2) << "the wrong-on-wide-rows and out-of-bounds kernels";

  // The best is the vectorised kernel, and results.json, the database and results/ agree.
  auto best = std::find_if(job.kernels.begin(), job.kernels.end(), [&](const KernelRecord& k) {
    return k.uuid == job.results.value("best_uuid", "");
  });
  ASSERT_NE(best, job.kernels.end()) << job.cli.output;
  EXPECT_NE(best->code.find("vload16"), std::string::npos) << best->code;
  EXPECT_EQ(best->verdict, 5);
  std::string saved =
      file_text(scratch.dir() / "results" / "e2e_search" / "softmax_ocl" / "softmax.cl");
  EXPECT_NE(saved.find("vload16"), std::string::npos) << "save_best_kernel wrote the package";

  // Every fault was met and survived; every branch was answered exactly once.
  std::set<int> statuses;
  std::set<std::string> faults, formats;
  for (const auto& line : (*server)->log_lines()) {
    statuses.insert(line.value("status", 0));
    if (!line["fault"].is_null()) faults.insert(line.value("fault", ""));
    formats.insert(line.value("format", ""));
  }
  EXPECT_TRUE(statuses.count(429) && statuses.count(500));
  for (const char* f : {"rate_limit", "server_error", "malformed", "hang", "truncated"})
    EXPECT_TRUE(faults.count(f)) << f;
  EXPECT_TRUE(formats.count("openai") && formats.count("anthropic"));
  auto calls = answered_calls(**server, "e2e_search");
  EXPECT_EQ(calls.size(), 12u);
  for (const auto& [tb, n] : calls) EXPECT_EQ(n, 1) << tb.first << "/" << tb.second;
  EXPECT_GT(job.job->prompt_tokens, 0);

  // A second job starts from the first one's best kernel.
  nlohmann::json again = {{"default", {{"content", answer_with("correct.cl", "Tidied.")}}}};
  auto server2 = LlmTestServer::start(again, scratch.dir() / "server2");
  ASSERT_TRUE(server2.is_ok()) << server2.message();
  std::vector<std::string> args2 = {"run",
                                    "task=" + example("softmax_ocl").string(),
                                    "job_name=e2e_continue",
                                    "max_iters=1",
                                    "branches_per_iteration=1",
                                    "start_from_best=true",
                                    servers_arg(**server2, 1)};
  args2.insert(args2.end(), kBase.begin(), kBase.end());
  JobOutcome second = scratch.run_job("e2e_continue", args2, 300);
  ASSERT_EQ(second.cli.exit_code, 0) << second.cli.output;
  ASSERT_EQ(second.kernels.size(), 2u) << second.cli.output;
  EXPECT_EQ(second.kernels[0].trial, 0);
  EXPECT_EQ(second.kernels[0].parent_uuid, best->uuid);
  EXPECT_EQ(second.kernels[0].code, best->code);
  EXPECT_EQ(second.kernels[1].parent_uuid, second.kernels[0].uuid)
      << "one branch refines the best so far";
  EXPECT_NE(second.cli.output.find("start: best stored kernel (job e2e_search"), std::string::npos)
      << second.cli.output;
}

// The feedback calls in the server's log.
int feedback_calls(const LlmTestServer& server) {
  int n = 0;
  for (const auto& line : server.log_lines())
    n += line.value("call", "").find("purpose=feedback") != std::string::npos;
  return n;
}

std::string feedback_arg(const LlmTestServer& server, int min_log_chars) {
  return strprintf(
      "feedback_llm_config={server_type: openai, model_name: scripted-summary, base_url: '%s', "
      "timeout: 5, max_retry: 1, min_log_chars: %d}",
      server.base_url_openai().c_str(), min_log_chars);
}

// PoCL's diagnostic for compile_error.cl, as the eval log has it.
const char* kUndeclared = "use of undeclared identifier 'maximum'";

TEST(SearchOcl, ACompileErrorReachesTheNextPromptWhichFixesIt) {
  Scratch scratch;
  // The scripted model fixes the kernel in iteration 2 only if that prompt shows iteration 1's
  // compile error; otherwise it makes the same mistake again (the default).
  nlohmann::json script = {
      {"responses",
       {{{"purpose", "generate"},
         {"trial", "1"},
         {"content", answer_with("compile_error.cl", "Store the maximum directly.")}},
        {{"purpose", "generate"},
         {"trial", "2"},
         {"prompt_contains", {"## Earlier attempts", kUndeclared}},
         {"content", answer_with("faster.cl", "Declare it, and vectorise the rows.")}}}},
      {"default", {{"content", answer_with("compile_error.cl", "The same again.")}}}};
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();
  // Standard mode (one branch), and a feedback LLM whose threshold no log here reaches: short
  // failure logs go into the prompt raw.
  std::vector<std::string> args = {"run",
                                   "task=" + example("softmax_ocl").string(),
                                   "job_name=e2e_memory",
                                   "max_iters=2",
                                   "branches_per_iteration=1",
                                   "use_feedback_llm=true",
                                   servers_arg(**server, 1),
                                   feedback_arg(**server, 100000)};
  args.insert(args.end(), kBase.begin(), kBase.end());
  JobOutcome job = scratch.run_job("e2e_memory", args, 300);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output << (*server)->stderr_text();
  ASSERT_EQ(job.kernels.size(), 3u) << job.cli.output;
  const KernelRecord& failed = job.kernels[1];
  const KernelRecord& fixed = job.kernels[2];
  ASSERT_EQ(failed.verdict, 1) << failed.reason;
  EXPECT_NE(failed.eval_log.find(kUndeclared), std::string::npos) << failed.eval_log;
  EXPECT_EQ(failed.prompt.find("## Earlier attempts"), std::string::npos)
      << "nothing failed before iteration 1";
  EXPECT_EQ(fixed.verdict, 5) << fixed.reason << "\n" << fixed.prompt;
  EXPECT_NE(fixed.code.find("vload16"), std::string::npos);
  EXPECT_EQ(fixed.parent_uuid, job.kernels[0].uuid) << "the failed child did not become the parent";

  // The prompt of iteration 2 shows the failed child: verdict, its log, its summary, its diff.
  const std::string& prompt = fixed.prompt;
  EXPECT_NE(prompt.find("### Attempt 1 (iteration 1): compile error"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("Its answer said: Store the maximum directly."), std::string::npos);
  EXPECT_NE(prompt.find("+  y[(long)row * cols] = maximum;"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("Its evaluation log (error lines first)"), std::string::npos);
  EXPECT_EQ(prompt.find("written by the feedback model"), std::string::npos);
  EXPECT_EQ(feedback_calls(**server), 0) << "a short log is not summarised";
  EXPECT_TRUE(failed.feedback.empty());
}

TEST(SearchOcl, LongFailureLogsAreSummarisedAndARepeatedMistakeIsNamed) {
  Scratch scratch;
  const std::string summary = "SUMMARY-FAIL: 'maximum' is never declared; use m.";
  // Iterations 1 and 2 make the same mistake; iteration 3 fixes it only when its prompt names
  // the repeat and shows the feedback model's summary.
  nlohmann::json script = {
      {"responses",
       {{{"purpose", "generate"},
         {"trial", "1"},
         {"content", answer_with("compile_error.cl", "Store the maximum directly.")}},
        {{"purpose", "generate"},
         {"trial", "2"},
         {"content", answer_with("compile_error.cl", "Store it again.")}},
        {{"purpose", "generate"},
         {"trial", "3"},
         {"prompt_contains", {"The same mistake was made more than once", summary}},
         {"content", answer_with("faster.cl", "Declare it, and vectorise the rows.")}},
        {{"purpose", "feedback"}, {"content", summary}},
        {{"purpose", "feedback"}, {"content", summary}}}},
      {"default", {{"content", answer_with("compile_error.cl", "The same again.")}}}};
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();
  std::vector<std::string> args = {"run",
                                   "task=" + example("softmax_ocl").string(),
                                   "job_name=e2e_feedback",
                                   "max_iters=3",
                                   "branches_per_iteration=1",
                                   "use_feedback_llm=true",
                                   servers_arg(**server, 1),
                                   feedback_arg(**server, 10)};
  args.insert(args.end(), kBase.begin(), kBase.end());
  JobOutcome job = scratch.run_job("e2e_feedback", args, 300);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  ASSERT_EQ(job.kernels.size(), 4u) << job.cli.output;
  // The correct starting kernel (the parent of every prompt) is not summarised; each failure is,
  // once, and the summary is stored with it and in its run folder.
  EXPECT_TRUE(job.kernels[0].feedback.empty());
  EXPECT_FALSE(fs::exists(job.run_dir / "kernels" / "t00_b00" / "feedback.md"));
  for (int t : {1, 2}) {
    EXPECT_EQ(job.kernels[size_t(t)].verdict, 1);
    EXPECT_EQ(job.kernels[size_t(t)].feedback, summary) << t;
    EXPECT_EQ(trim(file_text(job.run_dir / "kernels" / strprintf("t%02d_b00", t) / "feedback.md")),
              summary);
  }
  EXPECT_EQ(feedback_calls(**server), 2);
  const KernelRecord& fixed = job.kernels[3];
  EXPECT_EQ(fixed.verdict, 5) << fixed.reason << "\n" << fixed.prompt;
  // The summaries replace the failures' raw logs in the prompt; the repeat is named.
  const std::string& prompt = fixed.prompt;
  EXPECT_NE(prompt.find("written by the feedback model"), std::string::npos);
  EXPECT_EQ(prompt.find("Its evaluation log (error lines first)"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("2 times (iteration 2, iteration 1)"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find(kUndeclared), std::string::npos) << "the repeated error line is quoted";
}

TEST(SearchOcl, BranchesTheLlmNeverAnsweredAreAskedAgainOnResume) {
  Scratch scratch;
  // An outage: every call fails, no retries.
  nlohmann::json outage = {{"default", {{"fault", "server_error"}}}};
  auto down = LlmTestServer::start(outage, scratch.dir() / "down");
  ASSERT_TRUE(down.is_ok()) << down.message();
  std::vector<std::string> base = {"run", "task=" + example("softmax_ocl").string(),
                                   "job_name=e2e_outage", "max_iters=1",
                                   "branches_per_iteration=2"};
  base.insert(base.end(), kBase.begin(), kBase.end());
  std::vector<std::string> first = base;
  first.push_back(servers_arg(**down, 0));
  JobOutcome failed = scratch.run_job("e2e_outage", first, 300);
  ASSERT_EQ(failed.kernels.size(), 3u) << failed.cli.output;
  std::set<std::string> uuids;
  for (const auto& k : failed.kernels) {
    if (k.trial == 0) continue;
    EXPECT_EQ(k.verdict, 0);
    EXPECT_NE(k.reason.find("no answer from the LLM"), std::string::npos) << k.reason;
    uuids.insert(k.uuid);
  }

  // The service is back: resume asks those branches again and fills the same records.
  nlohmann::json back = {{"default", {{"content", answer_with("correct.cl", "Tidied.")}}}};
  auto up = LlmTestServer::start(back, scratch.dir() / "up");
  ASSERT_TRUE(up.is_ok()) << up.message();
  std::vector<std::string> second = base;
  second.push_back(servers_arg(**up, 0));
  second.push_back("resume=true");
  JobOutcome resumed = scratch.run_job("e2e_outage", second, 300);
  ASSERT_EQ(resumed.cli.exit_code, 0) << resumed.cli.output;
  ASSERT_EQ(resumed.kernels.size(), 3u) << resumed.cli.output;
  for (const auto& k : resumed.kernels) {
    if (k.trial == 0) continue;
    EXPECT_EQ(k.verdict, 5) << k.reason;
    EXPECT_TRUE(uuids.count(k.uuid)) << "the branch's record was replaced, not duplicated";
  }
  EXPECT_EQ(answered_calls(**up, "e2e_outage").size(), 2u);
}

TEST(SearchOcl, KilledJobResumesWithoutPayingTwice) {
  Scratch scratch;
  nlohmann::json script = {{"default", {{"content", answer_with("correct.cl", "Tidied.")}}}};
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();
  std::vector<std::string> args = {"run",
                                   "task=" + example("softmax_ocl").string(),
                                   "job_name=e2e_resume",
                                   "max_iters=3",
                                   "branches_per_iteration=2",
                                   servers_arg(**server, 1)};
  for (const auto& a : scratch.isolation_args()) args.push_back(a);
  args.insert(args.end(), kBase.begin(), kBase.end());

  // Kill the job once a kernel of iteration 2 is stored: that iteration's answers are all paid
  // for by then (its branches ask at once), and at least one of them is not yet evaluated.
  pid_t pid = spawn_cli(scratch, args, scratch.dir() / "first_run.txt");
  ASSERT_GT(pid, 0);
  bool killed = false;
  for (int i = 0; i < 2400 && !killed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!db_started(scratch.db())) continue;
    auto store = Store::open(scratch.db());
    if (!store) continue;
    auto kernels = (*store)->kernels({.job_name = "e2e_resume"});
    if (!kernels) continue;
    int in_trial_2 = 0;
    for (const auto& k : *kernels) in_trial_2 += k.trial == 2;
    if (in_trial_2 >= 1 && in_trial_2 < 2) {
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) break;  // finished before we caught it
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(killed) << "the job ended before iteration 2 could be interrupted:\n"
                      << file_text(scratch.dir() / "first_run.txt");
  auto before = answered_calls(**server, "e2e_resume");

  std::vector<std::string> resume = args;
  resume.push_back("resume=true");
  JobOutcome job = scratch.run_job("e2e_resume", resume, 600);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  EXPECT_NE(job.cli.output.find("(resumed)"), std::string::npos);
  EXPECT_NE(job.cli.output.find("llm: recorded answer"), std::string::npos)
      << "the paid-for, unevaluated branch of iteration 2 reuses its stored answer\n"
      << job.cli.output;
  ASSERT_EQ(job.kernels.size(), 7u) << job.cli.output;
  std::set<std::pair<int, int>> seen;
  for (const auto& k : job.kernels) EXPECT_TRUE(seen.insert({k.trial, k.branch}).second);
  EXPECT_EQ(job.job->status, "done");

  auto calls = answered_calls(**server, "e2e_resume");
  EXPECT_EQ(calls.size(), 6u);
  for (const auto& [tb, n] : calls)
    EXPECT_EQ(n, 1) << "iteration " << tb.first << " branch " << tb.second << " was paid twice";
  EXPECT_EQ(before.size(), 4u) << "iterations 1 and 2 were asked before the kill";
}

// Answered meta_prompt calls per trial, from the server's log.
std::map<int, int> meta_prompt_calls(const LlmTestServer& server, const std::string& job) {
  std::map<int, int> calls;
  for (const auto& line : server.log_lines()) {
    std::string call = line.value("call", "");
    if (call.find("job=" + job + ";") == std::string::npos) continue;
    if (call.find("purpose=meta_prompt") == std::string::npos) continue;
    if (line.value("status", 0) == 200) ++calls[trial_branch(call).first];
  }
  return calls;
}

TEST(SearchOcl, MetaPromptingWritesSamplesStoresAndKeepsGuidanceVariants) {
  Scratch scratch;
  const std::string v2 = "META-GUIDANCE-V2: read each row with vload16.";
  const std::string v3 = "META-GUIDANCE-V3: keep the row maximum in a register.";
  auto guidance = [](const std::string& words) {
    return "Here is the new guidance.\n\n```markdown\n## Optimisation tips (OpenCL)\n\n- " + words +
           "\n```\n";
  };
  nlohmann::json generate_v2 = {{"purpose", "generate"},
                                {"prompt_contains", v2},
                                {"content", answer_with("correct.cl", "Following the tips.")}};
  nlohmann::json generate_v3 = {{"purpose", "generate"},
                                {"prompt_contains", v3},
                                {"content", answer_with("correct.cl", "Following the tips.")}};
  // Iteration 1 (the shipped guidance) fails to compile; the meta-prompt call after it sees the
  // shipped variant and its failed children and writes V2; the one after iteration 2 sees V2.
  nlohmann::json script = {
      {"responses",
       {{{"purpose", "meta_prompt"},
         {"trial", "1"},
         {"prompt_contains", {"Variant 1 (the shipped guidance", "compile"}},
         {"content", guidance(v2)}},
        {{"purpose", "meta_prompt"},
         {"trial", "2"},
         {"prompt_contains", {"Variant 2 (written after iteration 1 from variant 1", v2}},
         {"content", guidance(v3)}},
        generate_v2,
        generate_v2,
        generate_v2,
        generate_v2,
        generate_v3,
        generate_v3}},
      {"default", {{"content", answer_with("compile_error.cl", "Store the maximum directly.")}}}};
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();
  // Greedy and without exploration: after iteration 1 the shipped variant scores -1 (two failed
  // children) and V2, without children, 0, so both branches of iteration 2 take V2.
  std::vector<std::string> args = {"run",
                                   "task=" + example("softmax_ocl").string(),
                                   "job_name=e2e_meta",
                                   "max_iters=2",
                                   "branches_per_iteration=2",
                                   "prompt=meta_prompting",
                                   "prompt.meta_prompting.evolution_interval=1",
                                   "prompt.meta_prompting.min_samples_for_evolution=2",
                                   "prompt.meta_prompting.exploration_rate=0",
                                   "prompt.meta_prompting.selection_temperature=0",
                                   servers_arg(**server, 1)};
  args.insert(args.end(), kBase.begin(), kBase.end());
  JobOutcome job = scratch.run_job("e2e_meta", args, 300);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output << (*server)->stderr_text();
  ASSERT_EQ(job.kernels.size(), 5u) << job.cli.output;
  EXPECT_NE(job.cli.output.find("meta-prompting: new guidance variant 2 (from variant 1"),
            std::string::npos)
      << job.cli.output;
  for (const KernelRecord& k : job.kernels) {
    if (k.trial == 0) {
      EXPECT_FALSE(k.prompt_variant.has_value());
    } else if (k.trial == 1) {
      EXPECT_EQ(k.prompt_variant, 1);
      EXPECT_EQ(k.verdict, 1) << k.reason;
      EXPECT_NE(k.prompt.find("## Optimisation tips (OpenCL)"), std::string::npos);
      EXPECT_EQ(k.prompt.find("META-GUIDANCE"), std::string::npos);
    } else {
      EXPECT_EQ(k.prompt_variant, 2);
      EXPECT_EQ(k.verdict, 5) << k.reason;
      EXPECT_NE(k.prompt.find(v2), std::string::npos) << k.prompt;
      // The variant replaces the shipped tips; the rest of the prompt stays.
      EXPECT_EQ(k.prompt.find("Coalesce: neighbouring work-items"), std::string::npos);
      EXPECT_NE(k.prompt.find("## Response format"), std::string::npos);
    }
  }
  // No variant after the last iteration: nobody would use it.
  EXPECT_EQ(meta_prompt_calls(**server, "e2e_meta"), (std::map<int, int>{{1, 1}}));
  std::filesystem::path evolution = job.run_dir / "prompt_evolution";
  EXPECT_NE(file_text(evolution / "variant_1.md").find("## Optimisation tips (OpenCL)"),
            std::string::npos);
  EXPECT_NE(file_text(evolution / "variant_2.md").find(v2), std::string::npos);
  auto index = nlohmann::json::parse(file_text(evolution / "index.json"), nullptr, false);
  ASSERT_TRUE(index.is_object()) << file_text(evolution / "index.json");
  ASSERT_EQ(index["variants"].size(), 2u);
  EXPECT_EQ(index["variants"][0]["uses"], 2);
  EXPECT_DOUBLE_EQ(index["variants"][0]["score"].get<double>(), -1.0);
  EXPECT_EQ(index["variants"][1]["parent_id"], 1);
  EXPECT_EQ(index["variants"][1]["uses"], 2);

  // Extend the job by one iteration: the stored variants are loaded (iteration 1's is not asked
  // for again), one new variant follows iteration 2, and iteration 3 samples among them.
  std::vector<std::string> more = args;
  more.push_back("resume=true");
  more.push_back("max_iters=3");
  JobOutcome resumed = scratch.run_job("e2e_meta", more, 300);
  ASSERT_EQ(resumed.cli.exit_code, 0) << resumed.cli.output << (*server)->stderr_text();
  EXPECT_NE(resumed.cli.output.find("meta-prompting: 2 guidance variant(s) (stored)"),
            std::string::npos)
      << resumed.cli.output;
  ASSERT_EQ(resumed.kernels.size(), 7u) << resumed.cli.output;
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(resumed.kernels[i].uuid, job.kernels[i].uuid);
    EXPECT_EQ(resumed.kernels[i].prompt_variant, job.kernels[i].prompt_variant);
  }
  for (size_t i = 5; i < 7; ++i) {
    const KernelRecord& k = resumed.kernels[i];
    ASSERT_TRUE(k.prompt_variant.has_value());
    EXPECT_TRUE(*k.prompt_variant == 2 || *k.prompt_variant == 3) << *k.prompt_variant;
    EXPECT_NE(k.prompt.find(*k.prompt_variant == 2 ? v2 : v3), std::string::npos) << k.prompt;
  }
  EXPECT_EQ(meta_prompt_calls(**server, "e2e_meta"), (std::map<int, int>{{1, 1}, {2, 1}}));
  auto store = Store::open(scratch.db());
  ASSERT_TRUE(store.is_ok()) << store.message();
  auto variants = (*store)->prompt_variants("e2e_meta");
  ASSERT_TRUE(variants.is_ok()) << variants.message();
  ASSERT_EQ(variants->size(), 3u);
  EXPECT_NE((*variants)[1].text.find(v2), std::string::npos);
  EXPECT_EQ((*variants)[1].created_trial, 1);
  EXPECT_EQ((*variants)[2].created_trial, 2);
  EXPECT_NE((*variants)[2].text.find(v3), std::string::npos);
  EXPECT_TRUE((*variants)[2].parent_id.has_value());
  EXPECT_NE(file_text(evolution / "variant_3.md").find(v3), std::string::npos);
}

}  // namespace
}  // namespace kf::e2e
