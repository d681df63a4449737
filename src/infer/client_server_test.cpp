// Tests for the OpenAI and Anthropic clients over real HTTP (libcurl) against the scripted
// loopback server tests/llm_server/kf_llm_server.py: answers, tokens, cost, faults and retries,
// and what the server saw (call header, auth present).
#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "infer/infer.h"
#include "infer/test_support.h"
#include "llm_server/llm_server_fixture.h"

namespace kf {
namespace {

using json = nlohmann::json;

constexpr const char* kKeyVar = "KF_TEST_LLM_KEY";
constexpr const char* kKey = "sk-loopback-SECRET-7";

class ServerClientTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    ::setenv(kKeyVar, kKey, 1);
  }
  void TearDown() override {
    server_.reset();
    ::unsetenv(kKeyVar);
    TempDirTest::TearDown();
  }

  // Starts the server with `script` and returns a config for it of type `type`.
  ServerConfig serve(const json& script, ServerType type = ServerType::kOpenai) {
    auto started = LlmTestServer::start(script, dir_ / "server");
    EXPECT_TRUE(started.is_ok()) << started.message();
    if (started.is_ok()) server_ = std::move(started.value());
    ServerConfig s;
    s.type = type;
    s.model_name = type == ServerType::kOpenai ? "gpt-test" : "claude-test";
    s.base_url = !server_                      ? "http://127.0.0.1:1"
                 : type == ServerType::kOpenai ? server_->base_url_openai()
                                               : server_->base_url_anthropic();
    s.api_key_env = kKeyVar;
    s.timeout_s = 5;
    s.max_retry = 3;
    s.where = "inference.servers[0]";
    return s;
  }

  std::unique_ptr<LlmClient> client(const ServerConfig& s) {
    ClientOptions options;
    options.dotenv_dir = dir_;
    options.backoff_base_s = 0.05;
    options.backoff_max_s = 0.2;
    options.note = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(notes_mutex_);
      notes_.push_back(line);
    };
    auto c = make_client(s, options);
    EXPECT_TRUE(c.is_ok()) << c.message();
    return c.is_ok() ? std::move(c.value()) : nullptr;
  }

  static LlmRequest request(const std::string& purpose = "generate") {
    LlmRequest r;
    r.system = "You are a CUDA expert.";
    r.user = "Rewrite the EVOLVE block so that it runs faster on an H200.";
    r.job_name = "job_a";
    r.trial = 4;
    r.branch = 1;
    r.purpose = purpose;
    return r;
  }

  std::vector<int> statuses() const {
    std::vector<int> out;
    for (const json& line : server_->log_lines()) out.push_back(line.value("status", -1));
    return out;
  }

  std::unique_ptr<LlmTestServer> server_;
  std::mutex notes_mutex_;
  std::vector<std::string> notes_;
};

double seconds_of(const std::function<void()>& body) {
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_F(ServerClientTest, OpenaiAnswerTokensCostAndLog) {
  const std::string text = "```cuda\n__global__ void k(float* x) { x[0] = 1; }\n```";
  ServerConfig s = serve({{"responses", {{{"content", text}}}}});
  ASSERT_TRUE(server_);
  s.price_per_mtok_in = 1000000.0;  // $1 per token: the cost is readable
  s.price_per_mtok_out = 2000000.0;
  auto answers = client(s)->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  ASSERT_EQ(answers->size(), 1u);
  const LlmAnswer& a = answers->front();
  EXPECT_EQ(a.text, text);
  EXPECT_EQ(a.finish_reason, "stop");
  EXPECT_FALSE(a.truncated);
  EXPECT_EQ(a.model, "gpt-test");
  const LlmRequest r = request();
  EXPECT_EQ(a.prompt_tokens, static_cast<int64_t>((r.system.size() + r.user.size()) / 4));
  EXPECT_EQ(a.completion_tokens, static_cast<int64_t>(text.size() / 4));
  EXPECT_DOUBLE_EQ(a.cost, a.prompt_tokens * 1.0 + a.completion_tokens * 2.0);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_GT(a.latency_s, 0);

  auto log = server_->log_lines();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["path"], "/v1/chat/completions");
  EXPECT_EQ(log[0]["format"], "openai");
  EXPECT_EQ(log[0]["call"], "job=job_a;trial=4;branch=1;purpose=generate");
  EXPECT_EQ(log[0]["has_auth"], true);
  EXPECT_EQ(log[0]["model"], "gpt-test");
  EXPECT_EQ(log[0]["max_completion_tokens"], 8192) << "the current name, by default";
  EXPECT_TRUE(log[0]["max_tokens"].is_null());
  const json& keys = log[0]["request_keys"];
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "temperature"), 0) << keys.dump();
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "n"), 0) << keys.dump();
  auto raw = read_file(dir_ / "server" / "requests.jsonl");
  ASSERT_TRUE(raw.is_ok());
  EXPECT_EQ(raw->find("SECRET"), std::string::npos);  // the log never holds the key
}

TEST_F(ServerClientTest, PromptBytesThatAreNotUtf8GoEscaped) {
  // An eval log quoting a candidate's raw output: the request body must still be JSON.
  for (ServerType type : {ServerType::kOpenai, ServerType::kAnthropic}) {
    ServerConfig s = serve({{"responses", {{{"content", "ok"}}}}}, type);
    ASSERT_TRUE(server_);
    LlmRequest r = request();
    r.system = "sys\xff";
    r.user = "log: \xc3(\xfe)";
    auto answers = client(s)->complete(r);
    ASSERT_TRUE(answers.is_ok()) << answers.message();
    auto log = server_->log_lines();  // the log file is shared by both servers: the last line
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(log.back()["prompt_chars"],
              std::string("sys\\xff").size() + std::string("log: \\xc3(\\xfe)").size());
    server_.reset();
  }
}

TEST_F(ServerClientTest, RateLimitHonoursRetryAfter) {
  ServerConfig s =
      serve({{"responses", {{{"fault", "rate_limit"}, {"retry_after", 1}}, {{"content", "ok"}}}}});
  ASSERT_TRUE(server_);
  auto c = client(s);
  Result<std::vector<LlmAnswer>> answers = std::vector<LlmAnswer>{};
  double took = seconds_of([&] { answers = c->complete(request()); });
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  EXPECT_EQ(answers->front().text, "ok");
  EXPECT_EQ(answers->front().attempts, 2);
  EXPECT_GE(took, 0.95);  // waited for Retry-After, not for the 0.05 s backoff
  EXPECT_EQ(statuses(), (std::vector<int>{429, 200}));
}

TEST_F(ServerClientTest, ServerErrorThenSuccess) {
  ServerConfig s = serve({{"responses", {{{"fault", "server_error"}}, {{"content", "fine"}}}}});
  ASSERT_TRUE(server_);
  auto answers = client(s)->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  EXPECT_EQ(answers->front().text, "fine");
  EXPECT_EQ(answers->front().attempts, 2);
  EXPECT_EQ(statuses(), (std::vector<int>{500, 200}));
}

TEST_F(ServerClientTest, HangPastTimeoutThenSuccess) {
  ServerConfig s =
      serve({{"responses", {{{"fault", "hang"}, {"seconds", 3}}, {{"content", "late"}}}}});
  ASSERT_TRUE(server_);
  s.timeout_s = 1;
  auto c = client(s);
  Result<std::vector<LlmAnswer>> answers = std::vector<LlmAnswer>{};
  double took = seconds_of([&] { answers = c->complete(request()); });
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  EXPECT_EQ(answers->front().text, "late");
  EXPECT_EQ(answers->front().attempts, 2);
  EXPECT_GE(took, 0.95);
  EXPECT_LT(took, 2.9);  // gave up on the hanging call instead of waiting it out
}

TEST_F(ServerClientTest, TruncatedAnswerIsReported) {
  ServerConfig s = serve({{"responses", {{{"fault", "truncated"}, {"content", "```cuda\nhalf"}}}}});
  ASSERT_TRUE(server_);
  auto answers = client(s)->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  EXPECT_TRUE(answers->front().truncated);
  EXPECT_EQ(answers->front().finish_reason, "length");
  EXPECT_EQ(answers->front().text, "```cuda\nhalf");
}

TEST_F(ServerClientTest, MalformedJsonThenSuccess) {
  ServerConfig s = serve({{"responses", {{{"fault", "malformed"}}, {{"content", "parsed"}}}}});
  ASSERT_TRUE(server_);
  auto answers = client(s)->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  EXPECT_EQ(answers->front().text, "parsed");
  EXPECT_EQ(answers->front().attempts, 2);
}

TEST_F(ServerClientTest, OpenaiTwoCompletionsInOneRequest) {
  ServerConfig s = serve({{"responses", {{{"content", "first"}}, {{"content", "second"}}}}});
  ASSERT_TRUE(server_);
  s.num_completions = 2;
  s.temperature = 0.5;
  auto answers = client(s)->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  ASSERT_EQ(answers->size(), 2u);
  EXPECT_EQ((*answers)[0].text, "first");
  EXPECT_EQ((*answers)[1].text, "second");
  auto log = server_->log_lines();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["n"], 2);
  EXPECT_DOUBLE_EQ(log[0]["temperature"].get<double>(), 0.5);
}

TEST_F(ServerClientTest, MaxRetryExhaustedNamesServerStatusAndBody) {
  ServerConfig s = serve({{"responses", json::array()}, {"default", {{"fault", "server_error"}}}});
  ASSERT_TRUE(server_);
  s.max_retry = 2;
  auto answers = client(s)->complete(request());
  ASSERT_FALSE(answers.is_ok());
  const std::string& m = answers.message();
  EXPECT_NE(m.find("openai:gpt-test"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 500"), std::string::npos) << m;
  EXPECT_NE(m.find("internal error (scripted)"), std::string::npos) << m;
  EXPECT_NE(m.find("3 attempts"), std::string::npos) << m;
  EXPECT_EQ(m.find("SECRET"), std::string::npos) << m;
  EXPECT_EQ(statuses(), (std::vector<int>{500, 500, 500}));
}

TEST_F(ServerClientTest, UnreachableServerIsAnError) {
  ServerConfig s = serve({{"responses", json::array()}});
  s.base_url = "http://127.0.0.1:1/v1";  // nothing listens there
  s.max_retry = 1;
  auto answers = client(s)->complete(request());
  ASSERT_FALSE(answers.is_ok());
  EXPECT_NE(answers.message().find("cannot reach http://127.0.0.1:1/v1/chat/completions"),
            std::string::npos)
      << answers.message();
  EXPECT_NE(answers.message().find("2 attempts"), std::string::npos) << answers.message();
}

TEST_F(ServerClientTest, LocalServerWithoutKeySendsNoAuth) {
  ServerConfig s = serve({{"responses", {{{"content", "local"}}}}});
  ASSERT_TRUE(server_);
  s.api_key_env = "KF_TEST_UNSET_KEY_VAR";
  ::unsetenv("KF_TEST_UNSET_KEY_VAR");
  auto answers = client(s)->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  auto log = server_->log_lines();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["has_auth"], false);
}

TEST_F(ServerClientTest, ConcurrentCallsAllSucceed) {
  ServerConfig s = serve({{"responses", json::array()}, {"default", {{"content", "same"}}}});
  ASSERT_TRUE(server_);
  auto c = client(s);
  std::vector<std::thread> threads;
  std::vector<int> ok(6, 0);
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&, i] {
      LlmRequest r = request();
      r.branch = i;
      auto answers = c->complete(r);
      ok[i] = answers.is_ok() && answers->front().text == "same";
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, std::vector<int>(6, 1));
  std::set<std::string> calls;
  for (const json& line : server_->log_lines()) calls.insert(line["call"].get<std::string>());
  EXPECT_EQ(calls.size(), 6u);
}

TEST_F(ServerClientTest, AnthropicAnswerPurposeAndHeaders) {
  ServerConfig s = serve({{"responses",
                           {{{"purpose", "feedback"}, {"content", "condensed log"}},
                            {{"format", "anthropic"}, {"content", "```cuda\nk\n```"}}}}},
                         ServerType::kAnthropic);
  ASSERT_TRUE(server_);
  s.price_per_mtok_in = 3.0;
  s.price_per_mtok_out = 15.0;
  auto c = client(s);
  auto generated = c->complete(request("generate"));
  ASSERT_TRUE(generated.is_ok()) << generated.message();
  EXPECT_EQ(generated->front().text, "```cuda\nk\n```");
  EXPECT_EQ(generated->front().finish_reason, "end_turn");
  EXPECT_GT(generated->front().prompt_tokens, 0);
  EXPECT_DOUBLE_EQ(
      generated->front().cost,
      (generated->front().prompt_tokens * 3.0 + generated->front().completion_tokens * 15.0) / 1e6);
  auto feedback = c->complete(request("feedback"));
  ASSERT_TRUE(feedback.is_ok()) << feedback.message();
  EXPECT_EQ(feedback->front().text, "condensed log");

  auto log = server_->log_lines();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0]["path"], "/v1/messages");
  EXPECT_EQ(log[0]["format"], "anthropic");
  EXPECT_EQ(log[0]["has_auth"], true);
  EXPECT_EQ(log[0]["anthropic_version"], "2023-06-01");
  EXPECT_EQ(log[1]["call"], "job=job_a;trial=4;branch=1;purpose=feedback");
  const json& keys = log[0]["request_keys"];
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "system"), 1) << keys.dump();
}

TEST_F(ServerClientTest, AnthropicRetriesTruncationAndSeveralAnswers) {
  ServerConfig s = serve({{"responses",
                           {{{"fault", "rate_limit"}, {"retry_after", 0}},
                            {{"fault", "truncated"}, {"content", "cut"}},
                            {{"fault", "malformed"}},
                            {{"content", "whole"}}}}},
                         ServerType::kAnthropic);
  ASSERT_TRUE(server_);
  s.num_completions = 2;
  auto answers = client(s)->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  ASSERT_EQ(answers->size(), 2u);
  EXPECT_EQ((*answers)[0].text, "cut");
  EXPECT_TRUE((*answers)[0].truncated);
  EXPECT_EQ((*answers)[0].finish_reason, "max_tokens");
  EXPECT_EQ((*answers)[0].attempts, 2);
  EXPECT_EQ((*answers)[1].text, "whole");
  EXPECT_FALSE((*answers)[1].truncated);
  EXPECT_EQ((*answers)[1].attempts, 2);
  EXPECT_EQ(statuses(), (std::vector<int>{429, 200, 200, 200}));
}

TEST_F(ServerClientTest, CancelEndsACallInFlightWithoutWaitingForTheTimeout) {
  ServerConfig s = serve({{"responses", {{{"fault", "hang"}, {"seconds", 20}}}}});
  s.timeout_s = 30;
  auto c = client(s);
  ASSERT_TRUE(c);
  reset_llm_cancel();
  auto start = std::chrono::steady_clock::now();
  std::thread canceller([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel_llm_calls();
  });
  auto r = c->complete(request());
  canceller.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  reset_llm_cancel();
  EXPECT_FALSE(r.is_ok());
  EXPECT_LT(seconds, 5.0) << "libcurl's progress callback aborts the transfer";
  EXPECT_EQ(server_->log_lines().size(), 1u) << "no retry after a cancel";
}

// ---- Current provider APIs (issue 13) -------------------------------------------------------

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(ServerClientTest, ReasoningModelRejectsMaxTokensWithTheRealErrorShape) {
  // token_limit_param: max_tokens is what an old client sends; the model refuses it as OpenAI
  // does, and the error says which key to change.
  ServerConfig s = serve({{"reasoning_models", {"o3-test"}}, {"default", {{"content", "x"}}}});
  ASSERT_TRUE(server_);
  s.model_name = "o3-test";
  s.temperature.reset();
  s.token_limit_param = TokenLimitParam::kMaxTokens;
  auto answers = client(s)->complete(request());
  ASSERT_FALSE(answers.is_ok());
  const std::string& m = answers.message();
  EXPECT_TRUE(contains(m,
                       "HTTP 400: Unsupported parameter: 'max_tokens' is not supported with "
                       "this model. Use 'max_completion_tokens' instead."))
      << m;
  EXPECT_TRUE(contains(m, "token_limit_param")) << m;
  EXPECT_EQ(statuses(), (std::vector<int>{400})) << "a 400 is not retried";

  // The default (auto) sends the current name: accepted at once.
  s.token_limit_param = TokenLimitParam::kAuto;
  auto ok = client(s)->complete(request());
  ASSERT_TRUE(ok.is_ok()) << ok.message();
  auto log = server_->log_lines();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1]["max_completion_tokens"], 8192);
  EXPECT_TRUE(log[1]["max_tokens"].is_null());
}

TEST_F(ServerClientTest, AutoTokenLimitSwitchesOnceAndRemembersIt) {
  // An older compatible server that knows only max_tokens.
  ServerConfig s = serve({{"legacy_models", {"old-test"}}, {"default", {{"content", "fine"}}}});
  ASSERT_TRUE(server_);
  s.model_name = "old-test";
  auto c = client(s);
  for (int i = 0; i < 3; ++i) {
    auto answers = c->complete(request());
    ASSERT_TRUE(answers.is_ok()) << answers.message();
    EXPECT_EQ(answers->front().text, "fine");
  }
  EXPECT_EQ(statuses(), (std::vector<int>{400, 200, 200, 200})) << "one rejection in the job";
  auto log = server_->log_lines();
  EXPECT_EQ(log[0]["max_completion_tokens"], 8192);
  for (size_t i = 1; i < log.size(); ++i) {
    EXPECT_EQ(log[i]["max_tokens"], 8192) << i;
    EXPECT_TRUE(log[i]["max_completion_tokens"].is_null()) << i;
  }
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_TRUE(contains(notes_[0], "rejects 'max_completion_tokens'")) << notes_[0];
  EXPECT_TRUE(contains(notes_[0], "sending 'max_tokens'")) << notes_[0];
  EXPECT_TRUE(contains(notes_[0], "inference.servers[0]")) << notes_[0];

  // An explicit name is never switched: the error names the key to change.
  ServerConfig fixed = s;
  fixed.token_limit_param = TokenLimitParam::kMaxCompletionTokens;
  auto refused = client(fixed)->complete(request());
  ASSERT_FALSE(refused.is_ok());
  EXPECT_TRUE(contains(refused.message(), "token_limit_param")) << refused.message();
}

TEST_F(ServerClientTest, RejectedTemperatureAndTopPAreDroppedWithANote) {
  ServerConfig s = serve({{"reasoning_models", {"o3-test"}},
                          {"default", {{"content", "```cuda\nk\n```"}, {"reasoning_tokens", 40}}}});
  ASSERT_TRUE(server_);
  s.model_name = "o3-test";
  s.temperature = 0.7;  // the schema's default: a reasoning model refuses it
  s.top_p = 0.9;
  s.reasoning_effort = "high";
  s.price_per_mtok_in = 1000000.0;
  s.price_per_mtok_out = 2000000.0;
  auto c = client(s);
  auto answers = c->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  const LlmAnswer& a = answers->front();
  EXPECT_EQ(a.text, "```cuda\nk\n```");
  EXPECT_EQ(a.reasoning_tokens, 40);
  EXPECT_EQ(a.completion_tokens, static_cast<int64_t>(a.text.size() / 4) + 40)
      << "reasoning tokens are part of the completion, and priced as output";
  EXPECT_DOUBLE_EQ(a.cost, a.prompt_tokens * 1.0 + a.completion_tokens * 2.0);
  EXPECT_EQ(statuses(), (std::vector<int>{400, 400, 200}));
  ASSERT_EQ(notes_.size(), 2u);
  EXPECT_TRUE(contains(notes_[0], "rejects temperature")) << notes_[0];
  EXPECT_TRUE(contains(notes_[1], "rejects top_p")) << notes_[1];

  // Remembered: the next call goes through at once, with reasoning_effort.
  auto again = c->complete(request());
  ASSERT_TRUE(again.is_ok()) << again.message();
  auto log = server_->log_lines();
  ASSERT_EQ(log.size(), 4u);
  const json& last = log.back();
  EXPECT_EQ(last["status"], 200);
  EXPECT_TRUE(last["temperature"].is_null());
  EXPECT_TRUE(last["top_p"].is_null());
  EXPECT_EQ(last["reasoning_effort"], "high");
  EXPECT_EQ(notes_.size(), 2u) << "each note once";
}

TEST_F(ServerClientTest, OpenaiCachedTokensAreReadAndPricedAtTheirRate) {
  ServerConfig s = serve({{"cache_min_tokens", 0}, {"default", {{"content", "ok"}}}});
  ASSERT_TRUE(server_);
  s.price_per_mtok_in = 1000000.0;
  s.price_per_mtok_cached_in = 100000.0;  // a tenth
  s.price_per_mtok_out = 0;
  LlmRequest r = request();
  r.user = std::string(4000, 's') + "\nthe changing part: 1";  // a long static prefix
  auto c = client(s);
  auto first = c->complete(r);
  ASSERT_TRUE(first.is_ok()) << first.message();
  EXPECT_EQ(first->front().cached_tokens, 0);
  r.user = std::string(4000, 's') + "\nthe changing part: 2";
  auto second = c->complete(r);
  ASSERT_TRUE(second.is_ok()) << second.message();
  const LlmAnswer& a = second->front();
  EXPECT_EQ(a.cached_tokens, 896) << "the shared 4000+ characters, in steps of 128 tokens";
  EXPECT_DOUBLE_EQ(a.cost, (a.prompt_tokens - 896) * 1.0 + 896 * 0.1);
}

TEST_F(ServerClientTest, OpenaiThinkTextAndReasoningContentAreNotTheAnswer) {
  ServerConfig s = serve(
      {{"responses",
        {{{"content", "<think>\nMaybe ```cuda\nwrong\n``` no.\n</think>\n\n```cuda\nright\n```"}},
         {{"content", "```cuda\nalso right\n```"},
          {"reasoning_content", "```cuda\nwrong\n```"}}}}});
  ASSERT_TRUE(server_);
  auto c = client(s);
  auto first = c->complete(request());
  ASSERT_TRUE(first.is_ok()) << first.message();
  EXPECT_EQ(first->front().text, "```cuda\nright\n```");
  auto second = c->complete(request());
  ASSERT_TRUE(second.is_ok()) << second.message();
  EXPECT_EQ(second->front().text, "```cuda\nalso right\n```");
}

TEST_F(ServerClientTest, AnthropicThinkingBlockComesFirstAndIsNotTheAnswer) {
  ServerConfig s = serve({{"default",
                           {{"content", "```cuda\nfinal\n```"},
                            {"thinking", "First idea:\n```cuda\ndraft\n```\nbetter not."}}}},
                         ServerType::kAnthropic);
  ASSERT_TRUE(server_);
  s.max_tokens = 16000;
  s.thinking_budget_tokens = 4096;
  s.temperature = 0.7;  // the shipped default: thinking refuses it, so it is not sent
  auto answers = client(s)->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  const LlmAnswer& a = answers->front();
  EXPECT_EQ(a.text, "```cuda\nfinal\n```");
  EXPECT_GT(a.reasoning_tokens, 0);
  EXPECT_GT(a.completion_tokens, a.reasoning_tokens);
  auto log = server_->log_lines();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["status"], 200);
  EXPECT_EQ(log[0]["thinking"], json({{"type", "enabled"}, {"budget_tokens", 4096}}));
  EXPECT_TRUE(log[0]["temperature"].is_null());
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_TRUE(contains(notes_[0], "takes no temperature")) << notes_[0];
}

TEST_F(ServerClientTest, AnthropicCachesTheStaticPrefixAndPricesReadsAndWrites) {
  ServerConfig s =
      serve({{"cache_min_tokens", 0}, {"default", {{"content", "ok"}}}}, ServerType::kAnthropic);
  ASSERT_TRUE(server_);
  s.price_per_mtok_in = 1000000.0;
  s.price_per_mtok_cached_in = 100000.0;
  s.price_per_mtok_out = 0;  // the write price stays unset: 1.25 x the input price
  LlmRequest r = request();
  const std::string prefix = std::string(2000, 'p') + "\n\n";
  r.user = prefix + "iteration 1";
  r.cache_prefix_chars = prefix.size();
  auto c = client(s);
  auto first = c->complete(r);
  ASSERT_TRUE(first.is_ok()) << first.message();
  const int64_t cached = static_cast<int64_t>((r.system.size() + prefix.size()) / 4);
  EXPECT_EQ(first->front().cache_write_tokens, cached);
  EXPECT_EQ(first->front().cached_tokens, 0);
  EXPECT_EQ(first->front().prompt_tokens,
            static_cast<int64_t>((r.system.size() + r.user.size()) / 4))
      << "every input token, the cached ones included";
  r.user = prefix + "iteration 2";
  auto second = c->complete(r);
  ASSERT_TRUE(second.is_ok()) << second.message();
  const LlmAnswer& a = second->front();
  EXPECT_EQ(a.cached_tokens, cached);
  EXPECT_EQ(a.cache_write_tokens, 0);
  EXPECT_DOUBLE_EQ(a.cost, (a.prompt_tokens - cached) * 1.0 + cached * 0.1);
  EXPECT_DOUBLE_EQ(first->front().cost,
                   (first->front().prompt_tokens - cached) * 1.0 + cached * 1.25);
  auto log = server_->log_lines();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0]["cache_marks"], 1);

  // Opted out: no mark, nothing cached.
  s.prompt_caching = false;
  auto plain = client(s)->complete(r);
  ASSERT_TRUE(plain.is_ok()) << plain.message();
  EXPECT_EQ(plain->front().cached_tokens, 0);
  EXPECT_EQ(server_->log_lines().back()["cache_marks"], 0);
}

TEST_F(ServerClientTest, RefusalsOfBothApisAreNamedNotTruncated) {
  for (ServerType type : {ServerType::kOpenai, ServerType::kAnthropic}) {
    ServerConfig s = serve({{"default", {{"fault", "refused"}, {"content", ""}}}}, type);
    ASSERT_TRUE(server_);
    auto answers = client(s)->complete(request());
    ASSERT_TRUE(answers.is_ok()) << answers.message();
    const LlmAnswer& a = answers->front();
    EXPECT_EQ(a.finish_reason, type == ServerType::kOpenai ? "content_filter" : "refusal");
    EXPECT_TRUE(stop_refused(a.finish_reason));
    EXPECT_FALSE(a.truncated);
    std::string reason = refusal_reason(s.label(), a.finish_reason);
    EXPECT_TRUE(contains(reason, s.label())) << reason;
    EXPECT_TRUE(contains(reason, a.finish_reason)) << reason;
    server_.reset();
  }
}

}  // namespace
}  // namespace kf
