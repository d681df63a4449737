// Sample statistics and the adaptive stopping rule of the benchmark phase (DESIGN.md §6.3).
// Pure functions, so the rule is unit-tested without a device.
#pragma once

#include <vector>

namespace kernelfoundry {

struct SampleStats {
  long n = 0;
  double median = 0, mean = 0, min = 0, max = 0;
  double stddev = 0;   // sample standard deviation (n - 1)
  double rel_sem = 0;  // stddev / sqrt(n) / mean: the relative noise of the mean
};

SampleStats compute_stats(const std::vector<double>& samples);

// Welford's running mean/variance: the stopping rule is checked after every sample.
class RunningStats {
 public:
  void add(double x);
  long n() const { return n_; }
  double mean() const { return mean_; }
  double stddev() const;
  // Infinite until two samples exist or when the mean is not positive.
  double rel_sem() const;

 private:
  long n_ = 0;
  double mean_ = 0, m2_ = 0;
};

struct StopRule {
  double noise = 0.005;  // target rel_sem
  long min_samples = 10;
  long max_samples = 2000;
  double budget_s = 2.0;         // wall time of the sampling loop, flushes included
  double hard_cap_factor = 5.0;  // a slow kernel may take min_samples up to budget * this
};

// Paced: the evaluator ended the shape's batches (pace.h).
enum class StopReason { None, Converged, Budget, MaxSamples, HardCap, Paced };
const char* stop_reason_name(StopReason reason);  // "converged", "time_budget", ...

// Stop once n >= max_samples; or n >= min_samples and (noise reached or budget spent); or, for
// kernels too slow for min_samples within the budget, at budget * hard_cap_factor.
StopReason should_stop(const RunningStats& stats, double elapsed_s, const StopRule& rule);

}  // namespace kernelfoundry
