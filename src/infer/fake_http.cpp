// The scripted HTTP transport for unit tests.
#include "infer/http.h"

namespace kf {

void FakeHttpTransport::push(HttpResponse response) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(response));
}

void FakeHttpTransport::set_handler(Handler handler) {
  std::lock_guard<std::mutex> lock(mutex_);
  handler_ = std::move(handler);
}

HttpResponse FakeHttpTransport::post(const HttpRequest& request) {
  Handler handler;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    requests_.push_back(request);
    if (!queue_.empty()) {
      HttpResponse next = std::move(queue_.front());
      queue_.pop_front();
      return next;
    }
    handler = handler_;
  }
  if (handler) return handler(request);
  return json(500, R"({"error":{"message":"FakeHttpTransport: no scripted response left"}})");
}

std::vector<HttpRequest> FakeHttpTransport::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

size_t FakeHttpTransport::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_.size();
}

HttpResponse FakeHttpTransport::json(int status, std::string body,
                                     std::map<std::string, std::string> headers) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  response.headers = std::move(headers);
  response.headers.emplace("content-type", "application/json");
  return response;
}

HttpResponse FakeHttpTransport::timeout() {
  HttpResponse response;
  response.timed_out = true;
  response.error = "Timeout was reached";
  return response;
}

HttpResponse FakeHttpTransport::unreachable(std::string error) {
  HttpResponse response;
  response.error = std::move(error);
  return response;
}

}  // namespace kf
