// Kernel-exact device time of a call from CUPTI activity records (libcupti, loaded at run time),
// and the pure rules that turn a call's records and its event time into one sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kernelfoundry {

// One activity record's [start, end) on CUPTI's clock (ns).
struct Interval {
  std::uint64_t start = 0, end = 0;
};

// Length (ns) of the union of `intervals`: the time the device was busy with the call's kernels
// and copies. Equals the sum for serial work and counts overlapping streams once. Empty or
// inverted intervals add nothing.
std::uint64_t interval_union_ns(std::vector<Interval> intervals);

// The call's records on the window's clock (ms from its start, just before the start event was
// recorded on an idle device).
struct CallRecords {
  std::size_t records = 0;
  double union_ms = 0;  // interval_union_ns of the records
  double first_ms = 0;  // the first record's start
  double last_ms = 0;   // the last record's end
  double stop_ms = 0;   // when the host recorded the stop event (run() had returned)
};
// The records that started in [window_start, window_end) (ns), summarised against
// window_start; stop_mark: when the host recorded the stop event.
CallRecords summarize_records(std::vector<Interval> intervals, std::uint64_t window_start,
                              std::uint64_t window_end, std::uint64_t stop_mark);

// Idle time the events may see inside a call beyond its records before the records are no longer
// trusted: the gaps between back-to-back launches and the stop event's latency. Time before the
// first record (the first launch's latency, host jitter, host work) and time after the last one
// while run() had not yet returned hide nothing: before the first kernel or copy no input has
// reached the host, and after the last one nothing more reaches the outputs. What remains, gaps
// between records and the device still busy after run() returned past the last record, is host
// work or waits between launches, or device work kernel records do not show (device-side
// launches): then the event time is the honest sample.
constexpr double kIdleAllowanceMs = 0.010;
constexpr double kIdleAllowanceFraction = 0.05;
// How much the union may exceed the event time (two clocks, ~0.5 us event resolution).
constexpr double kOverEventsAllowanceMs = 0.002;
constexpr double kOverEventsAllowanceFraction = 0.02;

struct TimedSample {
  double ms = 0;
  bool cupti = false;  // true: the records' union; false: the event time
  std::string note;    // why the event time was used despite records (empty otherwise)
};

// The sample of one call. event_ms: what the events saw (side-stream tail included).
TimedSample choose_sample(double event_ms, const CallRecords& call);

// Where load() looks for libcupti, in order (exposed for tests).
std::vector<std::string> cupti_library_candidates(const void* runtime_symbol);

// The process's CUPTI activity tracing (CUPTI's buffer callbacks are global, so there is one).
// Every method is a no-op returning "unavailable" when libcupti could not be loaded or set up.
class CuptiTimer {
 public:
  static CuptiTimer& instance();

  // Loads libcupti once: KF_HARNESS_NO_CUPTI=1 skips it; the plain sonames first, then folders
  // next to the library holding `runtime_symbol` (an address in the CUDA runtime), $CUDA_HOME,
  // $CUDA_PATH, the toolkit this harness was built with and /usr/local/cuda. False when
  // unavailable; why_not() says why in one line.
  bool load(const void* runtime_symbol);
  bool loaded() const { return loaded_; }
  const std::string& why_not() const { return why_not_; }
  const std::string& library() const { return library_; }
  // Which kernel records time the calls: "serialised kernel records" (the default) or
  // "concurrent kernel records" (KF_HARNESS_CUPTI_SERIAL=0); empty before a successful load().
  const std::string& records() const { return records_; }

  // Kernel, copy and memset records are on from load() on. Around one call, on an idle device:
  // start() (just before the start event) opens the call's window; mark_stop() just after the
  // stop event was recorded; stop() (after the device synchronised) has CUPTI hand over its records
  // and summarises those that started inside the window. stop() returns false with `problem` set
  // when the records cannot be trusted (an API error, dropped records); a CUPTI error also ends
  // tracing for the process.
  bool start();
  void mark_stop();
  bool stop(CallRecords* call, std::string* problem);
  bool active() const { return active_; }

 private:
  CuptiTimer() = default;
  bool fail(const std::string& what, int result);

  bool tried_ = false, loaded_ = false, active_ = false;
  std::string why_not_, library_, records_;
  std::uint64_t window_start_ = 0, stop_mark_ = 0;
};

}  // namespace kernelfoundry
