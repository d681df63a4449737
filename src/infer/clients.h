// The concrete clients behind make_client (internal to infer).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "infer/http.h"
#include "infer/infer.h"
#include "infer/retry.h"

namespace kf {

// What an HTTP client needs besides its ServerConfig.
struct HttpClientParts {
  std::string api_key;  // "" = send none (local servers)
  std::shared_ptr<HttpTransport> transport;
  RetryPolicy retry;
  std::function<void(const std::string&)> note;  // one-line notes (never null once made)
};

std::unique_ptr<LlmClient> make_openai_client(const ServerConfig& server, HttpClientParts parts);
std::unique_ptr<LlmClient> make_anthropic_client(const ServerConfig& server, HttpClientParts parts);
// Loads the recorded answers now (folder contents, or the job's kernels through `store`).
Result<std::unique_ptr<LlmClient>> make_replay_client(const ServerConfig& server, Store* store);

// Seconds since `start` on the steady clock.
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace kf
