// The libcurl HTTP transport: one easy handle per POST, headers and body captured in memory.
#include "infer/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "infer/infer.h"
#include "util/strings.h"

namespace kf {

std::string HttpResponse::header(const std::string& name) const {
  auto it = headers.find(to_lower(name));
  return it == headers.end() ? std::string() : it->second;
}

namespace {

int on_progress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return llm_calls_cancelled() ? 1 : 0;  // non-zero aborts the transfer
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string_view line(data, size * count);
  // A new status line (after "100 Continue" or a redirect) starts a new set of headers.
  if (starts_with(line, "HTTP/")) {
    headers->clear();
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    (*headers)[to_lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return size * count;
}

bool is_loopback_url(const std::string& url) {
  for (const char* host : {"://127.0.0.1", "://localhost", "://[::1]"}) {
    size_t at = url.find(host);
    if (at != std::string::npos && at < 8) return true;
  }
  return false;
}

// The user's no_proxy list plus loopback: a local test or model server is never reached
// through a corporate proxy.
std::string no_proxy_list() {
  std::string list = "localhost,127.0.0.1,::1";
  for (const char* name : {"no_proxy", "NO_PROXY"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return std::string(value) + "," + list;
  }
  return list;
}

class CurlTransport : public HttpTransport {
 public:
  CurlTransport() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  HttpResponse post(const HttpRequest& request) override {
    HttpResponse response;
    CURL* curl = curl_easy_init();
    if (curl == nullptr) {
      response.error = "cannot initialise libcurl";
      return response;
    }
    curl_slist* headers = nullptr;
    for (const auto& [name, value] : request.headers)
      headers = curl_slist_append(headers, (name + ": " + value).c_str());
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    char error_buffer[CURL_ERROR_SIZE] = {0};
    long timeout_ms = std::max(1L, static_cast<long>(request.timeout_s * 1000));
    std::string no_proxy = no_proxy_list();

    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    // Polled about once a second by libcurl: a cancelled job stops waiting for its answers.
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 15000L));
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);
    if (is_loopback_url(request.url)) curl_easy_setopt(curl, CURLOPT_NOPROXY, no_proxy.c_str());

    CURLcode code = curl_easy_perform(curl);
    if (code == CURLE_OK) {
      long status = 0;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
      response.status = static_cast<int>(status);
    } else {
      response.timed_out = code == CURLE_OPERATION_TIMEDOUT;
      response.error = curl_easy_strerror(code);
      if (error_buffer[0] != '\0') response.error += std::string(": ") + trim(error_buffer);
      response.status = 0;
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return response;
  }
};

}  // namespace

namespace {
std::atomic<bool> g_cancelled{false};
static_assert(std::atomic<bool>::is_always_lock_free, "cancel_llm_calls runs in a signal handler");
}  // namespace

void cancel_llm_calls() {
  g_cancelled = true;
}
void reset_llm_cancel() {
  g_cancelled = false;
}
bool llm_calls_cancelled() {
  return g_cancelled;
}

std::shared_ptr<HttpTransport> make_curl_transport() {
  return std::make_shared<CurlTransport>();
}

}  // namespace kf
