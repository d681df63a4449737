// The OpenAI chat-completions client (also vLLM, SGLang, llama.cpp, Ollama, OpenRouter through
// base_url): request body, answer parsing, token and cost accounting.
#include <algorithm>

#include "infer/clients.h"
#include "util/secrets.h"
#include "util/strings.h"

namespace kf {

using json = nlohmann::json;

namespace {

class OpenaiClient : public LlmClient {
 public:
  OpenaiClient(ServerConfig server, HttpClientParts parts)
      : server_(std::move(server)), parts_(std::move(parts)) {}

  const ServerConfig& server() const override { return server_; }

  Result<std::vector<LlmAnswer>> complete(const LlmRequest& request) override {
    std::vector<LlmAnswer> answers;
    // A server that ignores `n` returns one choice: ask again for the rest.
    while (static_cast<int>(answers.size()) < server_.num_completions) {
      int wanted = server_.num_completions - static_cast<int>(answers.size());
      auto more = call(request, wanted);
      if (!more) return more.status();
      for (LlmAnswer& a : more.value())
        if (static_cast<int>(answers.size()) < server_.num_completions)
          answers.push_back(std::move(a));
    }
    return answers;
  }

 private:
  HttpRequest http_request(const LlmRequest& request, int n) const {
    // No secret (a key, a .env value copied into a package file) leaves in a prompt. JSON holds
    // only UTF-8: other bytes (a candidate's output in an eval log) go as `\xNN`.
    json messages = json::array();
    if (!request.system.empty())
      messages.push_back({{"role", "system"}, {"content", escape_invalid_utf8(redact_secrets(request.system))}});
    messages.push_back({{"role", "user"}, {"content", escape_invalid_utf8(redact_secrets(request.user))}});
    json body = {{"model", server_.model_name},
                 {"messages", std::move(messages)},
                 {"max_tokens", server_.max_tokens}};
    if (server_.temperature) body["temperature"] = *server_.temperature;
    if (server_.top_p) body["top_p"] = *server_.top_p;
    if (n > 1) body["n"] = n;

    HttpRequest http;
    http.url = server_.effective_base_url() + "/chat/completions";
    http.body = body.dump(-1, ' ', false, json::error_handler_t::replace);  // never throws
    http.timeout_s = server_.timeout_s;
    http.headers = {{"Content-Type", "application/json"},
                    {"X-KernelFoundry-Call", call_header_value(request)}};
    if (!parts_.api_key.empty())
      http.headers.emplace_back("Authorization", "Bearer " + parts_.api_key);
    return http;
  }

  // One HTTP call (with retries) asking for `n` answers.
  Result<std::vector<LlmAnswer>> call(const LlmRequest& request, int n) {
    auto start = std::chrono::steady_clock::now();
    std::vector<LlmAnswer> answers;
    int64_t prompt_tokens = 0, completion_tokens = 0;
    auto accept = [&](const json& body) -> Status {
      answers.clear();
      if (!body.is_object() || !body.contains("choices") || !body["choices"].is_array() ||
          body["choices"].empty())
        return Status::error("no `choices` in the answer");
      std::string model = body.contains("model") && body["model"].is_string()
                              ? body["model"].get<std::string>()
                              : server_.model_name;
      for (const json& choice : body["choices"]) {
        if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
          return Status::error("a choice without a `message`");
        const json& message = choice["message"];
        LlmAnswer answer;
        if (message.contains("content") && message["content"].is_string())
          answer.text = message["content"].get<std::string>();
        if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
          answer.finish_reason = choice["finish_reason"].get<std::string>();
        answer.truncated = answer.finish_reason == "length";
        answer.model = model;
        answers.push_back(std::move(answer));
      }
      const json usage =
          body.contains("usage") && body["usage"].is_object() ? body["usage"] : json();
      auto count = [&usage](const char* key) -> int64_t {
        return usage.contains(key) && usage[key].is_number_integer() ? usage[key].get<int64_t>()
                                                                     : -1;
      };
      prompt_tokens = count("prompt_tokens");
      completion_tokens = count("completion_tokens");
      return Status::ok();
    };
    int attempts = 0;
    Status status = post_with_retry(*parts_.transport, http_request(request, n), server_,
                                    parts_.retry, parts_.api_key, accept, attempts);
    if (!status.is_ok()) return status;

    // No usage (some local servers): estimate from the texts.
    if (prompt_tokens < 0)
      prompt_tokens = estimate_tokens(request.system) + estimate_tokens(request.user);
    if (completion_tokens < 0) {
      completion_tokens = 0;
      for (const LlmAnswer& a : answers) completion_tokens += estimate_tokens(a.text);
    }
    // The prompt is paid once; the completion tokens are shared evenly (the API reports a total).
    const int64_t share = completion_tokens / static_cast<int64_t>(answers.size());
    const double latency = seconds_since(start);
    for (size_t i = 0; i < answers.size(); ++i) {
      LlmAnswer& a = answers[i];
      a.prompt_tokens = i == 0 ? prompt_tokens : 0;
      a.completion_tokens = share + (i == 0 ? completion_tokens - share * answers.size() : 0);
      a.cost = token_cost(server_, a.prompt_tokens, a.completion_tokens);
      a.attempts = attempts;
      a.latency_s = latency;
    }
    return answers;
  }

  ServerConfig server_;
  HttpClientParts parts_;
};

}  // namespace

std::unique_ptr<LlmClient> make_openai_client(const ServerConfig& server, HttpClientParts parts) {
  return std::make_unique<OpenaiClient>(server, std::move(parts));
}

}  // namespace kf
