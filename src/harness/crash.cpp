// Fatal-signal handler: writes the current context with async-signal-safe calls, then lets the
// signal kill the process as it would have (the evaluator still sees the signal). A SIGSEGV on a
// host buffer's guard page is named as an overrun of that buffer.
#include "harness/crash.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
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

// The guard pages of live host buffers. A slot is in use while `start` is non-zero; the handler
// reads it with acquire, so it never sees a half-written name.
struct GuardSlot {
  std::atomic<std::uintptr_t> start{0};
  std::uintptr_t end = 0;
  std::size_t buffer_bytes = 0;
  char name[96] = {};
};
constexpr std::size_t kGuardSlots = 1024;
GuardSlot g_guards[kGuardSlots];

// Decimal digits of `v` into `buf` (async-signal-safe); returns buf.
const char* decimal(std::uintptr_t v, char (&buf)[24]) {
  char* p = buf + sizeof buf - 1;
  *p = '\0';
  do {
    *--p = char('0' + v % 10);
    v /= 10;
  } while (v != 0 && p > buf);
  return p;
}

const GuardSlot* guard_at(std::uintptr_t addr) {
  for (const GuardSlot& slot : g_guards) {
    std::uintptr_t start = slot.start.load(std::memory_order_acquire);
    if (start != 0 && addr >= start && addr < slot.end) return &slot;
  }
  return nullptr;
}

void on_fatal_signal(int sig, siginfo_t* info, void*) {
  write_all("\nkernelfoundry harness: ");
  write_all(signal_text(sig));
  write_all(" while ");
  write_all(g_context);
  const GuardSlot* guard = nullptr;
  if (sig == SIGSEGV && info != nullptr)
    guard = guard_at(reinterpret_cast<std::uintptr_t>(info->si_addr));
  if (guard != nullptr) {
    char bytes[24], offset[24];
    write_all(": read or wrote past the end of buffer '");
    write_all(guard->name);
    write_all("' (");
    write_all(decimal(guard->buffer_bytes, bytes));
    write_all(" bytes): the access at byte offset +");
    write_all(decimal(reinterpret_cast<std::uintptr_t>(info->si_addr) -
                          guard->start.load(std::memory_order_relaxed),
                      offset));
    write_all(" beyond its end hit a guard page");
  }
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
  action.sa_sigaction = on_fatal_signal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND | SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &action, nullptr);
}

void set_crash_context(const std::string& what) {
  std::size_t n = std::min(what.size(), sizeof g_context - 1);
  std::memcpy(g_context, what.data(), n);
  g_context[n] = '\0';
}

void register_guard_page(const void* data_end, std::size_t guard_bytes, const std::string& name,
                         std::size_t buffer_bytes) {
  std::uintptr_t start = reinterpret_cast<std::uintptr_t>(data_end);
  for (GuardSlot& slot : g_guards) {
    if (slot.start.load(std::memory_order_relaxed) != 0) continue;
    slot.end = start + guard_bytes;
    slot.buffer_bytes = buffer_bytes;
    std::size_t n = std::min(name.size(), sizeof slot.name - 1);
    std::memcpy(slot.name, name.data(), n);
    slot.name[n] = '\0';
    slot.start.store(start, std::memory_order_release);
    return;
  }
}

void unregister_guard_page(const void* data_end) {
  std::uintptr_t start = reinterpret_cast<std::uintptr_t>(data_end);
  for (GuardSlot& slot : g_guards) {
    if (slot.start.load(std::memory_order_relaxed) == start) {
      slot.start.store(0, std::memory_order_release);
      return;
    }
  }
}

}  // namespace kernelfoundry
