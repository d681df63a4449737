// ProcessResult's summary text, signal names, and the default (thread-per-child) run_all.
#include <atomic>
#include <csignal>
#include <thread>

#include "proc/process.h"
#include "util/strings.h"

namespace kf {

namespace {

struct SignalName {
  int number;
  const char* name;
  const char* meaning;
};

// Our own table: strsignal() is not thread-safe on every libc and its wording varies.
constexpr SignalName kSignals[] = {
    {SIGHUP, "SIGHUP", "hangup"},
    {SIGINT, "SIGINT", "interrupt"},
    {SIGQUIT, "SIGQUIT", "quit"},
    {SIGILL, "SIGILL", "illegal instruction"},
    {SIGTRAP, "SIGTRAP", "trace/breakpoint trap"},
    {SIGABRT, "SIGABRT", "aborted"},
    {SIGBUS, "SIGBUS", "bus error"},
    {SIGFPE, "SIGFPE", "floating-point exception"},
    {SIGKILL, "SIGKILL", "killed"},
    {SIGUSR1, "SIGUSR1", "user signal 1"},
    {SIGSEGV, "SIGSEGV", "segmentation fault"},
    {SIGUSR2, "SIGUSR2", "user signal 2"},
    {SIGPIPE, "SIGPIPE", "broken pipe"},
    {SIGALRM, "SIGALRM", "alarm clock"},
    {SIGTERM, "SIGTERM", "terminated"},
    {SIGXCPU, "SIGXCPU", "CPU time limit exceeded"},
    {SIGXFSZ, "SIGXFSZ", "file size limit exceeded"},
    {SIGSYS, "SIGSYS", "bad system call"},
};

}  // namespace

std::string describe_signal(int signal) {
  for (const SignalName& s : kSignals)
    if (s.number == signal) return std::string(s.name) + " (" + s.meaning + ")";
  return "signal " + std::to_string(signal);
}

std::string describe_size(uint64_t bytes) {
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  auto fmt = [](double v, const char* unit) {
    std::string n = strprintf("%.1f", v);
    if (ends_with(n, ".0")) n.resize(n.size() - 2);
    return n + " " + unit;
  };
  if (bytes >= kGiB) return fmt(static_cast<double>(bytes) / kGiB, "GiB");
  if (bytes >= kMiB) return fmt(static_cast<double>(bytes) / kMiB, "MiB");
  if (bytes >= kKiB) return fmt(static_cast<double>(bytes) / kKiB, "KiB");
  return std::to_string(bytes) + " bytes";
}

bool ProcessResult::success() const {
  return started && exit_code == 0 && term_signal == 0 && !timed_out && !inactive &&
         limit_exceeded.empty();
}

std::string ProcessResult::describe() const {
  if (!started) return start_error.empty() ? "did not start" : start_error;
  if (!limit_exceeded.empty()) {
    // The limit leads: it is the cause; how the child ended is only its consequence.
    ProcessResult plain = *this;
    plain.limit_exceeded.clear();
    return limit_exceeded + "; " + plain.describe();
  }
  if (cancelled) return "stopped: the job is stopping (Ctrl-C)";
  if (timed_out) return strprintf("timed out after %.1f s", limit_s);
  if (inactive) return strprintf("no output for %g s (inactivity timeout)", limit_s);
  if (term_signal != 0) return "killed by " + describe_signal(term_signal);
  return "exit code " + std::to_string(exit_code);
}

std::vector<ProcessResult> ProcessRunner::run_all(const std::vector<ProcessSpec>& specs,
                                                  int parallel) {
  std::vector<ProcessResult> results(specs.size());
  size_t workers = std::min(specs.size(), static_cast<size_t>(std::max(parallel, 1)));
  if (workers <= 1) {
    for (size_t i = 0; i < specs.size(); ++i) results[i] = run(specs[i]);
    return results;
  }
  // One thread per running child: each pulls the next spec until none are left.
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < specs.size(); i = next++) results[i] = run(specs[i]);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace kf
