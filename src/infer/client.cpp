// make_client: the client for a server type, with its key and transport; and what all clients
// share (the call header, token estimates, cost).
#include <cctype>
#include <iostream>

#include "infer/clients.h"

namespace kf {

namespace {

// Header values must stay on one line and keep the `;`/`=` structure readable.
std::string header_safe(const std::string& text) {
  std::string out;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (std::iscntrl(u) || c == ';' || c == '=') ? '_' : c;
  }
  return out;
}

}  // namespace

std::string call_header_value(const LlmRequest& request) {
  return "job=" + header_safe(request.job_name) + ";trial=" + std::to_string(request.trial) +
         ";branch=" + std::to_string(request.branch) + ";purpose=" + header_safe(request.purpose);
}

int64_t estimate_tokens(std::string_view text) {
  if (text.empty()) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(text.size() / 4));
}

double token_cost(const ServerConfig& server, int64_t prompt_tokens, int64_t completion_tokens,
                  int64_t cached, int64_t cache_write) {
  // Unknown cache prices fall back to what the provider charges relative to the input price
  // (a read at most the input price; Anthropic's 5-minute cache write 1.25 x): never too low.
  const double in = server.price_per_mtok_in.value_or(0);
  const double read = server.price_per_mtok_cached_in.value_or(in);
  const double write = server.price_per_mtok_cache_write.value_or(in * 1.25);
  const int64_t plain = std::max<int64_t>(0, prompt_tokens - cached - cache_write);
  double cost = (in * plain + read * cached + write * cache_write) / 1e6;
  if (server.price_per_mtok_out) cost += *server.price_per_mtok_out * completion_tokens / 1e6;
  return cost;
}

bool stop_truncated(std::string_view finish_reason) {
  return finish_reason == "length" || finish_reason == "max_tokens" ||
         finish_reason == "model_context_window_exceeded";
}

bool stop_refused(std::string_view finish_reason) {
  return finish_reason == "content_filter" || finish_reason == "refusal";
}

std::string refusal_reason(const std::string& server_label, std::string_view finish_reason) {
  std::string why = finish_reason == "content_filter"
                        ? "the provider's content filter withheld the answer"
                        : "the model refused to answer";
  return "the LLM gave no code: " + why + " (" + server_label + ", finish reason '" +
         std::string(finish_reason) +
         "'); check the task's instructions and reference for text a safety filter may read as "
         "harmful, or use another model";
}

const char* token_limit_param_name(TokenLimitParam param) {
  switch (param) {
    case TokenLimitParam::kMaxCompletionTokens:
      return "max_completion_tokens";
    case TokenLimitParam::kMaxTokens:
      return "max_tokens";
    case TokenLimitParam::kAuto:
      return "auto";
  }
  return "auto";
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Result<std::unique_ptr<LlmClient>> make_client(const ServerConfig& server,
                                               const ClientOptions& options) {
  using R = Result<std::unique_ptr<LlmClient>>;
  if (server.type == ServerType::kReplay) return make_replay_client(server, options.store);

  Result<std::string> key = find_api_key(server, options.dotenv_dir);
  if (!key) return key.status();
  HttpClientParts parts;
  parts.api_key = std::move(key.value());
  parts.transport = options.transport ? options.transport : make_curl_transport();
  parts.retry.backoff_base_s = options.backoff_base_s;
  parts.retry.backoff_max_s = options.backoff_max_s;
  parts.retry.sleep = options.sleep;
  parts.note = options.note ? options.note : [](const std::string& line) {
    std::cerr << "kernelfoundry: note: " << line << "\n";
  };
  if (server.type == ServerType::kAnthropic)
    return R(make_anthropic_client(server, std::move(parts)));
  return R(make_openai_client(server, std::move(parts)));
}

}  // namespace kf
