// End-to-end tests of the current provider APIs (issue 13): jobs through the loopback server
// playing an OpenAI reasoning model (rejects max_tokens and temperature, reports reasoning
// tokens), an older compatible server (knows only max_tokens), Anthropic with extended thinking
// and prompt caching, and a provider that refuses to answer.
#include <gtest/gtest.h>

#include "e2e/cli_helpers.h"
#include "llm_server/llm_server_fixture.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

// As cli_helpers.h's, with the text shown cut to 4000 characters (these outputs are long).
#undef EXPECT_CONTAINS
#define EXPECT_CONTAINS(haystack, needle)                                                       \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing: " << (needle) << "\nin:\n" \
                                                        << (haystack).substr(0, 4000)

std::string cpp_answer(const std::string& file) {
  return "Here it is.\n\n```cpp\n" + file_text(candidate("reduction_cpp", file)) + "```\n";
}

std::unique_ptr<LlmTestServer> start_server(const Scratch& scratch, const nlohmann::json& script) {
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  EXPECT_TRUE(server.is_ok()) << server.message();
  return server.is_ok() ? std::move(server.value()) : nullptr;
}

// One server on the command line: `type` at the scripted server, `extra` more YAML fields.
std::string server_arg(const LlmTestServer& server, const std::string& type,
                       const std::string& model, const std::string& extra = "") {
  std::string url = type == "anthropic" ? server.base_url_anthropic() : server.base_url_openai();
  return "inference.servers=[{server_type: " + type + ", model_name: " + model + ", base_url: '" +
         url + "', timeout: 30, max_retry: 0" + extra + "}]";
}

std::vector<std::string> job_args(const std::string& job_name, int iterations,
                                  const std::string& server) {
  std::vector<std::string> args = {
      "run", "task=" + example("reduction_cpp").string(), "job_name=" + job_name,
      "max_iters=" + std::to_string(iterations), "branches_per_iteration=1"};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  args.push_back(server);
  return args;
}

std::vector<LlmCallRecord> calls_of(const Scratch& scratch, const std::string& job) {
  auto store = Store::open(scratch.db());
  if (!store) return {};
  auto calls = (*store)->llm_calls(job);
  return calls ? *calls : std::vector<LlmCallRecord>{};
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(FaultsProviders, ReasoningModelJobDropsTemperatureAndCountsReasoningTokens) {
  Scratch scratch;
  auto server = start_server(
      scratch, {{"reasoning_models", {"o3-scripted"}},
                {"default", {{"content", cpp_answer("correct.cpp")}, {"reasoning_tokens", 300}}}});
  ASSERT_TRUE(server);
  // temperature 0.7 as a config copied from a chat model would have it.
  JobOutcome job = scratch.run_job(
      "reasoning", job_args("reasoning", 2,
                            server_arg(*server, "openai", "o3-scripted",
                                       ", temperature: 0.7, reasoning_effort: high, "
                                       "price_per_mtok_in: 1.1, price_per_mtok_out: 4.4")));
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  ASSERT_EQ(job.kernels.size(), 3u) << job.cli.output;  // the start kernel and two answers
  for (size_t i = 1; i < job.kernels.size(); ++i)
    EXPECT_EQ(job.kernels[i].verdict, 5) << job.kernels[i].reason;
  EXPECT_CONTAINS(job.cli.output, "rejects temperature");
  EXPECT_EQ(count_of(job.cli.output, "rejects temperature"), 1u) << job.cli.output;

  auto log = server->log_lines();
  ASSERT_EQ(log.size(), 3u) << "one rejection, then two answers";
  EXPECT_EQ(log[0]["status"], 400);
  for (size_t i = 1; i < log.size(); ++i) {
    EXPECT_EQ(log[i]["status"], 200);
    EXPECT_TRUE(log[i]["temperature"].is_null());
    EXPECT_TRUE(log[i]["max_tokens"].is_null());
    EXPECT_EQ(log[i]["max_completion_tokens"], 8192);
    EXPECT_EQ(log[i]["reasoning_effort"], "high");
  }
  auto calls = calls_of(scratch, "reasoning");
  ASSERT_EQ(calls.size(), 2u);
  for (const LlmCallRecord& c : calls) {
    EXPECT_EQ(c.reasoning_tokens, 300);
    EXPECT_GT(c.completion_tokens, 300) << "reasoning is part of the completion";
    EXPECT_GT(c.cost, 300 * 4.4 / 1e6) << "and priced as output";
  }
}

TEST(FaultsProviders, OldCompatibleServerGetsMaxTokensAfterOneRejection) {
  Scratch scratch;
  auto server = start_server(scratch, {{"legacy_models", {"old-scripted"}},
                                       {"default", {{"content", cpp_answer("correct.cpp")}}}});
  ASSERT_TRUE(server);
  JobOutcome job = scratch.run_job(
      "legacy", job_args("legacy", 2, server_arg(*server, "openai", "old-scripted")));
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  EXPECT_EQ(count_of(job.cli.output, "rejects 'max_completion_tokens'"), 1u) << job.cli.output;
  auto log = server->log_lines();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0]["status"], 400);
  EXPECT_EQ(log[1]["max_tokens"], 8192);
  EXPECT_EQ(log[2]["max_tokens"], 8192) << "remembered for the rest of the job";
}

TEST(FaultsProviders, AnthropicThinkingAndPromptCachingJob) {
  Scratch scratch;
  // The thinking block holds code that does not compile: were it taken for the answer, the
  // kernels would fail.
  auto server = start_server(
      scratch, {{"cache_min_tokens", 0},
                {"default",
                 {{"content", cpp_answer("correct.cpp")},
                  {"thinking", "Draft:\n```cpp\n#error thinking is not the answer\n```\nNo."}}}});
  ASSERT_TRUE(server);
  JobOutcome job = scratch.run_job(
      "thinking", job_args("thinking", 2,
                           server_arg(*server, "anthropic", "claude-scripted",
                                      ", max_tokens: 8192, thinking: {budget_tokens: 2048}, "
                                      "price_per_mtok_in: 3, price_per_mtok_out: 15, "
                                      "price_per_mtok_cached_in: 0.3")));
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  ASSERT_EQ(job.kernels.size(), 3u) << job.cli.output;
  for (size_t i = 1; i < job.kernels.size(); ++i) {
    EXPECT_EQ(job.kernels[i].verdict, 5) << job.kernels[i].reason;
    EXPECT_EQ(job.kernels[i].code.find("#error"), std::string::npos);
  }
  EXPECT_CONTAINS(job.cli.output, "takes no temperature");

  auto log = server->log_lines();
  ASSERT_EQ(log.size(), 2u);
  for (const auto& line : log) {
    EXPECT_EQ(line["status"], 200) << line.dump();
    EXPECT_EQ(line["cache_marks"], 1) << line.dump();
    EXPECT_EQ(line["thinking"]["budget_tokens"], 2048);
    EXPECT_TRUE(line["temperature"].is_null());
  }
  auto calls = calls_of(scratch, "thinking");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_GT(calls[0].cache_write_tokens, 0) << "the first call writes the static prefix";
  EXPECT_EQ(calls[0].cached_tokens, 0);
  EXPECT_EQ(calls[1].cached_tokens, calls[0].cache_write_tokens) << "the second reads it";
  EXPECT_GT(calls[1].reasoning_tokens, 0);
  EXPECT_GT(calls[1].prompt_tokens, calls[1].cached_tokens);

  // `jobs` shows the cached input tokens.
  CliRun jobs = scratch.run({"jobs", "paths.kernels_db_path=" + scratch.db().string()});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.output;
  EXPECT_CONTAINS(jobs.output, "cached in");
  bool listed = false;
  for (const std::string& line : split_lines(jobs.output)) {
    std::vector<std::string> words;
    for (const auto& w : split(line, ' '))
      if (!w.empty()) words.push_back(w);
    if (!words.empty() && words[0] == "thinking") {
      listed = true;
      ASSERT_GE(words.size(), 7u) << line;
      EXPECT_EQ(words[6], std::to_string(calls[1].cached_tokens)) << line;
    }
  }
  EXPECT_TRUE(listed) << jobs.output;
}

TEST(FaultsProviders, RefusedAnswersGetANamedReasonNotNoCode) {
  for (const std::string type : {"openai", "anthropic"}) {
    Scratch scratch;
    auto server = start_server(
        scratch, {{"default", {{"fault", "refused"}, {"content", "I can't help with that."}}}});
    ASSERT_TRUE(server);
    JobOutcome job =
        scratch.run_job("refused", job_args("refused", 1, server_arg(*server, type, "m")));
    ASSERT_TRUE(job.cli.exit_code == 0 || job.cli.exit_code == 1) << job.cli.output;
    ASSERT_EQ(job.kernels.size(), 2u) << job.cli.output;
    const KernelRecord& k = job.kernels[1];
    EXPECT_EQ(k.verdict, 0);
    EXPECT_EQ(k.finish_reason, type == "openai" ? "content_filter" : "refusal");
    EXPECT_CONTAINS(k.reason, type == "openai" ? "content filter withheld the answer"
                                               : "the model refused to answer");
    EXPECT_CONTAINS(k.reason, type + ":m");
    EXPECT_EQ(k.reason.find("no code block"), std::string::npos) << k.reason;
  }
}

}  // namespace
}  // namespace kf::e2e
