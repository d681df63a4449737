// Child processes: what to run (ProcessSpec), what happened (ProcessResult), and the runners
// (real POSIX one, scripted fake) behind one interface, so the logic above is testable without
// processes. Every build and test of LLM-written code runs through here, never in-process.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "util/status.h"

namespace kf {

class PauseGroup;  // proc/pause_group.h

struct ProcessSpec {
  std::vector<std::string> argv{};   // argv[0] looked up in PATH if it has no '/'
  std::filesystem::path work_dir{};  // the child's cwd (must exist); empty = the parent's cwd
  std::vector<std::pair<std::string, std::string>> env{};  // added/overridden variables
  bool inherit_env = true;          // false: the child sees only `env` (sandboxed() sets this)
  double timeout_s = 0;             // wall-clock limit, 0 = none
  double inactivity_timeout_s = 0;  // no output for this long => killed, 0 = none
  size_t output_cap = 1 << 20;  // bytes of combined stdout+stderr kept (head + tail, middle cut)
  uint64_t memory_limit_bytes = 0;     // RLIMIT_AS, 0 = none
  uint64_t file_size_limit_bytes = 0;  // RLIMIT_FSIZE, 0 = none
  double cpu_limit_s = 0;              // RLIMIT_CPU, 0 = none
  std::string stdin_data{};   // written to the child's stdin, then closed (empty => /dev/null)
  bool stdin_stream = false;  // start_service(): stdin stays a pipe the caller writes requests to

  // Limits on the child's whole process tree (every descendant; in a sandbox's PID namespace the
  // setsid()'d ones too), checked by a watchdog in the runner every 50 ms; 0 = none. The tree is
  // killed the moment one is exceeded. RLIMIT_AS stays off: CUDA reserves huge virtual ranges.
  uint64_t tree_memory_limit_bytes = 0;  // sum of the resident set sizes (RSS)
  int max_tasks = 0;                     // processes + threads
  int nproc_limit = 0;  // RLIMIT_NPROC (the kernel ignores it for uid 0: set with run_as_uid)
  int run_as_uid = -1;  // >= 0: the child drops to this uid/gid, with no groups, before exec
  int run_as_gid = -1;
  // The child is a wrapper (bwrap) that exits with 128 + N when its command was killed by signal
  // N: such an exit code is reported as that signal.
  bool signal_exit_codes = false;
  // The config keys the limits come from, named in ProcessResult::limit_exceeded ("" = none).
  struct LimitKeys {
    std::string memory, tasks, cpu_time, file_size, output;
  } limit_keys{};
  std::string refuse_start{};  // non-empty: not started; this is the start error
  // The job's timing gate (proc/pause_group.h), or nullptr: the child is not started while the
  // group is paused, is registered with it while it runs (stopped and continued with it), and
  // time spent paused does not count toward timeout_s, inactivity_timeout_s or the output drain.
  // start_service() ignores it.
  PauseGroup* pause_group = nullptr;
};

struct ProcessResult {
  bool started = false;
  std::string start_error;    // e.g. "cannot run 'nvcc': not found in PATH"
  int exit_code = -1;         // when it exited normally
  int term_signal = 0;        // when killed by a signal (ours or its own crash)
  bool timed_out = false;     // we killed it for the wall-clock limit
  bool inactive = false;      // we killed it for inactivity
  double limit_s = 0;         // the limit that fired when timed_out or inactive
  std::string output;         // combined stdout+stderr, capped
  uint64_t output_bytes = 0;  // total bytes it wrote (before the cap)
  double wall_s = 0;
  bool cancelled = false;  // stopped (or never started) because cancel_processes() was called
  // The resource limit it hit, as a sentence naming the limit and its config key: "exceeded the
  // 8 GiB memory limit (eval_config.memory_limit_gib)"; "" when none was hit.
  std::string limit_exceeded;
  int peak_tasks = 0;   // most processes + threads the watchdog saw at once (when it ran)
  double paused_s = 0;  // time it spent stopped by its spec's pause_group (included in wall_s)

  // Started, exited 0, not killed, no limit hit.
  bool success() const;
  // The limit hit first when there was one ("exceeded the ...; killed by SIGKILL (killed)"), else
  // "exit code 3", "killed by SIGSEGV (segmentation fault)", "timed out after 10.0 s",
  // "no output for 60 s (inactivity timeout)", or the start error.
  std::string describe() const;
};

// Ctrl-C for every child of this process: PosixProcessRunner kills the process groups it is
// supervising (as on a timeout) and starts no new ones until reset_process_cancel().
// Async-signal-safe (it only sets a flag), so a signal handler may call it.
void cancel_processes();
void reset_process_cancel();
bool processes_cancelled();

// "SIGSEGV (segmentation fault)"; "signal 42" for ones without a name here.
std::string describe_signal(int signal);
// "8 GiB", "1.5 GiB", "512 MiB", "100 bytes": a limit as the user wrote it.
std::string describe_size(uint64_t bytes);

// A long-lived child spoken to line by line (the job's judge): requests written to its stdin,
// answers read from its combined stdout and stderr up to a line the caller names. Not
// thread-safe (callers serialise). The child is killed when this is destroyed.
class ServiceProcess {
 public:
  virtual ~ServiceProcess() = default;
  // Sends `request` and a newline, then reads until a line starting with `end_prefix`, whose rest
  // is returned; the lines before it are appended to *output (up to the spec's output_cap). An
  // error, with the child killed, when it exits, says nothing for `timeout_s`, or overflows.
  virtual Result<std::string> request(const std::string& request, const std::string& end_prefix,
                                      double timeout_s, std::string* output) = 0;
  virtual bool running() const = 0;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  virtual ProcessResult run(const ProcessSpec& spec) = 0;
  // Starts `spec` as a ServiceProcess (its wall-clock and inactivity limits and the watchdog do
  // not apply; file-size, CPU and uid settings do). The base runner starts none: an error.
  virtual Result<std::unique_ptr<ServiceProcess>> start_service(const ProcessSpec& spec);
  // Runs several at once, at most `parallel` (>= 1) at a time; results in input order.
  virtual std::vector<ProcessResult> run_all(const std::vector<ProcessSpec>& specs, int parallel);
};

// The real runner: fork+exec, the child in its own process group, which is killed as a whole
// (SIGTERM, then SIGKILL after `kill_grace_s`) on a timeout and swept with SIGKILL when the
// leader exits. Thread-safe: several threads may call run() at once.
class PosixProcessRunner : public ProcessRunner {
 public:
  // `drain_timeout_s`: how long to keep reading after the leader exited while something else
  // (a daemonised grandchild) still holds the output pipe open.
  explicit PosixProcessRunner(double kill_grace_s = 0.5, double drain_timeout_s = 0.5)
      : kill_grace_s_(kill_grace_s), drain_timeout_s_(drain_timeout_s) {}
  ProcessResult run(const ProcessSpec& spec) override;
  Result<std::unique_ptr<ServiceProcess>> start_service(const ProcessSpec& spec) override;

 private:
  double kill_grace_s_;
  double drain_timeout_s_;
};

// Scripted runner for tests: answers from a queue of results, then from a callback; records the
// specs it got. Thread-safe (the callback runs outside the lock and may be called concurrently).
class FakeProcessRunner : public ProcessRunner {
 public:
  using Handler = std::function<ProcessResult(const ProcessSpec&)>;

  FakeProcessRunner() = default;
  explicit FakeProcessRunner(Handler handler) : handler_(std::move(handler)) {}

  void push(ProcessResult result);
  void set_handler(Handler handler);
  ProcessResult run(const ProcessSpec& spec) override;

  std::vector<ProcessSpec> specs() const;
  size_t calls() const;

  // Ready-made results for scripts.
  static ProcessResult exited(int code, std::string output = "");
  static ProcessResult killed(int signal, std::string output = "");
  static ProcessResult timeout(double limit_s, std::string output = "");
  static ProcessResult not_started(std::string error);

 private:
  mutable std::mutex mutex_;
  std::deque<ProcessResult> queue_;
  Handler handler_;
  std::vector<ProcessSpec> specs_;
};

}  // namespace kf
