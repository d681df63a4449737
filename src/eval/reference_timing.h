// Reference timings kept across jobs: what a timing depends on (its key), the cache the evaluator
// reads and writes (the kernel database behind it: search/reference_timing_store.h), the short
// re-check that decides whether a kept timing still holds, and what happened, for the user.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/eval.h"
#include "util/status.h"

namespace kf {

// Bumped whenever the way the harness times a call changes (the stop rule, the cache flush, the
// timer, what one sample covers), so that timings made the old way are not reused.
constexpr int kReferenceTimingVersion = 1;

// Everything a reference timing depends on. The first part is known before the reference runs
// (the task, the config); the second is what its run reports (device, timer, harness) and the
// identity of its binary (compiler, flags, sources, harness library: the link step's cache key).
struct ReferenceTimingKey {
  int version = kReferenceTimingVersion;
  std::string task_hash, language, gpu_arch;
  nlohmann::json settings = nlohmann::json::object();  // the eval_config keys that change timing
  std::string backend, device, device_arch, timer, harness_version, build;

  nlohmann::json to_json() const;
  static ReferenceTimingKey from_json(const nlohmann::json& j);
  // SHA-256 over to_json(): the cache's primary key.
  std::string digest() const;
  // Whether the part known before the run (and the timing version) is the same.
  bool same_setup(const ReferenceTimingKey& other) const;
  // The fields of the second part that differ from `other`'s, e.g. "device, build" ("" = none).
  std::string run_differences(const ReferenceTimingKey& other) const;
};

// The part of a key known before the reference runs, from the evaluation settings.
ReferenceTimingKey reference_timing_setup(const std::string& task_hash, const EvalOptions& options);
// Completes `setup` with what the reference's run reported (its harness result file) and its
// binary's build key.
ReferenceTimingKey reference_timing_key(ReferenceTimingKey setup, const nlohmann::json& harness,
                                        const std::string& build_key);

// One kept timing: its key, its timings per benchmark shape, and which job made it, when.
struct ReferenceTimingEntry {
  ReferenceTimingKey key;
  std::map<std::string, ShapeTiming> timings;
  std::string job_name, created_at;  // created_at as now_iso8601() writes it
};

nlohmann::json timings_to_json(const std::map<std::string, ShapeTiming>& timings);
std::map<std::string, ShapeTiming> timings_from_json(const nlohmann::json& j);

// Where kept timings live. Errors are the cache's (a locked or read-only database): the job goes
// on and times the reference as if nothing were kept.
class ReferenceTimingCache {
 public:
  virtual ~ReferenceTimingCache() = default;
  // Every kept timing of the task (any device, settings or build), newest first.
  virtual Result<std::vector<ReferenceTimingEntry>> entries(const std::string& task_hash) = 0;
  // Inserts, or replaces the entry with the same key digest.
  virtual Status save(const ReferenceTimingEntry& entry) = 0;
};

// The short re-measurement's harness arguments (after the job's own, which they override): a
// tenth of the time budget per shape, between 0.1 s and 0.25 s (never above the job's), and at
// most 200 samples (never below min_samples). A shape too slow for min_samples in that budget
// stops at 5 x the budget (the harness's hard cap), with at least one sample.
std::vector<std::string> recheck_harness_args(const EvalOptions& options);

// The re-check of one shape.
struct ShapeRecheck {
  std::string shape;
  double kept_ms = 0, recheck_ms = 0;
  double rel_diff = 0;   // recheck / kept - 1
  double noise = 0;      // relative standard error of the difference of the two medians
  double tolerance = 0;  // what |rel_diff| had to stay within
  int recheck_n = 0;
};

// Accept a kept timing when every shape's short re-measurement is within max(floor, 3 x noise)
// of its kept median, the tolerance capped at max(10%, floor). The floor is
// eval_config.reference_recheck_tolerance (3% by default: the H200 repeats within 0.8%, so a
// 3% shift is a changed machine, not noise). The noise is that of the two medians (robust: from
// each side's samples, 1.4826 x MAD, x 1.2533 / sqrt(n) for a median), so a noisy machine is not
// re-timed for its noise alone (a 3-sigma band: a spurious disagreement about once in 370
// shapes); past 10% the re-check is too noisy to vouch for the kept timing, and the reference is
// re-timed.
constexpr double kRecheckFloor = 0.03;
constexpr double kRecheckSigmas = 3.0;
constexpr double kRecheckCeiling = 0.10;

struct TimingRecheck {
  bool agree = false;
  std::vector<ShapeRecheck> shapes;
  // The shape furthest off (the first that failed when one did), and by how much.
  std::string worst_shape;
  double worst_rel_diff = 0;
  // Why the two cannot be compared ("" when they can): a shape only one side has.
  std::string problem;
};

// The relative standard error of a shape's median, from its samples (from std_ms and n when it
// has fewer than 3 samples); 0 when nothing says.
double median_noise(const ShapeTiming& t);
TimingRecheck recheck_timings(const std::map<std::string, ShapeTiming>& kept,
                              const std::map<std::string, ShapeTiming>& recheck,
                              double floor = kRecheckFloor);

// What the job did with the reference's timing, for the progress line, results.json and the
// reference's eval log.
struct ReferenceTimingOutcome {
  enum class Source {
    kNone,     // no cache (e.g. `kernelfoundry test`): timed as always, nothing said
    kTimed,    // nothing kept to reuse: timed in full, kept for later jobs
    kFresh,    // eval_config.reuse_reference_timing false: timed in full, kept for later jobs
    kReused,   // a kept timing, confirmed by the short re-check
    kRetimed,  // a kept timing the re-check disagreed with: timed in full, replaced
  };
  Source source = Source::kNone;
  std::string digest;              // the key's
  std::string from_job, timed_at;  // of the kept timing (kReused, kRetimed)
  TimingRecheck recheck;           // kReused, kRetimed
  // The short re-measurement's own timings (kReused: the kept ones are used).
  std::map<std::string, ShapeTiming> recheck_timings;
  // Said alongside: why a kept timing did not fit (another device, build), a cache error.
  std::vector<std::string> notes;

  // "; timing reused from job J of 2025-01-31 12:34 UTC, re-checked within 0.6%" and the like;
  // "" for kNone.
  std::string progress_text() const;
  // The reference eval log's section: the same, then one line per re-checked shape.
  std::string log_text() const;
  // results.json's "reference_timing" (null for kNone).
  nlohmann::json to_json() const;
};

const char* reference_timing_source_name(ReferenceTimingOutcome::Source source);

}  // namespace kf
