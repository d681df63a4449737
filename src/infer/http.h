// HTTP POST behind an interface: the libcurl transport the clients use, and a scripted fake, so
// retry and parsing logic is tested without a network.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kf {

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // name, value
  std::string body;
  double timeout_s = 600;  // whole exchange
};

struct HttpResponse {
  int status = 0;                              // 0 = no response (see error / timed_out)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string error;  // transport error, e.g. "Couldn't connect to server: ..."
  bool timed_out = false;

  // The value of a header (name in any case), or "".
  std::string header(const std::string& name) const;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Never throws; a failure to connect or a timeout is reported in the response. Thread-safe.
  virtual HttpResponse post(const HttpRequest& request) = 0;
};

// libcurl: one easy handle per call (so concurrent calls share nothing), no signals, the
// request's timeout for the whole exchange. Honours the proxy environment variables, except for
// loopback hosts.
std::shared_ptr<HttpTransport> make_curl_transport();

// Scripted transport for tests: answers from a queue, then from a handler (then HTTP 500);
// records the requests it got. Thread-safe.
class FakeHttpTransport : public HttpTransport {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  void push(HttpResponse response);
  void set_handler(Handler handler);
  HttpResponse post(const HttpRequest& request) override;

  std::vector<HttpRequest> requests() const;
  size_t calls() const;

  // Ready-made responses.
  static HttpResponse json(int status, std::string body,
                           std::map<std::string, std::string> headers = {});
  static HttpResponse timeout();
  static HttpResponse unreachable(std::string error = "Couldn't connect to server");

 private:
  mutable std::mutex mutex_;
  std::deque<HttpResponse> queue_;
  Handler handler_;
  std::vector<HttpRequest> requests_;
};

}  // namespace kf
