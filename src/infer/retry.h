// Retries of one LLM HTTP call (internal to infer): which failures are worth another attempt,
// how long to wait (exponential backoff with jitter, Retry-After honoured), and the final error.
#pragma once

#include <ctime>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "infer/http.h"
#include "infer/infer.h"
#include "util/status.h"

namespace kf {

struct RetryPolicy {
  double backoff_base_s = 1.0, backoff_max_s = 30.0;
  double retry_after_cap_s = 120.0;
  std::function<void(double)> sleep;  // null = std::this_thread::sleep_for
};

// Posts `request` until a 2xx answer whose JSON body `accept` takes. Retries (up to
// server.max_retry) on 429, 5xx, timeouts, connection errors, and bodies that are not JSON or
// that `accept` refuses; any other 4xx fails at once with the server's message. `attempts`
// receives the number of HTTP attempts, also on failure. Errors name the server; `secret` (the
// API key) is cut from every message.
Status post_with_retry(HttpTransport& http, const HttpRequest& request, const ServerConfig& server,
                       const RetryPolicy& policy, const std::string& secret,
                       const std::function<Status(const nlohmann::json&)>& accept, int& attempts);

// A 4xx answer the client can fix by changing its request (a parameter the model rejects: the
// other name of the token cap, a temperature a reasoning model refuses). Returns true when it
// has changed `request`, which is then sent again at once; such a resend is not a retry (it
// does not count against max_retry), and at most kMaxAdjustments happen per call.
using AdjustRequest = std::function<bool(const HttpResponse& response, HttpRequest& request)>;
constexpr int kMaxAdjustments = 3;

// post_with_retry with `adjust` consulted on every non-retryable 4xx before it fails.
Status post_with_retry(HttpTransport& http, HttpRequest request, const ServerConfig& server,
                       const RetryPolicy& policy, const std::string& secret,
                       const std::function<Status(const nlohmann::json&)>& accept,
                       const AdjustRequest& adjust, int& attempts);

// Seconds to wait from a Retry-After value: delta seconds ("2", "1.5") or an HTTP date
// ("Wed, 21 Oct 2015 07:28:00 GMT", relative to `now`); none when unreadable.
std::optional<double> parse_retry_after(const std::string& value, std::time_t now);

// The wait before retry number `retry` (1-based): min(max, base * 2^(retry-1)), times a random
// factor in [0.5, 1).
double backoff_delay(int retry, double base_s, double max_s);

// The most useful short text of an error body: error.message of a JSON error, else the body cut
// to a few hundred bytes.
std::string error_excerpt(const std::string& body);

}  // namespace kf
