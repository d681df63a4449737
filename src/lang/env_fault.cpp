// Telling the machine's faults (a missing compiler, a full disk, a read-only path, a file size
// limit) from a program's own failure, in what a build or test child did.
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <string>

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

// A full disk leaves less than this; a compile or link needs at least this much room.
constexpr unsigned long long kNearlyFullBytes = 64ull << 20;
constexpr size_t kProbeBytes = 1 << 20;

bool real_write_probe(const std::filesystem::path& dir) {
  struct statvfs fs_info {};
  if (::statvfs(dir.c_str(), &fs_info) == 0) {
    if (fs_info.f_flag & ST_RDONLY) return true;
    if (static_cast<unsigned long long>(fs_info.f_bavail) * fs_info.f_frsize < kNearlyFullBytes)
      return true;
  }
  std::string probe = (dir / ".kf_write_probe_XXXXXX").string();
  int fd = ::mkstemp(probe.data());
  if (fd < 0) return is_environment_errno(errno);
  std::string block(kProbeBytes, '\0');
  bool failed = false;
  for (size_t done = 0; done < block.size() && !failed;) {
    ssize_t n = ::write(fd, block.data() + done, block.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (!(n < 0 && errno == EINTR)) {
      failed = is_environment_errno(errno);
      break;
    }
  }
  if (::fsync(fd) != 0 && is_environment_errno(errno)) failed = true;
  ::close(fd);
  ::unlink(probe.c_str());
  return failed;
}

WriteProbe g_write_probe = real_write_probe;

}  // namespace

WriteProbe set_write_probe(WriteProbe probe) {
  WriteProbe previous = g_write_probe;
  g_write_probe = probe ? probe : real_write_probe;
  return previous;
}

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

std::string environment_fault(const ProcessResult& r, bool scan_output,
                              const std::filesystem::path& confirm_dir) {
  if (!r.started && !r.cancelled)
    return r.start_error.empty() ? "the program could not be started" : r.start_error;
  bool limited = outer_file_size_limit();
  if (r.term_signal == SIGXFSZ && limited)
    return "killed by SIGXFSZ: the file size limit (ulimit -f) of " +
           std::to_string(file_size_limit()) +
           " bytes that KernelFoundry runs under was reached; raise it";
  if (!scan_output || r.success()) return "";
  std::string found = environment_fault_in_output(r.output, limited);
  // A tool's output quotes candidate text (`#error No space left on device`, a section name),
  // so its words alone cannot stop a job: the machine must really fail to write where the
  // build ran. (Under an outer file size limit the limit itself is the evidence.)
  if (found.empty() || limited || confirm_dir.empty()) return found;
  return g_write_probe(confirm_dir) ? found : "";
}

}  // namespace kf
