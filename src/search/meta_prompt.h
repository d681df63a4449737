// Meta-prompt evolution (prompt.meta_prompting): the job's optimisation-guidance variants, their
// scores from the children prompted with them, the seeded choice of a variant per branch, the
// pruning to max_prompts, and the text of the LLM request that writes a new variant.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "config/config.h"
#include "store/store.h"

namespace kf {

struct MetaPromptOptions {
  bool enabled = false;
  int evolution_interval = 2;          // iterations between two new variants
  int evolution_batch_size = 4;        // example outcomes shown to the meta-prompt LLM
  int min_samples_for_evolution = 2;   // children needed before the first new variant
  double exploration_rate = 0.2;       // share of branches that pick a variant uniformly
  double selection_temperature = 1.0;  // of the softmax over scores; <= 0 picks the best
  int max_prompts = 8;                 // variants kept for sampling (the shipped one always)
  std::string output_subdir = "prompt_evolution";
  size_t max_chars = 6000;  // most characters of one variant's text
};

// prompt.meta_prompting.* (the keys of the Python KernelFoundry; mode is always holistic).
MetaPromptOptions read_meta_prompt_options(const Config& config);

// One child written with a variant, as its score and the meta-prompt LLM see it.
struct VariantOutcome {
  int variant_id = 0;
  int trial = 0, branch = 0;
  int verdict = 0;
  std::optional<double> speedup, parent_speedup;  // parent: none = the reference (1.0)
  std::string reason;
};

// A failed child (verdict below correct) counts as this improvement.
inline constexpr double kFailedChildImprovement = -1.0;

// log(child speedup / parent speedup), bounded below by kFailedChildImprovement; the failure
// penalty for a failed child; 0 for a correct child without a measured speedup.
double outcome_improvement(const VariantOutcome& outcome);

class MetaPrompts {
 public:
  explicit MetaPrompts(MetaPromptOptions options) : options_(std::move(options)) {}

  const MetaPromptOptions& options() const { return options_; }
  // Variants by id (loaded or added), dropped ones included.
  const std::vector<PromptVariantRecord>& variants() const { return variants_; }
  const PromptVariantRecord* find(int variant_id) const;
  // Adds a variant (from the store, or new); keeps the list ordered by id.
  void add(PromptVariantRecord variant);
  // The next free id.
  int next_id() const;

  // Counts one child of its variant (score and uses are recomputed).
  void record(const VariantOutcome& outcome);
  const std::vector<VariantOutcome>& outcomes() const { return outcomes_; }
  // Mean improvement of the variant's children; none before its first child.
  std::optional<double> score(int variant_id) const;
  int uses(int variant_id) const;

  // The variant a branch uses, among those not dropped: with probability exploration_rate
  // uniformly, else by softmax(score / selection_temperature) (a variant without children
  // counts as score 0). Only variants written before iteration `trial` take part, so that a
  // branch asked again on resume chooses among the variants it had. Draws exactly two numbers
  // from `rng`. 0 when there is no variant.
  int sample(std::mt19937_64& rng, int trial = std::numeric_limits<int>::max()) const;

  // Whether a new variant is due after iteration `trial`: every evolution_interval iterations,
  // once min_samples_for_evolution children are counted.
  bool due(int trial) const;

  // Marks the lowest-scoring variants dropped until at most max_prompts remain, never variant
  // 1 (the shipped guidance) nor `keep` (the newest); ties drop the oldest. The dropped ids.
  std::vector<int> prune(int keep);

  // The meta-prompt LLM's inputs, as text: every variant not dropped (id, parent, score, uses,
  // text) and the latest evolution_batch_size outcomes.
  std::string variants_text() const;
  std::string outcomes_text() const;

  // The best variant not dropped by score (the parent of a new one); ties: the lowest id.
  int best_id() const;

 private:
  MetaPromptOptions options_;
  std::vector<PromptVariantRecord> variants_;
  std::vector<VariantOutcome> outcomes_;
};

// The guidance in a meta-prompt answer: the first fenced block (any tag), else the whole answer;
// trimmed and cut to max_chars at a line end. Empty when nothing usable is there.
std::string extract_guidance(const std::string& answer, size_t max_chars);

}  // namespace kf
