// PosixProcessRunner: supervises one child in a poll loop (output, stdin, exit, timeouts) and
// kills its whole process group when a limit fires or the leader is gone.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>

#include "proc/output_capture.h"
#include "proc/process.h"
#include "proc/spawn.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace kf {

namespace {

std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
// How often a supervisor looks at the cancel flag when nothing else wakes it.
constexpr auto kCancelPoll = std::chrono::milliseconds(100);

}  // namespace

void cancel_processes() {
  g_cancel.store(true);
}
void reset_process_cancel() {
  g_cancel.store(false);
}
bool processes_cancelled() {
  return g_cancel.load();
}

namespace {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Writes to the child's stdin without letting a closed pipe raise SIGPIPE in the whole
// orchestrator: SIGPIPE is blocked in this thread for the write, and one it caused is consumed.
ssize_t write_without_sigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_set, old_mask, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE);
  ssize_t n = ::write(fd, data, size);
  int saved_errno = errno;
  if (n < 0 && errno == EPIPE && !was_pending) {
    timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = saved_errno;
  return n;
}

// One child from start to reaped.
class Supervisor {
 public:
  Supervisor(const ProcessSpec& spec, SpawnedChild child, double kill_grace_s,
             double drain_timeout_s)
      : spec_(spec),
        child_(std::move(child)),
        capture_(spec.output_cap),
        kill_grace_(seconds(kill_grace_s)),
        drain_timeout_(seconds(drain_timeout_s)) {
    // A pidfd wakes poll() the moment the leader exits; without one (old kernels) we tick.
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child_.pid, 0));
    pidfd_.reset(pidfd);
  }

  void run(ProcessResult& result);

 private:
  bool leader_has_exited() const;
  void signal_group(int sig) const { ::kill(-child_.pid, sig); }
  void check_limits(TimePoint now, ProcessResult& result);
  TimePoint next_wakeup(TimePoint now) const;
  void read_output();
  void write_stdin();
  int reap();

  const ProcessSpec& spec_;
  SpawnedChild child_;
  OutputCapture capture_;
  Clock::duration kill_grace_;
  Clock::duration drain_timeout_;
  UniqueFd pidfd_;

  TimePoint start_ = Clock::now();
  TimePoint last_output_ = start_;
  std::optional<TimePoint> term_sent_at_;
  bool kill_sent_ = false;
  std::optional<TimePoint> drain_deadline_;  // set once the leader has exited
  size_t stdin_written_ = 0;
};

bool Supervisor::leader_has_exited() const {
  // WNOWAIT leaves the zombie in place: it keeps the process-group id reserved, so the final
  // kill(-pgid) cannot hit an unrelated group that reused the number.
  siginfo_t info{};
  if (::waitid(P_PID, child_.pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return info.si_pid == child_.pid;
}

void Supervisor::check_limits(TimePoint now, ProcessResult& result) {
  if (term_sent_at_) {
    if (!kill_sent_ && now >= *term_sent_at_ + kill_grace_) {
      signal_group(SIGKILL);
      kill_sent_ = true;
    }
    return;
  }
  if (g_cancel.load()) {
    result.cancelled = true;
  } else if (spec_.timeout_s > 0 && now >= start_ + seconds(spec_.timeout_s)) {
    result.timed_out = true;
    result.limit_s = spec_.timeout_s;
  } else if (spec_.inactivity_timeout_s > 0 &&
             now >= last_output_ + seconds(spec_.inactivity_timeout_s)) {
    result.inactive = true;
    result.limit_s = spec_.inactivity_timeout_s;
  } else {
    return;
  }
  signal_group(SIGTERM);
  term_sent_at_ = now;
}

TimePoint Supervisor::next_wakeup(TimePoint now) const {
  TimePoint wake = TimePoint::max();
  if (!term_sent_at_) {
    if (spec_.timeout_s > 0) wake = std::min(wake, start_ + seconds(spec_.timeout_s));
    if (spec_.inactivity_timeout_s > 0)
      wake = std::min(wake, last_output_ + seconds(spec_.inactivity_timeout_s));
  } else if (!kill_sent_) {
    wake = std::min(wake, *term_sent_at_ + kill_grace_);
  }
  if (drain_deadline_) wake = std::min(wake, *drain_deadline_);
  if (!term_sent_at_) wake = std::min(wake, now + kCancelPoll);
  if (!pidfd_.valid() && !drain_deadline_)
    wake = std::min(wake, now + std::chrono::milliseconds(20));
  return wake;
}

void Supervisor::read_output() {
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(child_.output.get(), buffer, sizeof buffer);
    if (n > 0) {
      capture_.append(buffer, static_cast<size_t>(n));
      last_output_ = Clock::now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    child_.output.reset();  // EOF (or a read error): every writer is gone
    return;
  }
}

void Supervisor::write_stdin() {
  const std::string& data = spec_.stdin_data;
  while (stdin_written_ < data.size()) {
    ssize_t n = write_without_sigpipe(child_.stdin_pipe.get(), data.data() + stdin_written_,
                                      data.size() - stdin_written_);
    if (n > 0) {
      stdin_written_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    break;  // EPIPE: the child stopped reading, which is its business
  }
  child_.stdin_pipe.reset();  // all written (or refused): the child sees EOF
}

int Supervisor::reap() {
  int status = 0;
  while (::waitpid(child_.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

void Supervisor::run(ProcessResult& result) {
  while (true) {
    if (!drain_deadline_ && leader_has_exited()) {
      drain_deadline_ = Clock::now() + drain_timeout_;
      child_.stdin_pipe.reset();
      pidfd_.reset();
    }
    if (drain_deadline_ && !child_.output.valid()) break;  // normal end: exited and EOF
    TimePoint now = Clock::now();
    // Exited, but something (a daemonised grandchild) still holds the pipe: stop waiting.
    if (drain_deadline_ && now >= *drain_deadline_) break;
    check_limits(now, result);

    pollfd fds[3];
    int count = 0;
    int output_slot = -1, stdin_slot = -1;
    if (child_.output.valid()) {
      output_slot = count;
      fds[count++] = pollfd{child_.output.get(), POLLIN, 0};
    }
    if (child_.stdin_pipe.valid()) {
      stdin_slot = count;
      fds[count++] = pollfd{child_.stdin_pipe.get(), POLLOUT, 0};
    }
    if (pidfd_.valid()) fds[count++] = pollfd{pidfd_.get(), POLLIN, 0};

    TimePoint wake = next_wakeup(now);
    int timeout_ms = -1;
    if (wake != TimePoint::max()) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
      timeout_ms = static_cast<int>(std::clamp<long long>(ms, 0, 3600 * 1000));
    }
    int ready = ::poll(fds, static_cast<nfds_t>(count), timeout_ms);
    if (ready < 0 && errno != EINTR) break;  // cannot happen with valid fds; never spin
    if (ready <= 0) continue;
    if (output_slot >= 0 && fds[output_slot].revents != 0) read_output();
    if (stdin_slot >= 0 && fds[stdin_slot].revents != 0) write_stdin();
  }
  // Sweep whatever is left of the group (the leader is a zombie or about to be one).
  signal_group(SIGKILL);
  int status = reap();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  result.output_bytes = capture_.total_bytes();
  result.output = capture_.take();
}

}  // namespace

ProcessResult PosixProcessRunner::run(const ProcessSpec& spec) {
  ProcessResult result;
  TimePoint start = Clock::now();
  if (g_cancel.load()) {
    result.cancelled = true;
    result.start_error = "not started: the job is stopping (Ctrl-C)";
    return result;
  }
  Result<SpawnedChild> child = spawn_child(spec);
  if (!child) {
    result.start_error = child.message();
  } else {
    result.started = true;
    Supervisor(spec, std::move(child.value()), kill_grace_s_, drain_timeout_s_).run(result);
  }
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace kf
