// PosixProcessRunner: supervises one child in a poll loop (output, stdin, exit, timeouts) and
// kills its whole process group when a limit fires or the leader is gone; a watchdog sums the
// memory and counts the tasks of the child's process tree. Time the child spends paused by its
// PauseGroup is kept out of its timeouts.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "proc/output_capture.h"
#include "proc/pause_group.h"
#include "proc/proc_table.h"
#include "proc/process.h"
#include "proc/spawn.h"
#include "util/strings.h"

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

// How often the watchdog looks at the process tree's memory and task count.
constexpr auto kWatchInterval = std::chrono::milliseconds(50);

// The process tree under `root` (root included) as the kernel shows it now: every process whose
// parent chain leads to root. Orphans in a sandbox's PID namespace are re-parented to its init,
// which is in the tree, so setsid()'d grandchildren are counted too.
struct TreeUsage {
  uint64_t rss_bytes = 0;
  int tasks = 0;  // processes + threads
  std::vector<pid_t> pids;
};

TreeUsage scan_tree(pid_t root) {
  std::unordered_map<pid_t, ProcStat> entries = read_proc_table();
  std::unordered_map<pid_t, std::vector<pid_t>> children;
  for (const auto& [pid, e] : entries) children[e.ppid].push_back(pid);
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  TreeUsage usage;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    pid_t pid = todo.back();
    todo.pop_back();
    auto it = entries.find(pid);
    if (it == entries.end()) continue;
    usage.pids.push_back(pid);
    usage.tasks += std::max(it->second.threads, 1);
    usage.rss_bytes += it->second.rss_pages * page;
    auto kids = children.find(pid);
    if (kids != children.end()) todo.insert(todo.end(), kids->second.begin(), kids->second.end());
  }
  return usage;
}

// Whether a program's output says it could not create a process or thread (EAGAIN), in the
// words of the shells, glibc's perror and Python.
bool fork_failed(const std::string& output) {
  for (const char* words : {"Cannot fork", "fork: Resource temporarily unavailable",
                            "can't start new thread", "fork failed: Resource temporarily"})
    if (output.find(words) != std::string::npos) return true;
  return false;
}

// " (eval_config.memory_limit_gib)", or "" when the spec names no key.
std::string key_note(const std::string& key) {
  return key.empty() ? "" : " (" + key + ")";
}

// One child from start to reaped.
//
// Two clocks: real time (Clock::now()) for the watchdog's interval and the kill grace, and the
// child's active time (real time less the time its PauseGroup held it stopped) for the wall-clock
// and inactivity limits and the output drain, so that a build paused during a timing window is
// not killed as timed out or inactive, nor cut off while a stopped grandchild holds its output.
class Supervisor {
 public:
  // `paused_base`: the pause group's paused_total() when the child was registered with it.
  Supervisor(const ProcessSpec& spec, SpawnedChild child, double kill_grace_s,
             double drain_timeout_s, Clock::duration paused_base)
      : spec_(spec),
        child_(std::move(child)),
        capture_(spec.output_cap),
        kill_grace_(seconds(kill_grace_s)),
        drain_timeout_(seconds(drain_timeout_s)),
        paused_base_(paused_base) {
    // A pidfd wakes poll() the moment the leader exits; without one (old kernels) we tick.
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child_.pid, 0));
    pidfd_.reset(pidfd);
    start_ = last_output_ = active(Clock::now());
  }

  void run(ProcessResult& result);

 private:
  bool leader_has_exited() const;
  // `real` on the child's active clock: less the time paused since it was registered.
  TimePoint active(TimePoint real) const {
    if (spec_.pause_group == nullptr) return real;
    return real - (spec_.pause_group->paused_total(real) - paused_base_);
  }
  void signal_group(int sig) const { ::kill(-child_.pid, sig); }
  bool watching() const { return spec_.tree_memory_limit_bytes > 0 || spec_.max_tasks > 0; }
  // Looks at the tree; kills it and returns true when a limit is exceeded.
  bool watch(ProcessResult& result);
  // Stops the child: its group (and, when known, its whole tree) gets `sig`; a wrapper's sandbox
  // is killed from the inside out.
  void stop(int sig, const TreeUsage* known = nullptr) const;
  void name_limit(ProcessResult& result) const;
  // `now` is real time, `active_now` the same moment on the active clock.
  void check_limits(TimePoint now, TimePoint active_now, ProcessResult& result);
  TimePoint next_wakeup(TimePoint now, TimePoint active_now) const;
  void read_output();
  void write_stdin();
  int reap();

  const ProcessSpec& spec_;
  SpawnedChild child_;
  OutputCapture capture_;
  Clock::duration kill_grace_;
  Clock::duration drain_timeout_;
  UniqueFd pidfd_;
  Clock::duration paused_base_;

  TimePoint start_;        // active clock
  TimePoint last_output_;  // active clock
  std::optional<TimePoint> term_sent_at_;
  bool kill_sent_ = false;
  std::optional<TimePoint> drain_deadline_;  // active clock; set once the leader has exited
  size_t stdin_written_ = 0;
  TimePoint next_watch_ = Clock::now();
  int peak_tasks_ = 0;
};

bool Supervisor::watch(ProcessResult& result) {
  TreeUsage usage = scan_tree(child_.pid);
  peak_tasks_ = std::max(peak_tasks_, usage.tasks);
  if (spec_.tree_memory_limit_bytes > 0 && usage.rss_bytes > spec_.tree_memory_limit_bytes) {
    result.limit_exceeded = "exceeded the " + describe_size(spec_.tree_memory_limit_bytes) +
                            " memory limit" + key_note(spec_.limit_keys.memory);
  } else if ((spec_.max_tasks > 0 && usage.tasks > spec_.max_tasks) ||
             (spec_.nproc_limit > 0 && usage.tasks >= spec_.nproc_limit)) {
    // Under RLIMIT_NPROC the count cannot pass the limit: there, reaching it means fork() and
    // pthread_create() fail from now on, and a program waiting on its threads would hang.
    result.limit_exceeded = "exceeded the limit of " + std::to_string(spec_.max_tasks) +
                            " processes/threads" + key_note(spec_.limit_keys.tasks);
  } else {
    return false;
  }
  // No grace period: the limit is the point.
  stop(SIGKILL, &usage);
  return true;
}

void Supervisor::stop(int sig, const TreeUsage* known) const {
  if (!spec_.signal_exit_codes) {
    signal_group(sig);
    if (known != nullptr)  // what left the group by setsid()
      for (pid_t pid : known->pids)
        if (pid != child_.pid) ::kill(pid, sig);
    return;
  }
  // A wrapper (bwrap) leads: kill what runs in its sandbox and let the wrapper reap it and exit.
  // Killed first, it would leave its PID namespace's init to the system's init as a zombie, which
  // counts against the sandbox user's process limit until reaped. The group kill after the
  // grace period (or at the end) still gets the wrapper.
  TreeUsage usage = known != nullptr ? *known : scan_tree(child_.pid);
  for (pid_t pid : usage.pids)
    if (pid != child_.pid) ::kill(pid, SIGKILL);
}

// After the exit: a limit the kernel enforced (CPU time, file size, process count) named.
void Supervisor::name_limit(ProcessResult& result) const {
  if (!result.limit_exceeded.empty() || result.success()) return;
  if (result.term_signal == SIGXCPU && spec_.cpu_limit_s > 0) {
    result.limit_exceeded = strprintf("exceeded the %g s CPU-time limit", spec_.cpu_limit_s) +
                            key_note(spec_.limit_keys.cpu_time);
  } else if (spec_.file_size_limit_bytes > 0 &&
             (result.term_signal == SIGXFSZ ||
              result.output.find("File too large") != std::string::npos)) {
    result.limit_exceeded = "exceeded the " + describe_size(spec_.file_size_limit_bytes) +
                            " file-size limit" + key_note(spec_.limit_keys.file_size);
  } else if (spec_.max_tasks > 0 && (peak_tasks_ >= spec_.max_tasks - spec_.max_tasks / 8 ||
                                     (spec_.nproc_limit > 0 && fork_failed(result.output)))) {
    // fork()/pthread_create() failed with EAGAIN at the limit (the backstop RLIMIT_NPROC, or the
    // tree was that large) before the watchdog looked.
    result.limit_exceeded = "exceeded the limit of " + std::to_string(spec_.max_tasks) +
                            " processes/threads" + key_note(spec_.limit_keys.tasks);
  }
}

bool Supervisor::leader_has_exited() const {
  // WNOWAIT leaves the zombie in place: it keeps the process-group id reserved, so the final
  // kill(-pgid) cannot hit an unrelated group that reused the number.
  siginfo_t info{};
  if (::waitid(P_PID, child_.pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return info.si_pid == child_.pid;
}

void Supervisor::check_limits(TimePoint now, TimePoint active_now, ProcessResult& result) {
  if (term_sent_at_) {
    if (!kill_sent_ && now >= *term_sent_at_ + kill_grace_) {
      signal_group(SIGKILL);
      kill_sent_ = true;
    }
    return;
  }
  if (watching() && now >= next_watch_) {
    next_watch_ = now + kWatchInterval;
    if (watch(result)) {
      term_sent_at_ = now;  // the group kill follows after the grace period if still needed
      return;
    }
  }
  if (g_cancel.load()) {
    result.cancelled = true;
  } else if (spec_.timeout_s > 0 && active_now >= start_ + seconds(spec_.timeout_s)) {
    result.timed_out = true;
    result.limit_s = spec_.timeout_s;
  } else if (spec_.inactivity_timeout_s > 0 &&
             active_now >= last_output_ + seconds(spec_.inactivity_timeout_s)) {
    result.inactive = true;
    result.limit_s = spec_.inactivity_timeout_s;
  } else {
    return;
  }
  stop(SIGTERM);
  term_sent_at_ = now;
}

TimePoint Supervisor::next_wakeup(TimePoint now, TimePoint active_now) const {
  // An active-clock deadline in real time, were the child not paused from now on (a pause only
  // makes the wakeup early, and the loop looks again).
  auto real = [&](TimePoint active_deadline) { return now + (active_deadline - active_now); };
  TimePoint wake = TimePoint::max();
  if (!term_sent_at_) {
    if (spec_.timeout_s > 0) wake = std::min(wake, real(start_ + seconds(spec_.timeout_s)));
    if (spec_.inactivity_timeout_s > 0)
      wake = std::min(wake, real(last_output_ + seconds(spec_.inactivity_timeout_s)));
  } else if (!kill_sent_) {
    wake = std::min(wake, *term_sent_at_ + kill_grace_);
  }
  if (drain_deadline_) wake = std::min(wake, real(*drain_deadline_));
  if (!term_sent_at_) wake = std::min(wake, now + kCancelPoll);
  if (!term_sent_at_ && watching()) wake = std::min(wake, next_watch_);
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
      last_output_ = active(Clock::now());
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
      drain_deadline_ = active(Clock::now()) + drain_timeout_;
      child_.stdin_pipe.reset();
      pidfd_.reset();
    }
    if (drain_deadline_ && !child_.output.valid()) break;  // normal end: exited and EOF
    TimePoint now = Clock::now();
    TimePoint active_now = active(now);
    // Exited, but something (a daemonised grandchild) still holds the pipe: stop waiting.
    if (drain_deadline_ && active_now >= *drain_deadline_) break;
    check_limits(now, active_now, result);

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

    TimePoint wake = next_wakeup(now, active_now);
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
  // Out of the pause group first, while the leader's zombie still reserves the group's id.
  if (spec_.pause_group != nullptr) {
    TimePoint now = Clock::now();
    result.paused_s =
        std::chrono::duration<double>(spec_.pause_group->paused_total(now) - paused_base_).count();
    spec_.pause_group->remove(child_.pid);
  }
  // Sweep whatever is left of the group (the leader is a zombie or about to be one). SIGKILL
  // ends stopped processes too.
  signal_group(SIGKILL);
  int status = reap();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  if (spec_.signal_exit_codes && result.exit_code > 128 && result.exit_code < 128 + 65) {
    result.term_signal = result.exit_code - 128;
    result.exit_code = -1;
  }
  result.output_bytes = capture_.total_bytes();
  result.output = capture_.take();
  if (!spec_.limit_keys.output.empty() && result.output_bytes > spec_.output_cap) {
    // Name the limit in the cut note, so a reader knows which key keeps more.
    const std::string note = " bytes of output cut ...]";
    size_t at = result.output.find(note);
    if (at != std::string::npos)
      result.output.replace(at, note.size(),
                            " bytes of output cut: over the " + describe_size(spec_.output_cap) +
                                " output limit (" + spec_.limit_keys.output + ") ...]");
  }
  result.peak_tasks = peak_tasks_;
  name_limit(result);
}

}  // namespace

ProcessResult PosixProcessRunner::run(const ProcessSpec& spec) {
  ProcessResult result;
  TimePoint start = Clock::now();
  PauseGroup* pause = spec.pause_group;
  Clock::duration wait_base{};
  if (pause != nullptr) {
    // Not started inside a timing window: it would only be stopped at once.
    wait_base = pause->paused_total(start);
    pause->wait_while_paused([] { return g_cancel.load(); });
  }
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
    // Registered at once: when a pause began since the wait, the child stops now.
    Clock::duration base = pause != nullptr ? pause->add(child->pid) : Clock::duration::zero();
    Supervisor(spec, std::move(child.value()), kill_grace_s_, drain_timeout_s_, base).run(result);
    result.paused_s += std::chrono::duration<double>(base - wait_base).count();
  }
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace kf
