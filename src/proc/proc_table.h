// The kernel's process table as /proc shows it now: what the runner's watchdog (process trees'
// memory and task counts) and the timing gate (stopping build trees) both walk.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <unordered_map>

namespace kf {

struct ProcStat {
  pid_t ppid = 0;
  pid_t pgid = 0;
  char state = '?';  // R, S, D, T (stopped), t (traced), Z, X, ...
  int threads = 0;
  std::uint64_t rss_pages = 0;
};

// Every process listed in /proc now (one that exits meanwhile is left out).
std::unordered_map<pid_t, ProcStat> read_proc_table();

}  // namespace kf
