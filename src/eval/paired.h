// The paired (side-by-side) speedup: batches of candidate and reference timings measured next to
// each other in time, turned into a speedup with a Student-t confidence interval.
//
// Method. Each pair gives one ratio, median(reference batch) / median(candidate batch): the
// median within a batch drops its outlier samples (a preempted call, a page fault), and both
// sides of a pair share the machine's state of that moment, so a drift in load, clocks or
// temperature that hits both alike cancels in the ratio. A shape's speedup is exp(mean of the
// per-pair log ratios) and its interval the Student-t interval on that mean (df = pairs - 1),
// mapped back with exp. The mean, not a median of the ratios: the outliers are already gone
// inside each batch, the mean of log ratios is what the t interval is exact for (near-normal
// log ratios), and a median of a handful of pairs would have no interval as simple and honest.
// Log space makes the estimate symmetric (a/b and b/a give reciprocal speedups) and the
// interval positive. Across shapes the speedup is the geometric mean of the shapes' speedups
// (the mean of their mean log ratios) and its variance the sum of theirs over shapes squared,
// assuming the shapes' measurements are independent (they are taken in separate batches, at
// separate times); its degrees of freedom by Welch-Satterthwaite.
//
// Two exceptions to "every pair counts". A shape's first pair is a probe (two calls right after
// the warm-up, which size the pairs after it) and is kept out of the estimate: on the 2-core VM
// under a CPU hog its ratio ranged from 0.85 to 3.7 for one code on both sides. And from five
// pairs up, a pair whose log ratio lies more than 4 robust standard deviations (1.4826 x the
// median absolute deviation, at least 1%) from the shape's median is left out: the load of a
// moment that hit one side's whole batch and not the other's (seen: three pairs in a row at
// 1.9x among pairs at 1.00x). The rule is symmetric about the median, so it cannot move the
// estimate towards either side, and at most a third of the pairs are ever left out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kf {

struct BatchPair {                     // one candidate batch and the reference batch next to it
  std::vector<double> candidate_ms{};  // the candidate's samples of that batch
  std::vector<double> reference_ms{};  // the reference's samples of that batch
  bool probe = false;                  // a sizing probe: stored, not counted in the estimate
};

struct ShapePairs {
  std::string shape{};
  std::vector<BatchPair> batches{};
};

struct SpeedupInterval {
  double speedup = 0, lo = 0, hi = 0;  // point estimate and the two-sided interval
  double confidence = 0.95;
  int batches = 0;  // pairs used (all shapes)
};

// One shape: from each pair the ratio median(reference)/median(candidate); the shape's speedup
// and interval from those per-pair ratios (in log space). Samples that are not positive and
// finite are skipped, and so is a pair left with no sample on one side. With no usable pair the
// result is all zero; with one, the speedup is that pair's ratio and the interval unbounded
// (lo = 0, hi = inf): one pair says nothing about the spread.
SpeedupInterval shape_speedup(const std::vector<BatchPair>& batches, double confidence = 0.95);

// All shapes: the geometric mean of the shapes' speedups, and its interval. Shapes without a
// usable pair are left out; any shape with a single pair makes the interval unbounded.
SpeedupInterval paired_speedup(const std::vector<ShapePairs>& shapes, double confidence = 0.95);

// The parent's stop rule for one shape: at least min_batches pairs (and never fewer than 2) and
// the interval's relative half-width (ln(hi/lo) / 2, at 95%) below rel_halfwidth.
bool pairs_converged(const std::vector<BatchPair>& batches, double rel_halfwidth, int min_batches);

// The two-sided Student-t quantile: t with P(T <= t) = p for `df` degrees of freedom (p in
// (0, 1), df > 0; df = inf gives the normal quantile). Accurate to ~1e-10.
double student_t_quantile(double p, double df);

// The standard error of ln(speedup) an interval stands for: ln(hi/lo) / (2 t), with t at the
// interval's confidence and df = batches - 1 (the most an interval over `batches` pairs can
// have, so the smallest t: this never understates the error). inf for an unbounded interval.
double log_standard_error(const SpeedupInterval& interval);

// Whether `a` is faster than `b` beyond their measurement noise: the difference of their log
// speedups, with the two standard errors combined (independent measurements: sqrt(sa^2 + sb^2)),
// has the lower bound of its two-sided interval (at the higher of the two confidences) above 0.
bool clearly_faster(const SpeedupInterval& a, const SpeedupInterval& b);

// The search's "is a faster than b" on speedups that may carry intervals: with both intervals,
// clearly_faster(); otherwise (old kernels, the reference) the point estimates, a > b. A missing
// speedup is never faster; anything is faster than a missing one.
bool faster_than(const std::optional<double>& a_speedup,
                 const std::optional<SpeedupInterval>& a_interval,
                 const std::optional<double>& b_speedup,
                 const std::optional<SpeedupInterval>& b_interval);

// How progress lines and listings show an interval: "[1.20-1.26]", "[1.20-inf]" when unbounded;
// the eval log's table, which compares ratios at the half-percent level, asks for 3 decimals.
std::string interval_text(const SpeedupInterval& interval, int decimals = 2);

// For results.json and runtimes: {speedup, lo, hi, confidence, batches} (hi null when unbounded)
// and, per shape, its pairs [{candidate_ms: [...], reference_ms: [...]}].
nlohmann::json interval_json(const SpeedupInterval& interval);
nlohmann::json pairs_json(const std::vector<ShapePairs>& shapes);

}  // namespace kf
