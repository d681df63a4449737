// The timing gate: a registry of running child processes (a job's builds) that are paused and
// resumed as a whole, so that a timing window never shares the machine with the job's own builds.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

namespace kf {

// Thread-safe. PosixProcessRunner registers the child of every ProcessSpec whose pause_group
// points here while it runs (ProcessSpec::pause_group); the evaluator pauses around a timing
// window. Pausing sends SIGSTOP to each child's process group AND to every process descending
// from its leader: a sandboxed command is not in the group (bwrap --new-session setsid()s it), but
// it is in the tree (its PID namespace's init is a child of the wrapper). The runner does not
// count paused time against a child's wall-clock, inactivity or drain limits; CPU time stands
// still by itself.
//
// Never run a child with this group from a thread that holds a pause: it would wait for a resume
// that only that thread can give.
class PauseGroup {
 public:
  using Clock = std::chrono::steady_clock;

  PauseGroup() = default;
  PauseGroup(const PauseGroup&) = delete;
  PauseGroup& operator=(const PauseGroup&) = delete;
  // Resumes whatever is still registered and paused (a forgotten resume must not leave stopped
  // processes behind).
  ~PauseGroup();

  // Stops every registered child and returns once the kernel shows each of their processes
  // stopped (or after kStopWait, for one stuck in uninterruptible I/O: it stops when that ends).
  // Counted: every pause() needs its resume(); the children run again at the last one.
  void pause();
  // Ends one pause(); the last one sends SIGCONT to everything pause() stopped. An unmatched
  // resume() does nothing.
  void resume();
  bool paused() const;
  // Times pause() has been entered since construction (tests, statistics).
  int pauses() const;

  // pause() for a scope. A null group does nothing, so callers need not check.
  class Hold {
   public:
    explicit Hold(PauseGroup* group) : group_(group) {
      if (group_ != nullptr) group_->pause();
    }
    ~Hold() {
      if (group_ != nullptr) group_->resume();
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    PauseGroup* group_;
  };

  // --- For the runner.
  // Blocks while paused, so a child is not even started inside a timing window; returns early
  // when give_up() says so (polled every 50 ms; PosixProcessRunner passes the Ctrl-C flag).
  void wait_while_paused(const std::function<bool()>& give_up) const;
  // Registers the started child `leader` (its pid, also its process group's id), stopped at once
  // when the group is paused now. Returns paused_total() at this moment, the base from which the
  // child's own paused time is counted.
  Clock::duration add(pid_t leader);
  // Unregisters `leader`. Call before reaping it: until then its zombie keeps the process group
  // id reserved, so no signal from here can reach an unrelated group that reused the number.
  void remove(pid_t leader);
  // Time spent paused since construction, the current pause included up to `now`.
  Clock::duration paused_total(Clock::time_point now = Clock::now()) const;
  size_t size() const;  // registered children

  // How long pause() waits for the processes to show as stopped.
  static constexpr std::chrono::milliseconds kStopWait{200};

 private:
  // Stops / continues the children led by `leaders` (mutex_ held).
  void stop_locked(const std::vector<pid_t>& leaders) const;
  void continue_locked(const std::vector<pid_t>& leaders) const;

  mutable std::mutex mutex_;
  mutable std::condition_variable resumed_;
  int depth_ = 0;
  int pauses_ = 0;
  Clock::time_point paused_since_{};
  Clock::duration paused_before_{};  // the finished pauses' total
  std::vector<pid_t> leaders_;
};

}  // namespace kf
