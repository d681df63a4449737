// PauseGroup: SIGSTOP/SIGCONT for the registered children's process groups and process trees,
// found in /proc, with a pause count and the total time paused.
#include "proc/pause_group.h"

#include "proc/proc_table.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unordered_map>

namespace kf {

namespace {

// The processes of each leader's child: its process group, and every process descending from
// the leader (a sandbox's command left the group by setsid() but stays in the tree).
std::vector<pid_t> members(const std::unordered_map<pid_t, ProcStat>& entries,
                           const std::vector<pid_t>& leaders) {
  std::unordered_map<pid_t, std::vector<pid_t>> children;
  for (const auto& [pid, e] : entries) children[e.ppid].push_back(pid);
  std::vector<pid_t> out;
  for (pid_t leader : leaders) {
    std::vector<pid_t> todo{leader};
    for (const auto& [pid, e] : entries)
      if (e.pgid == leader && pid != leader) todo.push_back(pid);
    while (!todo.empty()) {
      pid_t pid = todo.back();
      todo.pop_back();
      if (entries.count(pid) == 0 || std::find(out.begin(), out.end(), pid) != out.end()) continue;
      out.push_back(pid);
      auto kids = children.find(pid);
      if (kids != children.end()) todo.insert(todo.end(), kids->second.begin(), kids->second.end());
    }
  }
  return out;
}

// Stopped (by a signal or a tracer), or gone.
bool is_stopped(char state) {
  return state == 'T' || state == 't' || state == 'Z' || state == 'X';
}

}  // namespace

PauseGroup::~PauseGroup() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (depth_ > 0 && !leaders_.empty()) continue_locked(leaders_);
}

void PauseGroup::stop_locked(const std::vector<pid_t>& leaders) const {
  if (leaders.empty()) return;
  for (pid_t leader : leaders) ::kill(-leader, SIGSTOP);
  // Then the tree, until every process shows as stopped. A process that forks as SIGSTOP reaches
  // it either fails the fork (a signal is pending) or has its child listed before the signal is
  // queued, so a later scan finds every new child; signalling again is harmless.
  Clock::time_point deadline = Clock::now() + kStopWait;
  while (true) {
    std::unordered_map<pid_t, ProcStat> entries = read_proc_table();
    bool all_stopped = true;
    for (pid_t pid : members(entries, leaders)) {
      if (is_stopped(entries.at(pid).state)) continue;
      all_stopped = false;
      ::kill(pid, SIGSTOP);
    }
    if (all_stopped || Clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void PauseGroup::continue_locked(const std::vector<pid_t>& leaders) const {
  if (leaders.empty()) return;
  std::unordered_map<pid_t, ProcStat> entries = read_proc_table();
  // Parents before their children: members() lists the tree top-down.
  for (pid_t pid : members(entries, leaders)) ::kill(pid, SIGCONT);
  for (pid_t leader : leaders) ::kill(-leader, SIGCONT);
}

void PauseGroup::pause() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (depth_++ > 0) return;
  ++pauses_;
  paused_since_ = Clock::now();
  stop_locked(leaders_);
}

void PauseGroup::resume() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (depth_ == 0 || --depth_ > 0) return;
    paused_before_ += Clock::now() - paused_since_;
    continue_locked(leaders_);
  }
  resumed_.notify_all();
}

bool PauseGroup::paused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return depth_ > 0;
}

int PauseGroup::pauses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pauses_;
}

void PauseGroup::wait_while_paused(const std::function<bool()>& give_up) const {
  std::unique_lock<std::mutex> lock(mutex_);
  while (depth_ > 0 && !(give_up && give_up()))
    resumed_.wait_for(lock, std::chrono::milliseconds(50));
}

PauseGroup::Clock::duration PauseGroup::add(pid_t leader) {
  std::lock_guard<std::mutex> lock(mutex_);
  leaders_.push_back(leader);
  if (depth_ > 0) stop_locked({leader});
  Clock::time_point now = Clock::now();
  return paused_before_ + (depth_ > 0 ? now - paused_since_ : Clock::duration::zero());
}

void PauseGroup::remove(pid_t leader) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find(leaders_.begin(), leaders_.end(), leader);
  if (it != leaders_.end()) leaders_.erase(it);
}

PauseGroup::Clock::duration PauseGroup::paused_total(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return paused_before_ + (depth_ > 0 ? std::max(now - paused_since_, Clock::duration::zero())
                                      : Clock::duration::zero());
}

size_t PauseGroup::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return leaders_.size();
}

}  // namespace kf
