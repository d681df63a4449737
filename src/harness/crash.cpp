// Fatal-signal handler: writes the current context with async-signal-safe calls, then lets the
// signal kill the process as it would have (the evaluator still sees the signal).
#include "harness/crash.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace kernelfoundry {
namespace {

char g_context[1024] = "starting up";
char g_alt_stack[1 << 16];  // lets the handler run after a stack overflow

const char* signal_text(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV (segmentation fault)";
    case SIGBUS:
      return "SIGBUS (bus error)";
    case SIGFPE:
      return "SIGFPE (arithmetic exception)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGABRT:
      return "SIGABRT (abort)";
    default:
      return "fatal signal";
  }
}

void write_all(const char* s) {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= std::size_t(w);
  }
}

void on_fatal_signal(int sig) {
  write_all("\nkernelfoundry harness: ");
  write_all(signal_text(sig));
  write_all(" while ");
  write_all(g_context);
  write_all("\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void install_crash_handlers() {
  stack_t stack{};
  stack.ss_sp = g_alt_stack;
  stack.ss_size = sizeof g_alt_stack;
  sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &action, nullptr);
}

void set_crash_context(const std::string& what) {
  std::size_t n = std::min(what.size(), sizeof g_context - 1);
  std::memcpy(g_context, what.data(), n);
  g_context[n] = '\0';
}

}  // namespace kernelfoundry
