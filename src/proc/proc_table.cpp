// /proc/<pid>/stat of every process (see proc_table.h).
#include "proc/proc_table.h"

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kf {

std::unordered_map<pid_t, ProcStat> read_proc_table() {
  std::unordered_map<pid_t, ProcStat> entries;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return entries;
  while (dirent* d = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(d->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE* f = std::fopen(path, "re");
    if (f == nullptr) continue;  // it exited meanwhile
    char buffer[1024];
    size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
    std::fclose(f);
    buffer[n] = '\0';
    // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    const char* rest = std::strrchr(buffer, ')');
    if (rest == nullptr) continue;
    char state;
    long ppid, pgid, threads;
    unsigned long long rss;
    // Fields 3 (state), 4 (ppid), 5 (pgrp), 20 (num_threads), 24 (rss, in pages).
    if (std::sscanf(rest + 1,
                    " %c %ld %ld %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %ld %*d "
                    "%*u %*u %llu",
                    &state, &ppid, &pgid, &threads, &rss) != 5)
      continue;
    entries[static_cast<pid_t>(pid)] =
        ProcStat{static_cast<pid_t>(ppid), static_cast<pid_t>(pgid), state,
                 static_cast<int>(threads), static_cast<std::uint64_t>(rss)};
  }
  ::closedir(proc);
  return entries;
}

}  // namespace kf
