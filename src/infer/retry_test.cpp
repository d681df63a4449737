// Tests for the retry logic and the request/answer shapes of the HTTP clients, through
// FakeHttpTransport (no network, no real sleeping).
#include "infer/retry.h"

#include <mutex>

#include <gtest/gtest.h>

#include "infer/http.h"
#include "infer/infer.h"
#include "util/secrets.h"

namespace kf {
namespace {

using json = nlohmann::json;

TEST(RetryAfterTest, SecondsAndHttpDates) {
  EXPECT_DOUBLE_EQ(parse_retry_after("2", 0).value(), 2.0);
  EXPECT_DOUBLE_EQ(parse_retry_after(" 1.5 ", 0).value(), 1.5);
  EXPECT_DOUBLE_EQ(parse_retry_after("-3", 0).value(), 0.0);
  // 1445412480 = Wed, 21 Oct 2015 07:28:00 GMT
  EXPECT_DOUBLE_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480 - 7).value(), 7);
  EXPECT_DOUBLE_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480 + 9).value(), 0);
  EXPECT_FALSE(parse_retry_after("", 0).has_value());
  EXPECT_FALSE(parse_retry_after("soon", 0).has_value());
}

TEST(BackoffTest, ExponentialWithJitterAndCap) {
  for (int i = 0; i < 200; ++i) {
    double first = backoff_delay(1, 1.0, 30.0);
    EXPECT_GE(first, 0.5);
    EXPECT_LT(first, 1.0);
    double third = backoff_delay(3, 1.0, 30.0);
    EXPECT_GE(third, 2.0);
    EXPECT_LT(third, 4.0);
    double capped = backoff_delay(20, 1.0, 30.0);
    EXPECT_GE(capped, 15.0);
    EXPECT_LT(capped, 30.0);
  }
}

TEST(ErrorExcerptTest, PrefersTheServersMessage) {
  EXPECT_EQ(error_excerpt(R"({"error":{"message":"model not found","type":"x"}})"),
            "model not found");
  EXPECT_EQ(error_excerpt(R"({"error":"script exhausted"})"), "script exhausted");
  EXPECT_EQ(error_excerpt("<html>\nBad gateway\n</html>"), "<html> Bad gateway </html>");
  EXPECT_EQ(error_excerpt(""), "(empty body)");
  EXPECT_EQ(error_excerpt("bad \xff gateway"), "bad \\xff gateway");  // shown, stored as JSON
  EXPECT_LT(error_excerpt(std::string(5000, 'x')).size(), 500u);
}

std::string openai_answer(const std::string& text, const std::string& finish = "stop",
                          int prompt = 100, int completion = 50) {
  json body = {{"id", "c1"},
               {"object", "chat.completion"},
               {"model", "gpt-4o-2024"},
               {"choices", json::array({{{"index", 0},
                                         {"message", {{"role", "assistant"}, {"content", text}}},
                                         {"finish_reason", finish}}})},
               {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}}}};
  return body.dump();
}

// A client over a fake transport whose sleeps are recorded, not slept.
class FakeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.type = ServerType::kOpenai;
    server_.model_name = "gpt-4o";
    server_.base_url = "http://fake.test/v1";
    server_.api_key_env = "KF_FAKE_CLIENT_KEY";
    server_.where = "inference.servers[0]";
    server_.max_retry = 3;
    server_.price_per_mtok_in = 2.0;
    server_.price_per_mtok_out = 8.0;
    ::setenv("KF_FAKE_CLIENT_KEY", kKey, 1);
  }
  void TearDown() override { ::unsetenv("KF_FAKE_CLIENT_KEY"); }

  std::unique_ptr<LlmClient> client() {
    ClientOptions options;
    options.transport = http_;
    options.backoff_base_s = 0.5;
    options.backoff_max_s = 4;
    options.sleep = [this](double s) {
      std::lock_guard<std::mutex> lock(mutex_);
      sleeps_.push_back(s);
    };
    auto c = make_client(server_, options);
    EXPECT_TRUE(c.is_ok()) << c.message();
    return c.is_ok() ? std::move(c.value()) : nullptr;
  }

  LlmRequest request() const {
    LlmRequest r;
    r.system = "You write kernels.";
    r.user = "Make it fast.";
    r.job_name = "j1";
    r.trial = 2;
    r.branch = 1;
    return r;
  }

  static constexpr const char* kKey = "sk-test-SECRETKEY-42";
  ServerConfig server_;
  std::shared_ptr<FakeHttpTransport> http_ = std::make_shared<FakeHttpTransport>();
  std::mutex mutex_;
  std::vector<double> sleeps_;
};

std::string header(const HttpRequest& r, const std::string& name) {
  for (const auto& [n, v] : r.headers)
    if (n == name) return v;
  return "";
}

TEST_F(FakeClientTest, OpenaiRequestShapeAndAnswer) {
  server_.temperature.reset();
  http_->push(FakeHttpTransport::json(200, openai_answer("```cuda\nx\n```")));
  auto answers = client()->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  ASSERT_EQ(answers->size(), 1u);
  const LlmAnswer& a = answers->front();
  EXPECT_EQ(a.text, "```cuda\nx\n```");
  EXPECT_EQ(a.model, "gpt-4o-2024");
  EXPECT_EQ(a.finish_reason, "stop");
  EXPECT_FALSE(a.truncated);
  EXPECT_EQ(a.prompt_tokens, 100);
  EXPECT_EQ(a.completion_tokens, 50);
  EXPECT_DOUBLE_EQ(a.cost, (100 * 2.0 + 50 * 8.0) / 1e6);
  EXPECT_EQ(a.attempts, 1);

  ASSERT_EQ(http_->calls(), 1u);
  HttpRequest sent = http_->requests()[0];
  EXPECT_EQ(sent.url, "http://fake.test/v1/chat/completions");
  EXPECT_EQ(header(sent, "Authorization"), std::string("Bearer ") + kKey);
  EXPECT_EQ(header(sent, "X-KernelFoundry-Call"), "job=j1;trial=2;branch=1;purpose=generate");
  json body = json::parse(sent.body);
  EXPECT_EQ(body["model"], "gpt-4o");
  EXPECT_EQ(body["max_completion_tokens"], 8192);  // the current name (token_limit_param auto)
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("reasoning_effort"));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_FALSE(body.contains("top_p"));
  EXPECT_FALSE(body.contains("n"));
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "Make it fast.");
}

TEST_F(FakeClientTest, RetriesWithBackoffAndRetryAfter) {
  http_->push(FakeHttpTransport::json(500, R"({"error":{"message":"boom"}})"));
  http_->push(FakeHttpTransport::json(429, "{}", {{"retry-after", "7"}}));
  http_->push(FakeHttpTransport::timeout());
  http_->push(FakeHttpTransport::json(200, openai_answer("ok")));
  auto answers = client()->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  EXPECT_EQ(answers->front().attempts, 4);
  ASSERT_EQ(sleeps_.size(), 3u);
  EXPECT_GE(sleeps_[0], 0.25);  // backoff 1: 0.5 * [0.5, 1)
  EXPECT_LT(sleeps_[0], 0.5);
  EXPECT_DOUBLE_EQ(sleeps_[1], 7.0);  // Retry-After
  EXPECT_GE(sleeps_[2], 1.0);         // backoff 3: 2.0 * [0.5, 1)
  EXPECT_LT(sleeps_[2], 2.0);
}

TEST_F(FakeClientTest, RetryAfterIsCapped) {
  server_.max_retry = 1;
  http_->push(FakeHttpTransport::json(503, "{}", {{"retry-after", "3600"}}));
  http_->push(FakeHttpTransport::json(200, openai_answer("ok")));
  ASSERT_TRUE(client()->complete(request()).is_ok());
  ASSERT_EQ(sleeps_.size(), 1u);
  EXPECT_DOUBLE_EQ(sleeps_[0], 120.0);
}

TEST_F(FakeClientTest, MalformedAndWrongShapeAreRetried) {
  http_->push(FakeHttpTransport::json(200, "{ not json"));
  http_->push(FakeHttpTransport::json(200, R"({"object":"chat.completion"})"));
  http_->push(FakeHttpTransport::unreachable());
  http_->push(FakeHttpTransport::json(200, openai_answer("ok")));
  auto answers = client()->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  EXPECT_EQ(answers->front().attempts, 4);
}

TEST_F(FakeClientTest, ClientErrorFailsAtOnceWithoutTheKey) {
  http_->push(FakeHttpTransport::json(
      401, std::string(R"({"error":{"message":"Incorrect API key provided: )") + kKey + "\"}}"));
  auto answers = client()->complete(request());
  ASSERT_FALSE(answers.is_ok());
  EXPECT_EQ(http_->calls(), 1u);
  EXPECT_TRUE(sleeps_.empty());
  const std::string& m = answers.message();
  EXPECT_NE(m.find("openai:gpt-4o"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 401"), std::string::npos) << m;
  EXPECT_NE(m.find("Incorrect API key provided"), std::string::npos) << m;
  EXPECT_NE(m.find("KF_FAKE_CLIENT_KEY"), std::string::npos) << m;
  EXPECT_EQ(m.find("SECRETKEY"), std::string::npos) << m;
}

TEST_F(FakeClientTest, ExhaustedRetriesNameStatusAndAttempts) {
  server_.max_retry = 2;
  http_->set_handler(
      [](const HttpRequest&) { return FakeHttpTransport::json(502, "<html>bad gateway</html>"); });
  auto answers = client()->complete(request());
  ASSERT_FALSE(answers.is_ok());
  EXPECT_EQ(http_->calls(), 3u);
  const std::string& m = answers.message();
  EXPECT_NE(m.find("openai:gpt-4o (inference.servers[0])"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 502"), std::string::npos) << m;
  EXPECT_NE(m.find("bad gateway"), std::string::npos) << m;
  EXPECT_NE(m.find("3 attempts"), std::string::npos) << m;
}

TEST_F(FakeClientTest, OpenaiSeveralCompletionsShareTheUsage) {
  server_.num_completions = 3;
  json body = json::parse(openai_answer("a", "stop", 90, 31));
  body["choices"].push_back({{"index", 1},
                             {"message", {{"role", "assistant"}, {"content", "b"}}},
                             {"finish_reason", "length"}});
  http_->push(FakeHttpTransport::json(200, body.dump()));
  // This server ignored n and gave 2 of 3: the client asks again for the last one.
  http_->push(FakeHttpTransport::json(200, openai_answer("c", "stop", 90, 5)));
  auto answers = client()->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  ASSERT_EQ(answers->size(), 3u);
  EXPECT_EQ((*answers)[0].text, "a");
  EXPECT_EQ((*answers)[1].text, "b");
  EXPECT_TRUE((*answers)[1].truncated);
  EXPECT_EQ((*answers)[2].text, "c");
  EXPECT_EQ((*answers)[0].prompt_tokens + (*answers)[1].prompt_tokens, 90);
  EXPECT_EQ((*answers)[1].prompt_tokens, 0);
  EXPECT_EQ((*answers)[0].completion_tokens + (*answers)[1].completion_tokens, 31);
  ASSERT_EQ(http_->calls(), 2u);
  EXPECT_EQ(json::parse(http_->requests()[0].body)["n"], 3);
  EXPECT_FALSE(json::parse(http_->requests()[1].body).contains("n"));  // one more answer
}

TEST_F(FakeClientTest, AnthropicRequestShapeAndAnswer) {
  server_.type = ServerType::kAnthropic;
  server_.model_name = "claude-x";
  server_.base_url = "http://fake.test";
  server_.top_p = 0.5;
  server_.num_completions = 2;
  json answer = {{"type", "message"},
                 {"model", "claude-x-1"},
                 {"content", json::array({{{"type", "text"}, {"text", "part1 "}},
                                          {{"type", "text"}, {"text", "part2"}}})},
                 {"stop_reason", "max_tokens"},
                 {"usage", {{"input_tokens", 10}, {"output_tokens", 20}}}};
  http_->push(FakeHttpTransport::json(529, R"({"type":"error","error":{"message":"overloaded"}})"));
  http_->push(FakeHttpTransport::json(200, answer.dump()));
  http_->push(FakeHttpTransport::json(200, answer.dump()));
  auto answers = client()->complete(request());
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  ASSERT_EQ(answers->size(), 2u);
  EXPECT_EQ((*answers)[0].text, "part1 part2");
  EXPECT_TRUE((*answers)[0].truncated);
  EXPECT_EQ((*answers)[0].model, "claude-x-1");
  EXPECT_EQ((*answers)[0].attempts, 2);
  EXPECT_EQ((*answers)[1].attempts, 1);
  EXPECT_EQ((*answers)[0].prompt_tokens, 10);
  EXPECT_DOUBLE_EQ((*answers)[0].cost, (10 * 2.0 + 20 * 8.0) / 1e6);

  HttpRequest sent = http_->requests()[0];
  EXPECT_EQ(sent.url, "http://fake.test/v1/messages");
  EXPECT_EQ(header(sent, "x-api-key"), kKey);
  EXPECT_EQ(header(sent, "anthropic-version"), "2023-06-01");
  EXPECT_EQ(header(sent, "Authorization"), "");
  json body = json::parse(sent.body);
  // No static user prefix given: the system prompt carries the cache mark (prompt_caching).
  EXPECT_EQ(body["system"], json::parse(R"([{"type": "text", "text": "You write kernels.",
                                             "cache_control": {"type": "ephemeral"}}])"));
  EXPECT_FALSE(body.contains("thinking"));
  EXPECT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["max_tokens"], 8192);
  EXPECT_DOUBLE_EQ(body["top_p"].get<double>(), 0.5);
  EXPECT_FALSE(body.contains("n"));
}

// An error body echoing another secret of the environment (not the key this client sent) and a
// prompt holding one: neither leaves through the client.
TEST_F(FakeClientTest, OtherSecretsAreRedactedFromErrorsAndPrompts) {
  register_secret("OTHER_PROVIDER_KEY", "sk-ant-OTHER-SECRET-77");
  server_.type = ServerType::kAnthropic;
  http_->push(FakeHttpTransport::json(
      400,
      R"({"type":"error","error":{"message":"unexpected header value sk-ant-OTHER-SECRET-77"}})"));
  LlmRequest r = request();
  r.user = "the package's notes say: token sk-ant-OTHER-SECRET-77";
  auto answers = client()->complete(r);
  clear_secrets();
  ASSERT_FALSE(answers.is_ok());
  const std::string& m = answers.message();
  EXPECT_EQ(m.find("OTHER-SECRET"), std::string::npos) << m;
  EXPECT_NE(m.find("[redacted OTHER_PROVIDER_KEY]"), std::string::npos) << m;
  ASSERT_EQ(http_->requests().size(), 1u);
  EXPECT_EQ(http_->requests()[0].body.find("OTHER-SECRET"), std::string::npos)
      << http_->requests()[0].body;
}

}  // namespace
}  // namespace kf
