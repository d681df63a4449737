// The retry loop of one LLM call and its pieces: Retry-After, backoff, error excerpts.
#include "infer/retry.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>

#include "util/secrets.h"
#include "util/strings.h"

namespace kf {

using json = nlohmann::json;

std::optional<double> parse_retry_after(const std::string& value, std::time_t now) {
  std::string text = trim(value);
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (end != nullptr && *end == '\0' && std::isfinite(seconds)) return std::max(0.0, seconds);
  std::tm tm{};
  const char* parsed = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S", &tm);
  if (parsed == nullptr) return std::nullopt;
  std::time_t at = timegm(&tm);
  if (at == static_cast<std::time_t>(-1)) return std::nullopt;
  return std::max(0.0, std::difftime(at, now));
}

double backoff_delay(int retry, double base_s, double max_s) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double full = std::min(max_s, base_s * std::pow(2.0, std::max(0, retry - 1)));
  return full * std::uniform_real_distribution<double>(0.5, 1.0)(rng);
}

std::string error_excerpt(const std::string& body) {
  // Shown in messages and stored in JSON: a body that is not UTF-8 (or a cut through a character)
  // shows those bytes as `\xNN`.
  auto one_line = [](std::string text) {
    return escape_invalid_utf8(replace_all(replace_all(trim(text), "\r", " "), "\n", " "));
  };
  json parsed = json::parse(body, nullptr, false);
  if (!parsed.is_discarded() && parsed.is_object() && parsed.contains("error")) {
    const json& error = parsed["error"];
    if (error.is_object() && error.contains("message") && error["message"].is_string())
      return one_line(truncate_middle(error["message"].get<std::string>(), 300, 100));
    if (error.is_string()) return one_line(truncate_middle(error.get<std::string>(), 300, 100));
  }
  if (trim(body).empty()) return "(empty body)";
  return one_line(truncate_middle(trim(body), 300, 100));
}

namespace {

// An error body may echo any secret (the key sent, another key of the environment, a .env value):
// the client's own key first, then every registered secret (util/secrets.h).
std::string redact(std::string text, const std::string& secret) {
  if (secret.size() >= 4) text = replace_all(std::move(text), secret, "<redacted>");
  return redact_secrets(text);
}

std::string who(const ServerConfig& server) {
  return server.where.empty() ? server.label() : server.label() + " (" + server.where + ")";
}

// What one attempt came to, when it is not a success.
struct Failure {
  bool retryable = true;
  std::string text;  // without the server's name
};

std::string status_hint(int status, const ServerConfig& server, const std::string& body) {
  if (status == 401 || status == 403)
    return server.key_env().empty() ? ""
                                    : "; check the API key in " + server.key_env() +
                                          " (or .env) and that it may use this model";
  if (status == 404) return "; check model_name and base_url (" + server.effective_base_url() + ")";
  if (status == 400 && body.find("reasoning_effort") != std::string::npos)
    return "; the model takes no reasoning_effort: set reasoning_effort: null for this server";
  if (status == 400 && body.find("thinking") != std::string::npos)
    return "; the model may not support extended thinking: set thinking: null for this server, "
           "or check thinking.budget_tokens against max_tokens";
  if (status == 400 && (body.find("max_completion_tokens") != std::string::npos ||
                        body.find("max_tokens") != std::string::npos))
    return "; check max_tokens, and token_limit_param (auto, max_completion_tokens or max_tokens: "
           "the name of the cap this server accepts)";
  if (status == 400) return "; check the server's settings (max_tokens, temperature, model_name)";
  return "";
}

}  // namespace

Status post_with_retry(HttpTransport& http, const HttpRequest& request, const ServerConfig& server,
                       const RetryPolicy& policy, const std::string& secret,
                       const std::function<Status(const json&)>& accept, int& attempts) {
  return post_with_retry(http, request, server, policy, secret, accept, AdjustRequest(), attempts);
}

Status post_with_retry(HttpTransport& http, HttpRequest request, const ServerConfig& server,
                       const RetryPolicy& policy, const std::string& secret,
                       const std::function<Status(const json&)>& accept,
                       const AdjustRequest& adjust, int& attempts) {
  auto sleep = [&policy](double seconds) {
    if (seconds <= 0) return;
    if (policy.sleep) return policy.sleep(seconds);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  };
  const int max_attempts = std::max(0, server.max_retry) + 1;
  int adjustments = 0;  // resends with a changed request: not retries
  Failure last;
  for (attempts = 1;; ++attempts) {
    if (llm_calls_cancelled())
      return Status::error(who(server) + ": cancelled (Ctrl-C) before an answer arrived");
    HttpResponse response = http.post(request);
    std::optional<double> retry_after;
    if (response.timed_out) {
      last = {true, strprintf("no answer within %g s (timeout)", request.timeout_s)};
    } else if (response.status == 0) {
      last = {true, "cannot reach " + request.url + ": " + response.error};
    } else if (response.status >= 200 && response.status < 300) {
      json body = json::parse(response.body, nullptr, false);
      if (body.is_discarded()) {
        last = {true, "HTTP " + std::to_string(response.status) +
                          " with a body that is not JSON: " + error_excerpt(response.body)};
      } else {
        Status accepted = accept(body);
        if (accepted.is_ok()) return Status::ok();
        last = {true, "HTTP " + std::to_string(response.status) +
                          " with an unusable answer: " + accepted.message()};
      }
    } else {
      bool retryable = response.status == 429 || response.status >= 500;
      if (!retryable && response.status >= 400 && adjust && adjustments < kMaxAdjustments &&
          !llm_calls_cancelled() && adjust(response, request)) {
        ++adjustments;
        continue;
      }
      last = {retryable,
              "HTTP " + std::to_string(response.status) + ": " + error_excerpt(response.body) +
                  (retryable ? "" : status_hint(response.status, server, response.body))};
      if (retryable)
        retry_after = parse_retry_after(response.header("retry-after"), std::time(nullptr));
    }
    if (llm_calls_cancelled()) last.retryable = false;
    if (!last.retryable) return Status::error(redact(who(server) + ": " + last.text, secret));
    if (attempts - adjustments >= max_attempts) break;
    double wait = retry_after
                      ? std::min(*retry_after, policy.retry_after_cap_s)
                      : backoff_delay(attempts, policy.backoff_base_s, policy.backoff_max_s);
    sleep(wait);
  }
  return Status::error(redact(who(server) + ": " + last.text + " (gave up after " +
                                  std::to_string(attempts) +
                                  (attempts == 1 ? " attempt" : " attempts") +
                                  "; max_retry = " + std::to_string(server.max_retry) + ")",
                              secret));
}

}  // namespace kf
