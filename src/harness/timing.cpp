// Sample statistics and the stopping rule.
#include "harness/timing.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kernelfoundry {

SampleStats compute_stats(const std::vector<double>& samples) {
  SampleStats s;
  s.n = long(samples.size());
  if (samples.empty()) return s;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  std::size_t mid = sorted.size() / 2;
  s.median = sorted.size() % 2 ? sorted[mid] : 0.5 * (sorted[mid - 1] + sorted[mid]);
  s.min = sorted.front();
  s.max = sorted.back();
  RunningStats running;
  for (double x : samples) running.add(x);
  s.mean = running.mean();
  s.stddev = running.stddev();
  double rel = running.rel_sem();
  s.rel_sem = std::isfinite(rel) ? rel : 0.0;
  return s;
}

void RunningStats::add(double x) {
  ++n_;
  double delta = x - mean_;
  mean_ += delta / double(n_);
  m2_ += delta * (x - mean_);
}

double RunningStats::stddev() const {
  return n_ > 1 ? std::sqrt(m2_ / double(n_ - 1)) : 0.0;
}

double RunningStats::rel_sem() const {
  if (n_ < 2 || mean_ <= 0) return std::numeric_limits<double>::infinity();
  return stddev() / std::sqrt(double(n_)) / mean_;
}

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::None:
      return "running";
    case StopReason::Converged:
      return "converged";
    case StopReason::Budget:
      return "time_budget";
    case StopReason::MaxSamples:
      return "max_samples";
    case StopReason::HardCap:
      return "slow_kernel_cap";
    case StopReason::Paced:
      return "paced";
  }
  return "?";
}

StopReason should_stop(const RunningStats& stats, double elapsed_s, const StopRule& rule) {
  long n = stats.n();
  if (n >= rule.max_samples) return StopReason::MaxSamples;
  if (n >= rule.min_samples) {
    if (stats.rel_sem() < rule.noise) return StopReason::Converged;
    if (elapsed_s >= rule.budget_s) return StopReason::Budget;
  } else if (n >= 1 && elapsed_s >= rule.budget_s * rule.hard_cap_factor) {
    return StopReason::HardCap;
  }
  return StopReason::None;
}

}  // namespace kernelfoundry
