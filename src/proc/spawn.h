// Starting a child: PATH lookup, environment, fork+exec into its own process group with the
// spec's resource limits (internal to proc; PosixProcessRunner supervises what this starts).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "proc/process.h"
#include "util/status.h"

namespace kf {

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A started child. The fds are the parent's ends, non-blocking and close-on-exec.
struct SpawnedChild {
  pid_t pid = -1;       // also the id of its process group
  UniqueFd output;      // combined stdout+stderr
  UniqueFd stdin_pipe;  // only when the spec has stdin_data or stdin_stream
};

// The child's full environment as NAME=VALUE strings.
std::vector<std::string> child_environment(const ProcessSpec& spec);

// Where argv[0] lives: looked up in the child's PATH when it has no '/'. The error reads
// "cannot run 'nvcc': not found in PATH".
Result<std::string> resolve_executable(const ProcessSpec& spec,
                                       const std::vector<std::string>& environment);

Result<SpawnedChild> spawn_child(const ProcessSpec& spec);

// Writes to a child's stdin without letting a closed pipe raise SIGPIPE in the whole
// orchestrator: SIGPIPE is blocked in this thread for the write, and one it caused is consumed.
ssize_t write_without_sigpipe(int fd, const char* data, size_t size);

}  // namespace kf
