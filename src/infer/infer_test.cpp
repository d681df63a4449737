// Tests for server configs (parse and validate), API key lookup (.env included, the key never in
// a message), the call header and make_client's own errors.
#include "infer/infer.h"

#include <gtest/gtest.h>

#include "infer/test_support.h"

namespace kf {
namespace {

using json = nlohmann::json;

json full_server() {
  return json::parse(R"({
    "server_type": "openai", "model_name": "gpt-4o", "temperature": 0.3, "num_completions": 2,
    "max_tokens": 1000, "timeout": 30, "base_url": "http://localhost:8000/v1/", "top_p": 0.9,
    "max_retry": 5, "replay_path": null, "api_key_env": "MY_KEY", "price_per_mtok_in": 2.5,
    "price_per_mtok_out": 10.0})");
}

TEST(ParseServerTest, ReadsEveryKey) {
  auto s = parse_server(full_server(), "inference.servers[0]");
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(s->type, ServerType::kOpenai);
  EXPECT_EQ(s->model_name, "gpt-4o");
  EXPECT_DOUBLE_EQ(s->temperature.value(), 0.3);
  EXPECT_DOUBLE_EQ(s->top_p.value(), 0.9);
  EXPECT_EQ(s->num_completions, 2);
  EXPECT_EQ(s->max_tokens, 1000);
  EXPECT_EQ(s->max_retry, 5);
  EXPECT_DOUBLE_EQ(s->timeout_s, 30);
  EXPECT_EQ(s->base_url, "http://localhost:8000/v1");  // trailing slash dropped
  EXPECT_EQ(s->api_key_env, "MY_KEY");
  EXPECT_DOUBLE_EQ(s->price_per_mtok_in.value(), 2.5);
  EXPECT_DOUBLE_EQ(s->price_per_mtok_out.value(), 10.0);
  EXPECT_EQ(s->where, "inference.servers[0]");
  EXPECT_EQ(s->label(), "openai:gpt-4o");
  EXPECT_EQ(s->key_env(), "MY_KEY");
}

TEST(ParseServerTest, DefaultsAndNulls) {
  auto s = parse_server(json{{"server_type", "anthropic"}, {"model_name", "claude-x"}}, "w");
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(s->type, ServerType::kAnthropic);
  EXPECT_DOUBLE_EQ(s->temperature.value(), 0.7);  // the schema's default
  EXPECT_FALSE(s->top_p.has_value());
  EXPECT_EQ(s->num_completions, 1);
  EXPECT_EQ(s->max_tokens, 8192);
  EXPECT_EQ(s->max_retry, 3);
  EXPECT_DOUBLE_EQ(s->timeout_s, 600);
  EXPECT_EQ(s->key_env(), "ANTHROPIC_API_KEY");
  EXPECT_EQ(s->effective_base_url(), "https://api.anthropic.com");
  EXPECT_FALSE(s->price_per_mtok_in.has_value());

  auto n = parse_server(json{{"model_name", "gpt-4o"}, {"temperature", nullptr}}, "w");
  ASSERT_TRUE(n.is_ok()) << n.message();
  EXPECT_FALSE(n->temperature.has_value());
  EXPECT_EQ(n->key_env(), "OPENAI_API_KEY");
  EXPECT_EQ(n->effective_base_url(), "https://api.openai.com/v1");

  auto r = parse_server(json{{"server_type", "replay"}, {"replay_path", "job:run1"}}, "w");
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r->label(), "replay:job:run1");
  EXPECT_EQ(r->key_env(), "");
}

struct BadCase {
  json patch;
  std::string expected;  // a part of the message
};

TEST(ParseServerTest, ErrorsNameWhereAndKey) {
  const std::string w = "inference.servers[1]";
  std::vector<BadCase> cases = {
      {{{"server_type", "gemini"}}, w + ".server_type: unknown server type 'gemini'"},
      {{{"temperature", "hot"}}, w + ".temperature: expected a number"},
      {{{"temperature", 3}}, w + ".temperature: must be between 0 and 2"},
      {{{"top_p", 1.5}}, w + ".top_p: must be between 0 and 1"},
      {{{"num_completions", 0}}, w + ".num_completions: must be >= 1"},
      {{{"max_tokens", 2.5}}, w + ".max_tokens: expected a whole number"},
      {{{"max_retry", -1}}, w + ".max_retry: must be >= 0"},
      {{{"timeout", 0}}, w + ".timeout: must be > 0"},
      {{{"timeout", nullptr}}, w + ".timeout: must be a number, not null"},
      {{{"price_per_mtok_in", -1}}, w + ".price_per_mtok_in: must be >= 0"},
      {{{"model_name", ""}}, w + ".model_name: required for a openai server"},
      {{{"base_url", "localhost:8000"}}, w + ".base_url: 'localhost:8000' is not an http://"},
      {{{"temprature", 0.5}}, w + ".temprature: not a server key; did you mean `temperature`?"},
      {{{"server_type", "replay"}, {"replay_path", nullptr}}, w + ".replay_path: required"},
  };
  for (const BadCase& c : cases) {
    json map = full_server();
    for (const auto& [k, v] : c.patch.items()) map[k] = v;
    auto s = parse_server(map, w);
    ASSERT_FALSE(s.is_ok()) << c.patch.dump();
    EXPECT_NE(s.message().find(c.expected), std::string::npos)
        << "patch " << c.patch.dump() << "\nmessage: " << s.message();
  }
  EXPECT_FALSE(parse_server(json::array(), w).is_ok());
}

TEST(ParseServerTest, ProviderApiKeys) {
  auto o = parse_server(json{{"model_name", "o3"},
                             {"token_limit_param", "max_tokens"},
                             {"reasoning_effort", "HIGH"},
                             {"price_per_mtok_cached_in", 0.5},
                             {"thinking", {{"budget_tokens", nullptr}}}},
                        "w");
  ASSERT_TRUE(o.is_ok()) << o.message();
  EXPECT_EQ(o->token_limit_param, TokenLimitParam::kMaxTokens);
  EXPECT_EQ(o->reasoning_effort, "high");
  EXPECT_DOUBLE_EQ(o->price_per_mtok_cached_in.value(), 0.5);
  EXPECT_EQ(o->thinking_budget_tokens, 0);
  auto d = parse_server(json{{"model_name", "gpt-4o"}}, "w");
  ASSERT_TRUE(d.is_ok()) << d.message();
  EXPECT_EQ(d->token_limit_param, TokenLimitParam::kAuto);
  EXPECT_TRUE(d->reasoning_effort.empty());
  EXPECT_TRUE(d->prompt_caching);

  auto a = parse_server(json{{"server_type", "anthropic"},
                             {"model_name", "claude-x"},
                             {"max_tokens", 16000},
                             {"prompt_caching", false},
                             {"price_per_mtok_cache_write", 3.75},
                             {"thinking", {{"budget_tokens", 4096}}}},
                        "w");
  ASSERT_TRUE(a.is_ok()) << a.message();
  EXPECT_EQ(a->thinking_budget_tokens, 4096);
  EXPECT_FALSE(a->prompt_caching);
  EXPECT_DOUBLE_EQ(a->price_per_mtok_cache_write.value(), 3.75);
}

TEST(ParseServerTest, ProviderApiKeyErrorsNameTheFix) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json{{"model_name", "m"}, {"token_limit_param", "max_len"}},
       "w.token_limit_param: 'max_len' is not one of auto, max_completion_tokens, max_tokens"},
      {json{{"model_name", "m"}, {"reasoning_effort", "extreme"}},
       "w.reasoning_effort: 'extreme' is not one of none, minimal, low, medium, high, xhigh"},
      {json{{"server_type", "anthropic"}, {"model_name", "c"}, {"reasoning_effort", "high"}},
       "w.reasoning_effort: an openai key; for an anthropic server set thinking"},
      {json{{"model_name", "m"}, {"thinking", {{"budget_tokens", 2048}}}},
       "w.thinking: Anthropic's extended thinking, for anthropic servers"},
      {json{{"server_type", "anthropic"},
            {"model_name", "c"},
            {"thinking", {{"budget_tokens", 512}}}},
       "w.thinking.budget_tokens: must be >= 1024"},
      {json{{"server_type", "anthropic"}, {"model_name", "c"}, {"thinking", {{"budget", 2048}}}},
       "w.thinking.budget: not a thinking key"},
      {json{{"server_type", "anthropic"},
            {"model_name", "c"},
            {"max_tokens", 4096},
            {"thinking", {{"budget_tokens", 4096}}}},
       "w.thinking.budget_tokens: 4096 must be less than max_tokens (4096)"},
      {json{{"model_name", "m"}, {"prompt_caching", "yes"}},
       "w.prompt_caching: expected true or false"},
  };
  for (const auto& [map, expected] : cases) {
    auto s = parse_server(map, "w");
    ASSERT_FALSE(s.is_ok()) << map.dump();
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  }
}

TEST(TokenCostTest, CachedAndWrittenTokensHaveTheirOwnRates) {
  ServerConfig s;
  s.price_per_mtok_in = 3.0;
  s.price_per_mtok_out = 15.0;
  // 1M prompt tokens: 600k cached, 100k written, 300k plain; unset cache prices fall back.
  EXPECT_DOUBLE_EQ(token_cost(s, 1000000, 0, 600000, 100000), 0.3 * 3 + 0.6 * 3 + 0.1 * 3.75);
  s.price_per_mtok_cached_in = 0.3;
  s.price_per_mtok_cache_write = 4.0;
  EXPECT_DOUBLE_EQ(token_cost(s, 1000000, 1000000, 600000, 100000),
                   0.3 * 3 + 0.6 * 0.3 + 0.1 * 4.0 + 15.0);
}

TEST(StopReasonTest, BothApisMapToTruncatedOrRefused) {
  for (const char* r : {"length", "max_tokens", "model_context_window_exceeded"}) {
    EXPECT_TRUE(stop_truncated(r)) << r;
    EXPECT_FALSE(stop_refused(r)) << r;
  }
  for (const char* r : {"content_filter", "refusal"}) {
    EXPECT_TRUE(stop_refused(r)) << r;
    EXPECT_FALSE(stop_truncated(r)) << r;
  }
  for (const char* r : {"stop", "end_turn", "stop_sequence", ""}) {
    EXPECT_FALSE(stop_refused(r)) << r;
    EXPECT_FALSE(stop_truncated(r)) << r;
  }
}

TEST(ParseServerTest, KeyPastedIntoApiKeyEnvIsNotEchoed) {
  json map = full_server();
  map["api_key_env"] = "sk-proj-SECRET123";
  auto s = parse_server(map, "w");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("w.api_key_env"), std::string::npos);
  EXPECT_EQ(s.message().find("SECRET123"), std::string::npos) << s.message();
}

class ApiKeyTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    server_.type = ServerType::kOpenai;
    server_.model_name = "gpt-4o";
    server_.api_key_env = "KF_TEST_KEY_VAR";
    server_.where = "inference.servers[0]";
  }
  ServerConfig server_;
};

TEST_F(ApiKeyTest, EnvironmentFirst) {
  ScopedEnv env("KF_TEST_KEY_VAR", "sk-from-env");
  ASSERT_TRUE(write_file(dir_ / ".env", "KF_TEST_KEY_VAR=sk-from-file\n").is_ok());
  auto key = find_api_key(server_, dir_);
  ASSERT_TRUE(key.is_ok()) << key.message();
  EXPECT_EQ(*key, "sk-from-env");
}

TEST_F(ApiKeyTest, DotenvForms) {
  ScopedEnv env("KF_TEST_KEY_VAR", nullptr);
  const std::vector<std::pair<std::string, std::string>> forms = {
      {"KF_TEST_KEY_VAR=sk-plain\n", "sk-plain"},
      {"# comment\nOTHER=1\nexport KF_TEST_KEY_VAR=sk-exported\n", "sk-exported"},
      {"KF_TEST_KEY_VAR = \"sk-double quoted\"\n", "sk-double quoted"},
      {"KF_TEST_KEY_VAR='sk-single' # note\n", "sk-single"},
      {"KF_TEST_KEY_VAR=sk-commented # note\n", "sk-commented"},
      {"KF_TEST_KEY_VAR_2=no\nKF_TEST_KEY_VAR=sk-exact\r\n", "sk-exact"},
  };
  for (const auto& [content, expected] : forms) {
    ASSERT_TRUE(write_file(dir_ / ".env", content).is_ok());
    auto key = find_api_key(server_, dir_);
    ASSERT_TRUE(key.is_ok()) << content << ": " << key.message();
    EXPECT_EQ(*key, expected) << content;
  }
}

TEST_F(ApiKeyTest, MissingKeyNamesVariableAndBothWays) {
  ScopedEnv env("KF_TEST_KEY_VAR", nullptr);
  ASSERT_TRUE(write_file(dir_ / ".env", "OPENAI_API_KEY=sk-SECRET-OTHER\nX=sk-SECRET-X\n").is_ok());
  auto key = find_api_key(server_, dir_);
  ASSERT_FALSE(key.is_ok());
  const std::string& m = key.message();
  EXPECT_NE(m.find("inference.servers[0]"), std::string::npos) << m;
  EXPECT_NE(m.find("KF_TEST_KEY_VAR"), std::string::npos) << m;
  EXPECT_NE(m.find("export KF_TEST_KEY_VAR="), std::string::npos) << m;
  EXPECT_NE(m.find((dir_ / ".env").string()), std::string::npos) << m;
  EXPECT_EQ(m.find("SECRET"), std::string::npos) << m;
}

TEST_F(ApiKeyTest, DefaultVariableByType) {
  ScopedEnv env("ANTHROPIC_API_KEY", "sk-ant-test");
  server_.type = ServerType::kAnthropic;
  server_.api_key_env = "";
  auto key = find_api_key(server_, dir_);
  ASSERT_TRUE(key.is_ok()) << key.message();
  EXPECT_EQ(*key, "sk-ant-test");
}

TEST_F(ApiKeyTest, CustomBaseUrlNeedsNoKey) {
  ScopedEnv env("KF_TEST_KEY_VAR", nullptr);
  server_.base_url = "http://localhost:8000/v1";
  auto key = find_api_key(server_, dir_);
  ASSERT_TRUE(key.is_ok()) << key.message();
  EXPECT_EQ(*key, "");
  server_.type = ServerType::kReplay;
  server_.base_url = "";
  server_.api_key_env = "";
  EXPECT_TRUE(find_api_key(server_, dir_).is_ok());
}

TEST_F(ApiKeyTest, ProviderKeyNeverGoesToAnotherHost) {
  // OPENAI_API_KEY is for api.openai.com: a custom base_url gets a key only from api_key_env.
  ScopedEnv env("OPENAI_API_KEY", "sk-openai-only");
  server_.api_key_env = "";
  server_.base_url = "https://llm.example.org/v1";
  auto key = find_api_key(server_, dir_);
  ASSERT_TRUE(key.is_ok()) << key.message();
  EXPECT_EQ(*key, "");
  server_.base_url = "";
  EXPECT_EQ(*find_api_key(server_, dir_), "sk-openai-only");
  ScopedEnv own("KF_TEST_KEY_VAR", "sk-proxy");
  server_.base_url = "https://llm.example.org/v1";
  server_.api_key_env = "KF_TEST_KEY_VAR";
  EXPECT_EQ(*find_api_key(server_, dir_), "sk-proxy");
}

TEST_F(ApiKeyTest, MakeClientReportsMissingKey) {
  ScopedEnv env("KF_TEST_KEY_VAR", nullptr);
  ClientOptions options;
  options.dotenv_dir = dir_;
  auto client = make_client(server_, options);
  ASSERT_FALSE(client.is_ok());
  EXPECT_NE(client.message().find("KF_TEST_KEY_VAR"), std::string::npos) << client.message();
}

TEST(CallHeaderTest, FormatAndSanitising) {
  LlmRequest r;
  r.job_name = "softmax_run1";
  r.trial = 3;
  r.branch = 1;
  EXPECT_EQ(call_header_value(r), "job=softmax_run1;trial=3;branch=1;purpose=generate");
  r.job_name = "bad;job=x\r\nInjected: 1";
  r.purpose = "feedback";
  std::string v = call_header_value(r);
  EXPECT_EQ(v.find('\n'), std::string::npos);
  EXPECT_EQ(v, "job=bad_job_x__Injected: 1;trial=3;branch=1;purpose=feedback");
}

TEST(TokenCostTest, EstimatesAndPrices) {
  EXPECT_EQ(estimate_tokens(""), 0);
  EXPECT_EQ(estimate_tokens("ab"), 1);
  EXPECT_EQ(estimate_tokens(std::string(400, 'x')), 100);
  ServerConfig s;
  EXPECT_DOUBLE_EQ(token_cost(s, 1000, 1000), 0);
  s.price_per_mtok_in = 2.5;
  s.price_per_mtok_out = 10;
  EXPECT_DOUBLE_EQ(token_cost(s, 1'000'000, 500'000), 2.5 + 5.0);
}

}  // namespace
}  // namespace kf
