// The eval log's timing table: figures of the batches paired with the candidate's when it was
// timed side by side, the job-start reference timing otherwise.
#include "eval/eval_log.h"

#include <gtest/gtest.h>

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
  EXPECT_NE(log.find("n=1                                2.0000       1.0000     2.00x      6"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("geometric-mean speedup: 2.000x"), std::string::npos) << log;

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
