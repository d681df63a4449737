// One LLM server map of the composed config → ServerConfig, with type and range checks whose
// errors name the key.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "infer/infer.h"
#include "util/strings.h"

namespace kf {

using json = nlohmann::json;

const char* server_type_name(ServerType type) {
  switch (type) {
    case ServerType::kOpenai:
      return "openai";
    case ServerType::kAnthropic:
      return "anthropic";
    case ServerType::kReplay:
      return "replay";
  }
  return "openai";
}

std::string ServerConfig::label() const {
  if (type == ServerType::kReplay) return std::string("replay:") + replay_path;
  return std::string(server_type_name(type)) + ":" + model_name;
}

std::string ServerConfig::effective_base_url() const {
  if (!base_url.empty()) return base_url;
  return type == ServerType::kAnthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
}

std::string ServerConfig::key_env() const {
  if (!api_key_env.empty()) return api_key_env;
  if (type == ServerType::kOpenai) return "OPENAI_API_KEY";
  if (type == ServerType::kAnthropic) return "ANTHROPIC_API_KEY";
  return "";
}

namespace {

const std::vector<std::string> kServerKeys = {"server_type",
                                              "model_name",
                                              "temperature",
                                              "num_completions",
                                              "max_tokens",
                                              "timeout",
                                              "base_url",
                                              "top_p",
                                              "max_retry",
                                              "replay_path",
                                              "api_key_env",
                                              "price_per_mtok_in",
                                              "price_per_mtok_out",
                                              "price_per_mtok_cached_in",
                                              "price_per_mtok_cache_write",
                                              "token_limit_param",
                                              "reasoning_effort",
                                              "thinking",
                                              "prompt_caching"};

const std::vector<std::string> kReasoningEfforts = {"none",   "minimal", "low",
                                                    "medium", "high",    "xhigh"};
const std::vector<std::string> kTokenLimitParams = {"auto", "max_completion_tokens", "max_tokens"};
// Anthropic's smallest thinking budget.
constexpr int kMinThinkingBudget = 1024;

// Reads the keys of one map, turning every type or range problem into a message naming the key.
class MapReader {
 public:
  MapReader(const json& map, std::string where) : map_(map), where_(std::move(where)) {}

  const std::string& first_error() const { return error_; }
  bool has(const char* key) const { return map_.contains(key) && !map_.at(key).is_null(); }
  std::string key(const char* name) const { return where_ + "." + name; }

  void fail(const std::string& key_name, const std::string& what) {
    if (error_.empty()) error_ = key(key_name.c_str()) + ": " + what;
  }

  void text(const char* name, std::string& out) {
    if (!has(name)) return;
    const json& v = map_.at(name);
    if (!v.is_string()) return fail(name, "expected a string (or null), got " + v.dump());
    out = v.get<std::string>();
  }

  // `lo`/`hi` inclusive unless `lo_open`.
  void number(const char* name, std::optional<double>& out, double lo, double hi,
              bool lo_open = false) {
    if (!map_.contains(name)) return;  // absent: keep the default
    const json& v = map_.at(name);
    if (v.is_null()) {
      out.reset();
      return;
    }
    if (!v.is_number()) return fail(name, "expected a number (or null), got " + v.dump());
    double d = v.get<double>();
    if (!std::isfinite(d) || d < lo || (lo_open && d == lo) || d > hi)
      return fail(name, "must be " + range_text(lo, hi, lo_open) + ", got " + v.dump());
    out = d;
  }

  void required_number(const char* name, double& out, double lo, double hi, bool lo_open) {
    std::optional<double> value = out;
    number(name, value, lo, hi, lo_open);
    if (map_.contains(name) && map_.at(name).is_null())
      return fail(name, "must be a number, not null");
    if (value) out = *value;
  }

  void boolean(const char* name, bool& out) {
    if (!has(name)) return;
    const json& v = map_.at(name);
    if (!v.is_boolean()) return fail(name, "expected true or false, got " + v.dump());
    out = v.get<bool>();
  }

  // A string among `choices` (any case), or null / absent (out unchanged).
  void choice(const char* name, std::string& out, const std::vector<std::string>& choices) {
    if (!has(name)) return;
    const json& v = map_.at(name);
    if (!v.is_string())
      return fail(name, "expected one of " + join(choices, ", ") + " (or null), got " + v.dump());
    std::string lower = to_lower(trim(v.get<std::string>()));
    if (std::find(choices.begin(), choices.end(), lower) == choices.end())
      return fail(name, "'" + v.get<std::string>() + "' is not one of " + join(choices, ", "));
    out = lower;
  }

  void integer(const char* name, int& out, int lo) {
    if (!map_.contains(name)) return;
    const json& v = map_.at(name);
    bool integral = v.is_number_integer() ||
                    (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (!integral) return fail(name, "expected a whole number, got " + v.dump());
    double d = v.get<double>();
    if (d < lo || d > 1e9)
      return fail(name, "must be >= " + std::to_string(lo) + ", got " + v.dump());
    out = static_cast<int>(d);
  }

 private:
  static std::string range_text(double lo, double hi, bool lo_open) {
    std::string lo_text = strprintf("%g", lo);
    if (std::isinf(hi)) return (lo_open ? "> " : ">= ") + lo_text;
    return "between " + lo_text + " and " + strprintf("%g", hi);
  }

  const json& map_;
  std::string where_;
  std::string error_;
};

bool is_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

Result<ServerConfig> parse_server(const json& map, const std::string& where) {
  using R = Result<ServerConfig>;
  if (!map.is_object())
    return R::error(where + ": expected a server map (server_type, model_name, ...), got " +
                    map.dump());
  for (const auto& [key, value] : map.items()) {
    if (std::find(kServerKeys.begin(), kServerKeys.end(), key) != kServerKeys.end()) continue;
    std::string hint = nearest(key, kServerKeys);
    return R::error(where + "." + key + ": not a server key" +
                    (hint.empty() ? "" : "; did you mean `" + hint + "`?") +
                    " (keys: " + join(kServerKeys, ", ") + ")");
  }

  ServerConfig server;
  server.where = where;
  server.temperature = 0.7;  // the schema's default when the key is absent
  MapReader in(map, where);

  std::string type = "openai";
  in.text("server_type", type);
  if (type == "openai") {
    server.type = ServerType::kOpenai;
  } else if (type == "anthropic") {
    server.type = ServerType::kAnthropic;
  } else if (type == "replay") {
    server.type = ServerType::kReplay;
  } else if (in.first_error().empty()) {
    return R::error(in.key("server_type") + ": unknown server type '" + type +
                    "'; use openai, anthropic or replay");
  }
  in.text("model_name", server.model_name);
  in.number("temperature", server.temperature, 0, 2);
  in.number("top_p", server.top_p, 0, 1);
  in.integer("num_completions", server.num_completions, 1);
  in.integer("max_tokens", server.max_tokens, 1);
  in.integer("max_retry", server.max_retry, 0);
  in.required_number("timeout", server.timeout_s, 0, INFINITY, true);
  in.text("base_url", server.base_url);
  in.text("replay_path", server.replay_path);
  in.text("api_key_env", server.api_key_env);
  in.number("price_per_mtok_in", server.price_per_mtok_in, 0, INFINITY);
  in.number("price_per_mtok_out", server.price_per_mtok_out, 0, INFINITY);
  in.number("price_per_mtok_cached_in", server.price_per_mtok_cached_in, 0, INFINITY);
  in.number("price_per_mtok_cache_write", server.price_per_mtok_cache_write, 0, INFINITY);
  std::string token_limit = "auto";
  in.choice("token_limit_param", token_limit, kTokenLimitParams);
  server.token_limit_param = token_limit == "max_tokens" ? TokenLimitParam::kMaxTokens
                             : token_limit == "max_completion_tokens"
                                 ? TokenLimitParam::kMaxCompletionTokens
                                 : TokenLimitParam::kAuto;
  in.choice("reasoning_effort", server.reasoning_effort, kReasoningEfforts);
  in.boolean("prompt_caching", server.prompt_caching);
  if (!in.first_error().empty()) return R::error(in.first_error());
  if (map.contains("thinking") && !map.at("thinking").is_null()) {
    const json& thinking = map.at("thinking");
    if (!thinking.is_object())
      return R::error(in.key("thinking") + ": expected a map {budget_tokens: N} (or null), got " +
                      thinking.dump());
    for (const auto& [key, value] : thinking.items())
      if (key != "budget_tokens")
        return R::error(in.key("thinking") + "." + key +
                        ": not a thinking key (keys: budget_tokens)");
    MapReader sub(thinking, in.key("thinking"));
    if (sub.has("budget_tokens"))  // null = off
      sub.integer("budget_tokens", server.thinking_budget_tokens, kMinThinkingBudget);
    if (!sub.first_error().empty()) return R::error(sub.first_error());
  }

  server.model_name = trim(server.model_name);
  server.base_url = trim(server.base_url);
  while (ends_with(server.base_url, "/")) server.base_url.pop_back();
  if (server.type != ServerType::kReplay && server.model_name.empty())
    return R::error(in.key("model_name") + ": required for a " + type +
                    " server (e.g. gpt-4o, claude-sonnet-4-20250514)");
  if (!server.base_url.empty() && !starts_with(server.base_url, "http://") &&
      !starts_with(server.base_url, "https://"))
    return R::error(in.key("base_url") + ": '" + server.base_url +
                    "' is not an http:// or https:// URL (e.g. http://localhost:8000/v1)");
  if (server.type == ServerType::kReplay && trim(server.replay_path).empty())
    return R::error(in.key("replay_path") +
                    ": required for a replay server: a folder of recorded answers (*.md, *.txt) "
                    "or job:<job_name>");
  if (!server.reasoning_effort.empty() && server.type == ServerType::kAnthropic)
    return R::error(in.key("reasoning_effort") +
                    ": an openai key; for an anthropic server set thinking: {budget_tokens: N} "
                    "(extended thinking) instead, or reasoning_effort: null");
  if (server.thinking_budget_tokens > 0 && server.type == ServerType::kOpenai)
    return R::error(in.key("thinking") +
                    ": Anthropic's extended thinking, for anthropic servers; an OpenAI reasoning "
                    "model takes reasoning_effort (none, minimal, low, medium, high, xhigh) "
                    "instead, or set thinking: null");
  if (server.thinking_budget_tokens > 0 && server.type == ServerType::kAnthropic &&
      server.thinking_budget_tokens >= server.max_tokens)
    return R::error(strprintf(
        "%s: %d must be less than max_tokens (%d): the thinking budget is part of the answer's "
        "token cap; raise %s above it (e.g. to %d)",
        in.key("thinking.budget_tokens").c_str(), server.thinking_budget_tokens, server.max_tokens,
        in.key("max_tokens").c_str(), server.thinking_budget_tokens + 8192));
  if (!server.api_key_env.empty() && !is_env_name(server.api_key_env))
    // The value is not echoed: a key pasted here by mistake must not reach a log.
    return R::error(in.key("api_key_env") +
                    ": not an environment variable name (letters, digits, _); it names the "
                    "variable that holds the key, never the key itself");
  return server;
}

}  // namespace kf
