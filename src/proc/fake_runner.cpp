// FakeProcessRunner: scripted results for testing the logic above proc without processes.
#include <csignal>

#include "proc/process.h"

namespace kf {

void FakeProcessRunner::push(ProcessResult result) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(result));
}

void FakeProcessRunner::set_handler(Handler handler) {
  std::lock_guard<std::mutex> lock(mutex_);
  handler_ = std::move(handler);
}

ProcessResult FakeProcessRunner::run(const ProcessSpec& spec) {
  Handler handler;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    specs_.push_back(spec);
    if (!queue_.empty()) {
      ProcessResult result = std::move(queue_.front());
      queue_.pop_front();
      return result;
    }
    handler = handler_;
  }
  if (handler) return handler(spec);
  return not_started("FakeProcessRunner: no scripted result for '" +
                     (spec.argv.empty() ? std::string() : spec.argv[0]) + "'");
}

std::vector<ProcessSpec> FakeProcessRunner::specs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return specs_;
}

size_t FakeProcessRunner::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return specs_.size();
}

ProcessResult FakeProcessRunner::exited(int code, std::string output) {
  ProcessResult r;
  r.started = true;
  r.exit_code = code;
  r.output_bytes = output.size();
  r.output = std::move(output);
  return r;
}

ProcessResult FakeProcessRunner::killed(int signal, std::string output) {
  ProcessResult r = exited(-1, std::move(output));
  r.term_signal = signal;
  return r;
}

ProcessResult FakeProcessRunner::timeout(double limit_s, std::string output) {
  ProcessResult r = killed(SIGTERM, std::move(output));
  r.timed_out = true;
  r.limit_s = limit_s;
  r.wall_s = limit_s;
  return r;
}

ProcessResult FakeProcessRunner::not_started(std::string error) {
  ProcessResult r;
  r.start_error = std::move(error);
  return r;
}

}  // namespace kf
