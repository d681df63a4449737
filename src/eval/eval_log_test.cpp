// The eval log's timing table: figures of the batches paired with the candidate's when it was
// timed side by side, the job-start reference timing otherwise.
#include "eval/eval_log.h"

#include <gtest/gtest.h>

#include "util/strings.h"

namespace kf {
namespace {

TEST(EvalLog, SideBySideTableShowsThePairedReferenceBatches) {
  EvalResult ref;
  ref.timings["n=1"].median_ms = 5.0;  // the job-start timing: another time window
  EvalResult c;
  c.verdict = kCorrect;
  c.timings["n=1"].median_ms = 1.0;
  c.timings["n=1"].n = 6;
  ShapePairs s{"n=1", {}};
  s.batches.push_back({{9.0}, {9.0}, true});  // a sizing probe: not counted
  s.batches.push_back({{1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}});
  s.batches.push_back({{1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}});
  c.pairs = {s};
  c.speedup_interval = paired_speedup(c.pairs);
  c.speedup = c.speedup_interval->speedup;
  std::string log = format_eval_log({&c, &ref, "", "", 6000});
  EXPECT_NE(log.find("== timing (side by side"), std::string::npos) << log;
  // The shape's interval and its pairs beside the ratio (both pairs read 2.00: zero width).
  EXPECT_NE(log.find("n=1                                2.0000       1.0000     2.00x "
                     "[2.000-2.000]     2      6"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("geometric-mean speedup: 2.000x [2.000-2.000] (95% interval, 2 pairs over "
                     "all shapes)"),
            std::string::npos)
      << log;

  // Pairs that disagree give an interval around their mean; a shape with one pair has no bound.
  ShapePairs noisy{"n=2", {}};
  noisy.batches.push_back({{1.0}, {1.1}});
  noisy.batches.push_back({{1.0}, {0.9}});
  noisy.batches.push_back({{1.0}, {1.0}});
  ShapePairs lone{"n=3", {}};
  lone.batches.push_back({{1.0}, {3.0}});
  c.timings["n=2"].median_ms = 1.0;
  c.timings["n=3"].median_ms = 1.0;
  c.pairs = {s, noisy, lone};
  c.speedup_interval = paired_speedup(c.pairs);
  c.speedup = c.speedup_interval->speedup;
  log = format_eval_log({&c, &ref, "", "", 6000});
  SpeedupInterval n2 = shape_speedup(noisy.batches);
  ASSERT_LT(n2.lo, 1.0);
  ASSERT_GT(n2.hi, 1.0);
  EXPECT_NE(log.find(strprintf("[%.3f-%.3f]     3", n2.lo, n2.hi)), std::string::npos) << log;
  EXPECT_NE(log.find("3.00x   [0.000-inf]     1"), std::string::npos) << log;
  EXPECT_NE(log.find("[0.000-inf] (95% interval, 6 pairs over all shapes)"), std::string::npos)
      << log;
  c.timings.erase("n=2");
  c.timings.erase("n=3");

  // Not side by side: against the reference's own timing.
  c.pairs.clear();
  c.speedup_interval.reset();
  c.speedup = 5.0;
  log = format_eval_log({&c, &ref, "", "", 6000});
  EXPECT_NE(log.find("== timing (median of cold samples)"), std::string::npos) << log;
  EXPECT_NE(log.find("5.0000       1.0000     5.00x"), std::string::npos) << log;
  // Warm samples (eval_config.cold_samples: false) are called warm.
  log = format_eval_log({&c, &ref, "", "", 6000, false});
  EXPECT_NE(log.find("== timing (median of warm samples)"), std::string::npos) << log;
  // The job's setting decides, not the candidate-written result file.
  c.harness = {{"cold", false}};
  log = format_eval_log({&c, &ref, "", "", 6000, true});
  EXPECT_NE(log.find("== timing (median of cold samples)"), std::string::npos) << log;
}

}  // namespace
}  // namespace kf
