// Long-lived children spoken to line by line (ServiceProcess, process.h): the POSIX one, started
// like any child (spawn_child: own process group, limits, PR_SET_PDEATHSIG) with a stdin pipe.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "proc/process.h"
#include "proc/spawn.h"

namespace kf {
namespace {

using Clock = std::chrono::steady_clock;

class PosixService : public ServiceProcess {
 public:
  PosixService(SpawnedChild child, size_t output_cap)
      : child_(std::move(child)), output_cap_(output_cap) {}
  ~PosixService() override { stop(2000); }

  Result<std::string> request(const std::string& request, const std::string& end_prefix,
                              double timeout_s, std::string* output) override {
    if (!running()) return Result<std::string>::error("the service is not running");
    Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(timeout_s));
    std::string line = request + "\n";
    size_t written = 0;
    while (written < line.size()) {
      ssize_t n = write_without_sigpipe(child_.stdin_pipe.get(), line.data() + written,
                                        line.size() - written);
      if (n > 0) {
        written += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{child_.stdin_pipe.get(), POLLOUT, 0};
        if (!wait_for(&p, deadline)) return fail("took no request for " + seconds(timeout_s));
        continue;
      }
      return fail("stopped reading requests (" + std::string(std::strerror(errno)) + ")");
    }
    size_t taken = 0;
    while (true) {
      // Complete lines first: the answer may already be here.
      size_t newline;
      while ((newline = pending_.find('\n')) != std::string::npos) {
        std::string text = pending_.substr(0, newline);
        pending_.erase(0, newline + 1);
        if (text.compare(0, end_prefix.size(), end_prefix) == 0)
          return text.substr(end_prefix.size());
        taken += text.size() + 1;
        if (taken > output_cap_) return fail("answered with more than the output cap");
        if (output != nullptr) output->append(text).push_back('\n');
      }
      pollfd p{child_.output.get(), POLLIN, 0};
      if (!wait_for(&p, deadline)) return fail("gave no answer within " + seconds(timeout_s));
      char buffer[1 << 16];
      ssize_t n = ::read(child_.output.get(), buffer, sizeof buffer);
      if (n > 0) {
        pending_.append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (output != nullptr && !pending_.empty()) output->append(pending_);
      pending_.clear();
      return fail("exited", 500);  // end of its output: it is gone (or going)
    }
  }

  bool running() const override { return child_.pid > 0; }

 private:
  static std::string seconds(double s) {
    char text[32];
    std::snprintf(text, sizeof text, "%.0f s", s);
    return text;
  }

  // Waits until `p` is ready; false at the deadline.
  static bool wait_for(pollfd* p, Clock::time_point deadline) {
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      int r = ::poll(p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
  }

  // `wait_ms`: how long it may take to finish on its own before it is killed.
  Result<std::string> fail(const std::string& what, int wait_ms = 0) {
    std::string status = stop(wait_ms);
    return Result<std::string>::error("the service " + what +
                                      (status.empty() ? "" : ": " + status));
  }

  // Ends the child: stdin closed so it may finish within `wait_ms`, then its whole group killed.
  // Returns how it ended ("exit code 3", "killed by SIGSEGV ..."), "" when it had to be killed.
  std::string stop(int wait_ms) {
    if (child_.pid <= 0) return "";
    child_.stdin_pipe.reset();
    int status = 0;
    pid_t done = 0;
    auto until = Clock::now() + std::chrono::milliseconds(wait_ms);
    while ((done = ::waitpid(child_.pid, &status, WNOHANG)) == 0 && Clock::now() < until)
      ::usleep(5000);
    std::string how;
    if (done == child_.pid) {
      if (WIFEXITED(status)) how = "exit code " + std::to_string(WEXITSTATUS(status));
      if (WIFSIGNALED(status)) how = "killed by " + describe_signal(WTERMSIG(status));
    }
    ::kill(-child_.pid, SIGKILL);  // the group: anything it started goes too
    if (done != child_.pid) {
      while (::waitpid(child_.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    child_.pid = -1;
    child_.output.reset();
    return how;
  }

  SpawnedChild child_;
  size_t output_cap_;
  std::string pending_;
};

}  // namespace

Result<std::unique_ptr<ServiceProcess>> ProcessRunner::start_service(const ProcessSpec& spec) {
  return Result<std::unique_ptr<ServiceProcess>>::error(
      "this runner starts no long-lived child (" + (spec.argv.empty() ? "" : spec.argv[0]) + ")");
}

Result<std::unique_ptr<ServiceProcess>> PosixProcessRunner::start_service(const ProcessSpec& spec) {
  if (!spec.refuse_start.empty())
    return Result<std::unique_ptr<ServiceProcess>>::error(spec.refuse_start);
  if (processes_cancelled()) return Result<std::unique_ptr<ServiceProcess>>::error("cancelled");
  ProcessSpec s = spec;
  s.stdin_stream = true;
  s.stdin_data.clear();
  auto child = spawn_child(s);
  if (!child) return Result<std::unique_ptr<ServiceProcess>>::error(child.message());
  std::unique_ptr<ServiceProcess> service =
      std::make_unique<PosixService>(std::move(*child), spec.output_cap);
  return service;
}

}  // namespace kf
