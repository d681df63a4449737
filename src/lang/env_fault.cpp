// Telling the machine's faults (a missing compiler, a full disk, a read-only path, a file size
// limit) from a program's own failure, in what a build or test child did.
#include <csignal>

#include "lang/lang.h"
#include "proc/sandbox.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

// gcc and clang quote the offending source line as "   12 | code" and mark it with "      |  ^".
bool quotes_source(std::string_view line) {
  size_t i = line.find_first_not_of(' ');
  if (i == std::string_view::npos) return false;
  size_t j = line.find_first_not_of("0123456789", i);
  if (j == i) return line[i] == '|';
  return j != std::string_view::npos && line.substr(j, 2) == " |";
}

}  // namespace

bool outer_file_size_limit() {
  uint64_t limit = file_size_limit();
  return limit > 0 && limit < SandboxOptions{}.file_size_limit_bytes;
}

std::string environment_fault_in_output(std::string_view output, bool count_file_too_large) {
  // strerror's wording (glibc), as compilers, linkers, assemblers and the harness print it.
  struct Fault {
    const char* text;
    const char* meaning;
    bool under_limit_only;  // EFBIG also comes from the sandbox's own limit on a runaway program
  };
  static const Fault kFaults[] = {
      {"No space left on device", "the disk is full: free some space", false},
      {"Disk quota exceeded", "the disk quota is used up: free some space or raise the quota",
       false},
      {"Read-only file system", "a path is on a read-only file system: make it writable", false},
      {"File too large", "the file size limit (ulimit -f) was reached: raise it", true},
      {"File size limit exceeded", "the file size limit (ulimit -f) was reached: raise it", true},
  };
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string_view::npos) end = output.size();
    std::string_view line = output.substr(start, end - start);
    start = end + 1;
    if (quotes_source(line)) continue;
    for (const Fault& f : kFaults) {
      if (f.under_limit_only && !count_file_too_large) continue;
      if (line.find(f.text) == std::string_view::npos) continue;
      std::string kept = trim(line);
      constexpr size_t kMaxLine = 400;
      if (kept.size() > kMaxLine) kept = kept.substr(0, kMaxLine) + " ...";
      return kept + " (" + f.meaning + ")";
    }
  }
  return "";
}

std::string environment_fault(const ProcessResult& r, bool scan_output) {
  if (!r.started && !r.cancelled)
    return r.start_error.empty() ? "the program could not be started" : r.start_error;
  bool limited = outer_file_size_limit();
  if (r.term_signal == SIGXFSZ && limited)
    return "killed by SIGXFSZ: the file size limit (ulimit -f) of " +
           std::to_string(file_size_limit()) +
           " bytes that KernelFoundry runs under was reached; raise it";
  if (!scan_output || r.success()) return "";
  return environment_fault_in_output(r.output, limited);
}

}  // namespace kf
