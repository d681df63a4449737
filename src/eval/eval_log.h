// Writes the eval log: the text about one candidate that the next prompt (and the user) sees.
#pragma once

#include <string>

#include "eval/eval.h"

namespace kf {

struct EvalLogInput {
  const EvalResult* result = nullptr;
  const EvalResult* reference = nullptr;  // for the timing table; may be null
  std::string build_output;               // already cleaned
  std::string test_output;                // the harness's own summary (stdout+stderr)
  size_t max_chars = 6000;
  // The job's eval_config.cold_samples: how the timing table's samples were taken.
  bool cold_samples = true;
};

std::string format_eval_log(const EvalLogInput& input);
// The timing table alone (shape, reference, candidate, speedup).
std::string format_timing_table(const EvalResult& candidate, const EvalResult* reference);

}  // namespace kf
