// The harness's side of `perf stat --control fifo:CTL,ACK -D -1` (the evaluator's profiling run,
// eval/profile.h): perf starts with its counters off, and the harness turns them on around a
// shape's timed calls only, so what perf counts is the kernel's calls, not the harness's setup,
// input fills, warm-up or checks.
#pragma once

#include <string>

namespace kernelfoundry {

class PerfWindow {
 public:
  // `control` is the --perf-control value "CTL,ACK" ("" = no window: nothing is done). Counting
  // is enabled here and disabled by the destructor; each waits for perf's acknowledgement.
  explicit PerfWindow(const std::string& control);
  ~PerfWindow();
  PerfWindow(const PerfWindow&) = delete;
  PerfWindow& operator=(const PerfWindow&) = delete;

  // Empty when the window works (or there is none); else why not (a FIFO that cannot be opened,
  // perf gone): the run goes on, uncounted.
  const std::string& problem() const { return problem_; }

 private:
  bool send(const char* command);

  int ctl_ = -1, ack_ = -1;
  bool enabled_ = false;
  std::string problem_;
};

}  // namespace kernelfoundry
