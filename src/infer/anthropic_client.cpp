// The Anthropic messages client: request body (system as a top-level field; cache_control on the
// prompt's static prefix; extended thinking), answer parsing (thinking blocks kept out of the
// answer), token and cost accounting with cache reads and writes. The API has no `n`: several
// answers are sequential calls.
#include <algorithm>

#include "infer/clients.h"
#include "util/secrets.h"
#include "util/strings.h"

namespace kf {

using json = nlohmann::json;

namespace {

constexpr const char* kAnthropicVersion = "2023-06-01";

class AnthropicClient : public LlmClient {
 public:
  AnthropicClient(ServerConfig server, HttpClientParts parts)
      : server_(std::move(server)), parts_(std::move(parts)) {
    // Extended thinking takes no temperature, and top_p only from 0.95 to 1: not sent, and said
    // once, so a shipped temperature default never fails a job.
    if (server_.thinking_budget_tokens > 0) {
      std::string who = server_.label() + " (" + server_.where + ")";
      if (server_.temperature)
        parts_.note(who + ": extended thinking is on, which takes no temperature; temperature " +
                    strprintf("%g", *server_.temperature) +
                    " is not sent (temperature: null skips this note)");
      if (server_.top_p && *server_.top_p < 0.95)
        parts_.note(who + ": extended thinking takes top_p only from 0.95 to 1; top_p " +
                    strprintf("%g", *server_.top_p) + " is not sent");
      send_temperature_ = false;
      send_top_p_ = server_.top_p && *server_.top_p >= 0.95;
    }
  }

  const ServerConfig& server() const override { return server_; }

  Result<std::vector<LlmAnswer>> complete(const LlmRequest& request) override {
    std::vector<LlmAnswer> answers;
    HttpRequest http = http_request(request);
    for (int i = 0; i < server_.num_completions; ++i) {
      auto answer = call(request, http);
      if (!answer) return answer.status();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  // The messages endpoint under the base URL, which may or may not end in /v1.
  std::string endpoint() const {
    std::string base = server_.effective_base_url();
    return ends_with(base, "/v1") ? base + "/messages" : base + "/v1/messages";
  }

  HttpRequest http_request(const LlmRequest& request) const {
    // No secret (a key, a .env value copied into a package file) leaves in a prompt. JSON holds
    // only UTF-8: other bytes (a candidate's output in an eval log) go as `\xNN`.
    auto clean = [](const std::string& text) { return escape_invalid_utf8(redact_secrets(text)); };
    const json cache = {{"type", "ephemeral"}};
    // With caching, the user prompt goes as two text blocks, the static prefix marked with
    // cache_control: the cache then holds system + prefix (it covers everything up to the mark).
    size_t prefix = std::min(request.cache_prefix_chars, request.user.size());
    json content;
    if (server_.prompt_caching && prefix > 0) {
      content = json::array({{{"type", "text"},
                              {"text", clean(request.user.substr(0, prefix))},
                              {"cache_control", cache}}});
      if (prefix < request.user.size())
        content.push_back({{"type", "text"}, {"text", clean(request.user.substr(prefix))}});
    } else {
      content = clean(request.user);
    }
    json body = {{"model", server_.model_name},
                 {"max_tokens", server_.max_tokens},
                 {"messages", json::array({{{"role", "user"}, {"content", std::move(content)}}})}};
    if (!request.system.empty()) {
      if (server_.prompt_caching && prefix == 0)  // no user prefix: cache the system prompt
        body["system"] = json::array(
            {{{"type", "text"}, {"text", clean(request.system)}, {"cache_control", cache}}});
      else
        body["system"] = clean(request.system);
    }
    if (server_.temperature && send_temperature_) body["temperature"] = *server_.temperature;
    if (server_.top_p && send_top_p_) body["top_p"] = *server_.top_p;
    if (server_.thinking_budget_tokens > 0)
      body["thinking"] = {{"type", "enabled"}, {"budget_tokens", server_.thinking_budget_tokens}};

    HttpRequest http;
    http.url = endpoint();
    http.body = body.dump(-1, ' ', false, json::error_handler_t::replace);  // never throws
    http.timeout_s = server_.timeout_s;
    http.headers = {{"Content-Type", "application/json"},
                    {"anthropic-version", kAnthropicVersion},
                    {"X-KernelFoundry-Call", call_header_value(request)}};
    if (!parts_.api_key.empty()) http.headers.emplace_back("x-api-key", parts_.api_key);
    return http;
  }

  Result<LlmAnswer> call(const LlmRequest& request, const HttpRequest& http) {
    auto start = std::chrono::steady_clock::now();
    LlmAnswer answer;
    int64_t input_tokens = -1, output_tokens = -1, cache_read = 0, cache_write = 0;
    std::string thinking;
    auto accept = [&](const json& body) -> Status {
      if (!body.is_object() || !body.contains("content") || !body["content"].is_array())
        return Status::error("no `content` in the answer");
      answer.text.clear();
      thinking.clear();
      // Only text blocks are the answer; thinking (and redacted_thinking) blocks come first and
      // may hold code the model considered and dropped.
      for (const json& block : body["content"]) {
        if (!block.is_object()) continue;
        const json type = block.value("type", json());
        if (type == "text" && block.contains("text") && block["text"].is_string())
          answer.text += block["text"].get<std::string>();
        else if (type == "thinking" && block.contains("thinking") && block["thinking"].is_string())
          thinking += block["thinking"].get<std::string>();
      }
      answer.finish_reason = body.contains("stop_reason") && body["stop_reason"].is_string()
                                 ? body["stop_reason"].get<std::string>()
                                 : "";
      answer.truncated = stop_truncated(answer.finish_reason);
      answer.model = body.contains("model") && body["model"].is_string()
                         ? body["model"].get<std::string>()
                         : server_.model_name;
      if (body.contains("usage") && body["usage"].is_object()) {
        const json& usage = body["usage"];
        if (usage.contains("input_tokens") && usage["input_tokens"].is_number_integer())
          input_tokens = usage["input_tokens"].get<int64_t>();
        if (usage.contains("output_tokens") && usage["output_tokens"].is_number_integer())
          output_tokens = usage["output_tokens"].get<int64_t>();
        auto count = [&usage](const char* key) -> int64_t {
          return usage.contains(key) && usage[key].is_number_integer()
                     ? std::max<int64_t>(0, usage[key].get<int64_t>())
                     : 0;
        };
        cache_read = count("cache_read_input_tokens");
        cache_write = count("cache_creation_input_tokens");
      }
      return Status::ok();
    };
    int attempts = 0;
    Status status = post_with_retry(*parts_.transport, http, server_, parts_.retry, parts_.api_key,
                                    accept, attempts);
    if (!status.is_ok()) return status;
    // input_tokens counts only the tokens after the last cache mark: the prompt is all three.
    answer.prompt_tokens = input_tokens >= 0
                               ? input_tokens + cache_read + cache_write
                               : estimate_tokens(request.system) + estimate_tokens(request.user);
    answer.cached_tokens = input_tokens >= 0 ? cache_read : 0;
    answer.cache_write_tokens = input_tokens >= 0 ? cache_write : 0;
    // output_tokens includes the thinking, which the API does not count apart: estimated from
    // its text (for Claude 4 models, which return a summary, a lower bound).
    answer.completion_tokens = output_tokens >= 0
                                   ? output_tokens
                                   : estimate_tokens(answer.text) + estimate_tokens(thinking);
    answer.reasoning_tokens = std::min(estimate_tokens(thinking), answer.completion_tokens);
    answer.cost = token_cost(server_, answer.prompt_tokens, answer.completion_tokens,
                             answer.cached_tokens, answer.cache_write_tokens);
    answer.attempts = attempts;
    answer.latency_s = seconds_since(start);
    return answer;
  }

  ServerConfig server_;
  HttpClientParts parts_;
  bool send_temperature_ = true, send_top_p_ = true;
};

}  // namespace

std::unique_ptr<LlmClient> make_anthropic_client(const ServerConfig& server,
                                                 HttpClientParts parts) {
  return std::make_unique<AnthropicClient>(server, std::move(parts));
}

}  // namespace kf
