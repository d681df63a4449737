// The "earlier attempts" section's values: each failed or non-improving attempt as its verdict,
// error excerpt (or feedback summary), the model's summary and its diff against the code it
// started from, each part held to a share of the section's budget; and the mistakes made twice.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "prompt/prompt.h"

namespace kf {

struct AttemptsView {
  std::vector<TemplateValues> items;  // attempt.md's values, one per attempt shown
  std::string repeats;                // attempts.md's `repeats`: one "- " line per repeated mistake
};

// What each attempt changed: the unified diff of its EVOLVE blocks against the code it started
// from (blocks labelled when there are several); "" when it has no code.
std::string attempt_diff(const PromptAttempt& attempt);

// The first `count` of in.attempts, each part cut to its share of `budget` characters; `diffs`
// holds attempt_diff() of each attempt.
AttemptsView attempts_view(const PromptInputs& in, const std::vector<std::string>& diffs,
                           size_t count, size_t budget);

// `diff` cut after whole lines to at most `max_chars`, a "[... N more diff lines ...]" line
// standing for the rest.
std::string cut_diff(const std::string& diff, size_t max_chars);

}  // namespace kf
