// The OpenAI chat-completions client (also vLLM, SGLang, llama.cpp, Ollama, OpenRouter through
// base_url): request body, answer parsing, token and cost accounting, and the parameters a model
// rejects (the token cap's name, temperature / top_p of reasoning models) learned once per job.
#include <algorithm>
#include <atomic>

#include "infer/clients.h"
#include "util/secrets.h"
#include "util/strings.h"

namespace kf {

using json = nlohmann::json;

namespace {

// What a 4xx body says the server would not take: the parameter named in error.param, or quoted
// in the message ("Unsupported parameter: 'max_tokens' is not supported with this model. Use
// 'max_completion_tokens' instead."); "" when the body names none of `names`.
std::string rejected_param(const std::string& body, const std::vector<std::string>& names) {
  json parsed = json::parse(body, nullptr, false);
  std::string param, code, message = body;
  if (!parsed.is_discarded() && parsed.is_object() && parsed.contains("error") &&
      parsed["error"].is_object()) {
    const json& e = parsed["error"];
    if (e.contains("param") && e["param"].is_string()) param = e["param"].get<std::string>();
    if (e.contains("code") && e["code"].is_string()) code = e["code"].get<std::string>();
    if (e.contains("message") && e["message"].is_string())
      message = e["message"].get<std::string>();
  }
  for (const std::string& name : names)
    if (param == name &&
        (code == "unsupported_parameter" || code == "unsupported_value" || code.empty()))
      return name;
  // Proxies and compatible servers pass the message on without param/code.
  std::string lower = to_lower(message);
  bool rejects = lower.find("unsupported") != std::string::npos ||
                 lower.find("not supported") != std::string::npos ||
                 lower.find("unrecognized") != std::string::npos ||
                 lower.find("not permitted") != std::string::npos;
  if (!rejects) return "";
  // The first name quoted in the message is the one rejected (the second is the suggestion).
  size_t best = std::string::npos;
  std::string found;
  for (const std::string& name : names) {
    size_t at = message.find("'" + name + "'");
    if (at < best) best = at, found = name;
  }
  return found;
}

// A leading <think>...</think> (reasoning models served without a reasoning parser put their
// thinking into the content): cut off, so code in the thinking is never taken for the answer's.
std::string without_think_block(const std::string& text) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || text.compare(start, 7, "<think>") != 0) return text;
  size_t end = text.find("</think>", start);
  if (end == std::string::npos) return "";  // all thinking: the cap cut it before the answer
  size_t after = text.find_first_not_of(" \t\r\n", end + 8);
  return after == std::string::npos ? "" : text.substr(after);
}

class OpenaiClient : public LlmClient {
 public:
  OpenaiClient(ServerConfig server, HttpClientParts parts)
      : server_(std::move(server)), parts_(std::move(parts)) {
    use_max_tokens_ = server_.token_limit_param == TokenLimitParam::kMaxTokens;
  }

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
      messages.push_back(
          {{"role", "system"}, {"content", escape_invalid_utf8(redact_secrets(request.system))}});
    messages.push_back(
        {{"role", "user"}, {"content", escape_invalid_utf8(redact_secrets(request.user))}});
    json body = {{"model", server_.model_name},
                 {"messages", std::move(messages)},
                 {limit_name(), server_.max_tokens}};
    if (server_.temperature && !drop_temperature_) body["temperature"] = *server_.temperature;
    if (server_.top_p && !drop_top_p_) body["top_p"] = *server_.top_p;
    if (!server_.reasoning_effort.empty()) body["reasoning_effort"] = server_.reasoning_effort;
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

  const char* limit_name() const {
    return use_max_tokens_ ? "max_tokens" : "max_completion_tokens";
  }

  std::string who() const { return server_.label() + " (" + server_.where + ")"; }

  // A 400 naming a parameter this client may change: the token cap's other name (auto), or a
  // sampling parameter a reasoning model refuses (dropped). The change holds for the rest of the
  // job (this client lives as long as the job); each is noted once.
  bool adjust(const HttpResponse& response, const LlmRequest& request, int n, HttpRequest& http) {
    if (response.status != 400 && response.status != 422) return false;
    // The name this request went with (another call may have switched since it was built).
    const json sent = json::parse(http.body, nullptr, false);
    const std::string sent_limit =
        sent.is_object() && sent.contains("max_tokens") ? "max_tokens" : "max_completion_tokens";
    std::string param = rejected_param(response.body, {sent_limit, "temperature", "top_p"});
    const std::string excerpt = redact_secrets(error_excerpt(response.body));
    if (param == sent_limit) {
      if (server_.token_limit_param != TokenLimitParam::kAuto) return false;
      bool expected = false;
      if (!limit_switched_.compare_exchange_strong(expected, true)) {
        // Another call switched already: resend with the current name, unless that was it.
        if (limit_name() == sent_limit) return false;
      } else {
        use_max_tokens_ = !use_max_tokens_;
        parts_.note(
            who() + ": the server rejects '" + sent_limit + "' (HTTP " +
            std::to_string(response.status) + ": " + excerpt + "); sending '" + limit_name() +
            "' for the rest of this job (token_limit_param: " + limit_name() + " skips this)");
      }
    } else if (param == "temperature" && server_.temperature) {
      if (!drop_temperature_.exchange(true))
        parts_.note(who() + ": the model rejects temperature (" + excerpt +
                    "); no longer sent in this job (temperature: null skips this)");
    } else if (param == "top_p" && server_.top_p) {
      if (!drop_top_p_.exchange(true))
        parts_.note(who() + ": the model rejects top_p (" + excerpt +
                    "); no longer sent in this job (top_p: null skips this)");
    } else {
      return false;
    }
    http.body = http_request(request, n).body;
    return true;
  }

  // One HTTP call (with retries) asking for `n` answers.
  Result<std::vector<LlmAnswer>> call(const LlmRequest& request, int n) {
    auto start = std::chrono::steady_clock::now();
    std::vector<LlmAnswer> answers;
    int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0, reasoning_tokens = 0;
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
        // Only `content` is the answer: reasoning_content / reasoning (vLLM, SGLang, DeepSeek,
        // OpenRouter) stay out of it.
        if (message.contains("content") && message["content"].is_string())
          answer.text = without_think_block(message["content"].get<std::string>());
        if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
          answer.finish_reason = choice["finish_reason"].get<std::string>();
        // A refusal comes as message.refusal with no content.
        if (message.contains("refusal") && message["refusal"].is_string() &&
            !message["refusal"].get<std::string>().empty() && trim(answer.text).empty()) {
          answer.text = message["refusal"].get<std::string>();
          answer.finish_reason = "refusal";
        }
        answer.truncated = stop_truncated(answer.finish_reason);
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
      auto detail = [&usage](const char* object, const char* key) -> int64_t {
        if (!usage.contains(object) || !usage[object].is_object()) return 0;
        const json& o = usage[object];
        return o.contains(key) && o[key].is_number_integer() ? o[key].get<int64_t>() : 0;
      };
      cached_tokens = detail("prompt_tokens_details", "cached_tokens");
      if (cached_tokens == 0)  // DeepSeek's name for it
        cached_tokens = std::max<int64_t>(0, count("prompt_cache_hit_tokens"));
      reasoning_tokens = detail("completion_tokens_details", "reasoning_tokens");
      return Status::ok();
    };
    int attempts = 0;
    AdjustRequest adjust_request = [&](const HttpResponse& response, HttpRequest& http) {
      return adjust(response, request, n, http);
    };
    Status status = post_with_retry(*parts_.transport, http_request(request, n), server_,
                                    parts_.retry, parts_.api_key, accept, adjust_request, attempts);
    if (!status.is_ok()) return status;

    // No usage (some local servers): estimate from the texts.
    if (prompt_tokens < 0)
      prompt_tokens = estimate_tokens(request.system) + estimate_tokens(request.user);
    if (completion_tokens < 0) {
      completion_tokens = 0;
      for (const LlmAnswer& a : answers) completion_tokens += estimate_tokens(a.text);
    }
    // The prompt is paid once; the completion tokens are shared evenly (the API reports a total).
    const int64_t count = static_cast<int64_t>(answers.size());
    const int64_t share = completion_tokens / count;
    const int64_t reasoning_share = reasoning_tokens / count;
    const double latency = seconds_since(start);
    for (size_t i = 0; i < answers.size(); ++i) {
      LlmAnswer& a = answers[i];
      a.prompt_tokens = i == 0 ? prompt_tokens : 0;
      a.cached_tokens = i == 0 ? std::min(cached_tokens, prompt_tokens) : 0;
      a.completion_tokens = share + (i == 0 ? completion_tokens - share * count : 0);
      a.reasoning_tokens =
          reasoning_share + (i == 0 ? reasoning_tokens - reasoning_share * count : 0);
      a.cost = token_cost(server_, a.prompt_tokens, a.completion_tokens, a.cached_tokens);
      a.attempts = attempts;
      a.latency_s = latency;
    }
    return answers;
  }

  ServerConfig server_;
  HttpClientParts parts_;
  // Learned in this job: the cap's name (auto switches once), parameters the model rejects.
  std::atomic<bool> use_max_tokens_{false}, limit_switched_{false};
  std::atomic<bool> drop_temperature_{false}, drop_top_p_{false};
};

}  // namespace

std::unique_ptr<LlmClient> make_openai_client(const ServerConfig& server, HttpClientParts parts) {
  return std::make_unique<OpenaiClient>(server, std::move(parts));
}

}  // namespace kf
