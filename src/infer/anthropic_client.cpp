// The Anthropic messages client: request body (system as a top-level field), answer parsing,
// token and cost accounting. The API has no `n`: several answers are sequential calls.
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
      : server_(std::move(server)), parts_(std::move(parts)) {}

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
    json body = {
        {"model", server_.model_name},
        {"max_tokens", server_.max_tokens},
        {"messages", json::array({{{"role", "user"}, {"content", escape_invalid_utf8(redact_secrets(request.user))}}})}};
    if (!request.system.empty()) body["system"] = escape_invalid_utf8(redact_secrets(request.system));
    if (server_.temperature) body["temperature"] = *server_.temperature;
    if (server_.top_p) body["top_p"] = *server_.top_p;

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
    int64_t input_tokens = -1, output_tokens = -1;
    auto accept = [&](const json& body) -> Status {
      if (!body.is_object() || !body.contains("content") || !body["content"].is_array())
        return Status::error("no `content` in the answer");
      answer.text.clear();
      for (const json& block : body["content"])
        if (block.is_object() && block.value("type", json()) == "text" && block.contains("text") &&
            block["text"].is_string())
          answer.text += block["text"].get<std::string>();
      answer.finish_reason = body.contains("stop_reason") && body["stop_reason"].is_string()
                                 ? body["stop_reason"].get<std::string>()
                                 : "";
      answer.truncated = answer.finish_reason == "max_tokens";
      answer.model = body.contains("model") && body["model"].is_string()
                         ? body["model"].get<std::string>()
                         : server_.model_name;
      if (body.contains("usage") && body["usage"].is_object()) {
        const json& usage = body["usage"];
        if (usage.contains("input_tokens") && usage["input_tokens"].is_number_integer())
          input_tokens = usage["input_tokens"].get<int64_t>();
        if (usage.contains("output_tokens") && usage["output_tokens"].is_number_integer())
          output_tokens = usage["output_tokens"].get<int64_t>();
      }
      return Status::ok();
    };
    int attempts = 0;
    Status status = post_with_retry(*parts_.transport, http, server_, parts_.retry, parts_.api_key,
                                    accept, attempts);
    if (!status.is_ok()) return status;
    answer.prompt_tokens = input_tokens >= 0
                               ? input_tokens
                               : estimate_tokens(request.system) + estimate_tokens(request.user);
    answer.completion_tokens = output_tokens >= 0 ? output_tokens : estimate_tokens(answer.text);
    answer.cost = token_cost(server_, answer.prompt_tokens, answer.completion_tokens);
    answer.attempts = attempts;
    answer.latency_s = seconds_since(start);
    return answer;
  }

  ServerConfig server_;
  HttpClientParts parts_;
};

}  // namespace

std::unique_ptr<LlmClient> make_anthropic_client(const ServerConfig& server,
                                                 HttpClientParts parts) {
  return std::make_unique<AnthropicClient>(server, std::move(parts));
}

}  // namespace kf
