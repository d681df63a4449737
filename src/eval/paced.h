// The evaluator's side of the paced benchmark (the harness's side: src/harness/pace.h): while the
// candidate child runs, a thread answers its batch boundaries and, between the candidate's
// batches, has the job's judge time a batch of the reference's on the same shape. Pairs go in
// ABBA order (candidate then reference, then reference then candidate, ...) so a steady drift
// of the machine favours neither side. A shape ends when its paired interval is narrow enough
// (eval/paired.h: pairs_converged) or its time budget is spent, after three pairs at least.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "eval/paired.h"
#include "util/status.h"

namespace kf {

class PauseGroup;

class PacedTiming {
 public:
  // Times `calls` calls of the reference on benchmark shape `shape` (the judge's "time"
  // request): the samples, or an error.
  using TimeReference =
      std::function<Result<std::vector<double>>(const std::string& shape, long calls)>;

  struct Options {
    double batch_target_ms = 25;  // a batch's device time, from the warm-up's estimate
    long max_batch_calls = 64;
    double batch_wall_ms = 100;   // and its wall time, from the last batch (flushes, set-up)
    double shape_budget_s = 2;    // wall time of a shape's batches, both sides
    double rel_halfwidth = 0.01;  // the shape's interval: stop when ln(hi/lo)/2 is below this
    int min_pairs = 4;
    int max_pairs = 200;
    double answer_timeout_s = 600;  // the child's silence between boundaries before giving up
    PauseGroup* pause = nullptr;    // the job's builds, paused while either side is timed
  };

  // Makes the two FIFOs in `dir`, opens the evaluator's ends and starts the thread.
  static Result<std::unique_ptr<PacedTiming>> start(const std::filesystem::path& dir,
                                                    Options options, TimeReference time_reference);
  ~PacedTiming();
  PacedTiming(const PacedTiming&) = delete;
  PacedTiming& operator=(const PacedTiming&) = delete;

  // The harness options that connect the candidate child (--pace-in F --pace-out F2).
  std::vector<std::string> harness_args() const;
  // After the candidate child has ended: stops the thread. Then the results below are final.
  void finish();

  // Every shape the child reached, with its pairs (a shape left early keeps what it has).
  const std::vector<ShapePairs>& pairs() const { return pairs_; }
  // Whether every shape the child reached ended normally (converged or out of budget) and the
  // child said it was done: only then do the pairs stand for the whole benchmark.
  bool complete() const { return complete_; }
  // What went wrong, said in the eval log ("" when nothing): a protocol violation, a failed
  // reference batch, a batch whose claimed samples exceed the wall time seen around it.
  const std::string& problem() const { return problem_; }
  // Suspect findings: batches that claimed more device time than the wall clock allowed.
  const std::vector<std::string>& suspicions() const { return suspicions_; }
  // The share of the benchmark's wall time (first boundary to the child's "done") in which some
  // runnable task of the machine waited for a CPU (/proc/pressure/cpu, "some"): near 0 on a
  // machine that gave the timed calls its cores, high when other processes competed with them.
  // -1 where the kernel has no pressure accounting or the benchmark did not finish.
  double cpu_pressure() const { return cpu_pressure_; }

 private:
  PacedTiming(std::filesystem::path in_path, std::filesystem::path out_path, int in_fd, int out_fd,
              Options options, TimeReference time_reference);
  void run();
  bool read_line(std::string* line);
  bool send(const std::string& line);
  void abort(const std::string& why);

  std::filesystem::path in_path_, out_path_;
  int in_fd_ = -1, out_fd_ = -1;
  Options options_;
  TimeReference time_reference_;
  std::string nonce_, buffered_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<ShapePairs> pairs_;
  bool complete_ = false;
  std::string problem_;
  std::vector<std::string> suspicions_;
  double cpu_pressure_ = -1;
};

// Splits a "kf-pace NONCE SHAPE BATCH ESTIMATE_MS [SAMPLE_MS ...]" line. False when it is not one
// (or its nonce differs, or a number does not parse).
struct PaceBoundary {
  std::string shape;
  long batch = 0;
  double estimate_ms = 0;
  std::vector<double> samples_ms;
  bool done = false;  // "kf-pace NONCE done"
};
bool parse_pace_boundary(const std::string& line, const std::string& nonce, PaceBoundary* out);

// The candidate child's result file repeats its samples (shape -> samples, in order); the paced
// batches said them first, each checked against the wall clock. "" when every shape's reported
// samples are its batches' samples (to the 9 digits the lines carry), else what differs: a child
// that rewrote its result file to look faster than it was timed.
std::string compare_reported_samples(const std::vector<ShapePairs>& pairs,
                                     const std::map<std::string, std::vector<double>>& reported);

}  // namespace kf
