// Inference: LLM server configs, API keys, and the clients (OpenAI chat completions, Anthropic
// messages, replay of recorded answers) behind one interface, with retries and cost counting.
// The ensemble that picks a server per call is in infer/ensemble.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace kf {

class Store;
class HttpTransport;

enum class ServerType { kOpenai, kAnthropic, kReplay };

// How an OpenAI server is told the answer's token cap: `max_completion_tokens` (the current name;
// reasoning models accept only it), `max_tokens` (older OpenAI-compatible servers), or `auto`:
// max_completion_tokens first, the other name once the server rejects it, remembered for the job.
enum class TokenLimitParam { kAuto, kMaxCompletionTokens, kMaxTokens };

// "openai", "anthropic", "replay".
const char* server_type_name(ServerType type);

struct ServerConfig {
  ServerType type = ServerType::kOpenai;
  std::string model_name;
  std::optional<double> temperature, top_p;  // none = not sent
  int num_completions = 1, max_tokens = 8192, max_retry = 3;
  double timeout_s = 600;
  std::string base_url;  // "" = public API (https://api.openai.com/v1, https://api.anthropic.com)
  std::string replay_path;  // replay: a folder of recorded answers, or "job:<job_name>"
  std::string api_key_env;  // "" = OPENAI_API_KEY / ANTHROPIC_API_KEY by type
  std::optional<double> price_per_mtok_in, price_per_mtok_out;  // USD; none = unknown
  // Cached input tokens (a cache read) and, for Anthropic, tokens written to the cache; none =
  // the input price (read) or 1.25 x the input price (write, Anthropic's 5-minute rate).
  std::optional<double> price_per_mtok_cached_in, price_per_mtok_cache_write;
  TokenLimitParam token_limit_param = TokenLimitParam::kAuto;  // openai only
  std::string reasoning_effort;    // openai: "" = not sent; none|minimal|low|medium|high|xhigh
  int thinking_budget_tokens = 0;  // anthropic extended thinking; 0 = off
  bool prompt_caching = true;      // anthropic: cache_control on the prompt's static prefix
  std::string where;               // "inference.servers[1]", for messages

  // "openai:gpt-4o", "anthropic:claude-sonnet-4-20250514", "replay:<folder or job:name>".
  std::string label() const;
  // The base URL actually used: base_url, or the provider's public API.
  std::string effective_base_url() const;
  // The environment variable holding the key: api_key_env, or the default for the type
  // ("" for replay).
  std::string key_env() const;
};

// From one server map of the composed config (keys as in configs/inference/server.yaml; absent
// keys take their defaults). Errors name `where` and the key.
Result<ServerConfig> parse_server(const nlohmann::json& map, const std::string& where);

struct LlmRequest {
  std::string system, user;
  std::string job_name;
  int trial = 0, branch = 0;
  std::string purpose = "generate";  // or "feedback"
  // The call's place in the job, (trial - 1) x branches + branch, when the caller knows it
  // (-1 = unknown): a replay folder then serves its files in that order however calls interleave.
  int64_t sequence = -1;
  // The leading characters of `user` that are the same on every call of the job (the prompt's
  // static prefix: contract, reference, guidance); 0 = none known. Anthropic caches system +
  // this prefix (cache_control); OpenAI caches matching prefixes by itself.
  size_t cache_prefix_chars = 0;
};

struct LlmAnswer {
  // The answer only: reasoning / thinking text (Anthropic thinking blocks, a server's
  // reasoning_content, a leading <think>...</think>) is never part of it.
  std::string text, finish_reason, model;
  bool truncated = false;  // finish_reason "length" / stop_reason "max_tokens" (stop_truncated)
  // Over the answers of one call these sum to the call's usage (the prompt is counted once, on
  // the first answer, when one request produced several answers). prompt_tokens counts every
  // input token, cached ones included; completion_tokens includes the reasoning tokens.
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_tokens = 0;       // input tokens read from the provider's prompt cache
  int64_t cache_write_tokens = 0;  // input tokens written to it (Anthropic)
  int64_t reasoning_tokens = 0;    // of completion_tokens, spent on reasoning / thinking
  double cost = 0;                 // USD from the prices, 0 when unknown
  int attempts = 1;                // HTTP attempts this answer took (retries + 1)
  double latency_s = 0;
};

class LlmClient {
 public:
  virtual ~LlmClient() = default;
  // One call; num_completions answers. Errors (after retries) name the server label, the HTTP
  // status and a short body excerpt — never the API key. Thread-safe.
  virtual Result<std::vector<LlmAnswer>> complete(const LlmRequest& request) = 0;
  virtual const ServerConfig& server() const = 0;
};

struct ClientOptions {
  std::filesystem::path dotenv_dir{};  // where to look for .env ("" = current directory)
  // Exponential backoff with jitter; Retry-After (seconds or HTTP date) is honoured, capped at
  // 120 s.
  double backoff_base_s = 1.0, backoff_max_s = 30.0;
  Store* store = nullptr;  // for replay_path "job:<name>" (read when the client is made)
  // The HTTP layer; null = libcurl. Tests pass a FakeHttpTransport (infer/http.h).
  std::shared_ptr<HttpTransport> transport{};
  // How a retry waits; null = std::this_thread::sleep_for. Tests record instead.
  std::function<void(double seconds)> sleep{};
  // One-line notes on what a client adapted (a parameter the model rejected and that is no
  // longer sent); null = "kernelfoundry: note: ..." on stderr.
  std::function<void(const std::string& line)> note{};
};

Result<std::unique_ptr<LlmClient>> make_client(const ServerConfig& server,
                                               const ClientOptions& options);

// Key lookup: the environment variable first, then a KEY=value line of <dotenv_dir>/.env (quotes
// and `export ` allowed). A missing key for openai/anthropic with the public base_url is an error
// naming the variable and both ways to set it; with a custom base_url (a local server) or for
// replay it is "" and fine.
Result<std::string> find_api_key(const ServerConfig& server,
                                 const std::filesystem::path& dotenv_dir);

// The value of the X-KernelFoundry-Call header sent with every request:
// "job=<job_name>;trial=<t>;branch=<b>;purpose=<purpose>".
std::string call_header_value(const LlmRequest& request);

// Ctrl-C: ends every LLM call in flight (and its retries) with an error, now and until reset.
// Safe to call from a signal handler.
void cancel_llm_calls();
void reset_llm_cancel();
bool llm_calls_cancelled();

// Rough token count of a text (chars / 4, at least 1 for a non-empty text).
int64_t estimate_tokens(std::string_view text);

// USD for the tokens at the server's prices; an unknown price counts as 0. Of prompt_tokens,
// `cached` are priced at price_per_mtok_cached_in and `cache_write` at
// price_per_mtok_cache_write (see ServerConfig for their defaults).
double token_cost(const ServerConfig& server, int64_t prompt_tokens, int64_t completion_tokens,
                  int64_t cached = 0, int64_t cache_write = 0);

// Stop reasons of both APIs: the answer hit the token cap (OpenAI "length", Anthropic
// "max_tokens", "model_context_window_exceeded")...
bool stop_truncated(std::string_view finish_reason);
// ... or the provider withheld it (OpenAI "content_filter", Anthropic "refusal"; an OpenAI
// message.refusal is reported as "refusal").
bool stop_refused(std::string_view finish_reason);
// The verdict-0 reason of a refused answer: names the server, the stop reason and what to do.
std::string refusal_reason(const std::string& server_label, std::string_view finish_reason);

// "max_completion_tokens", "max_tokens", "auto".
const char* token_limit_param_name(TokenLimitParam param);

}  // namespace kf
