// Meta-prompt evolution: scores, seeded sampling (exploration, temperature), pruning, the
// answer's guidance.
#include "search/meta_prompt.h"

#include <cmath>
#include <map>

#include <gtest/gtest.h>

namespace kf {
namespace {

PromptVariantRecord variant(int id, const std::string& text = "tips") {
  PromptVariantRecord v;
  v.job_name = "j";
  v.variant_id = id;
  v.text = text + " " + std::to_string(id);
  return v;
}

VariantOutcome child(int variant_id, int verdict, std::optional<double> speedup = std::nullopt,
                     std::optional<double> parent = std::nullopt) {
  VariantOutcome o;
  o.variant_id = variant_id;
  o.trial = 1;
  o.verdict = verdict;
  o.speedup = speedup;
  o.parent_speedup = parent;
  o.reason = "did not compile";
  return o;
}

TEST(MetaPrompt, ScoreIsTheMeanLogImprovementWithAFailurePenalty) {
  EXPECT_DOUBLE_EQ(outcome_improvement(child(1, 5, 2.0, 1.0)), std::log(2.0));
  EXPECT_DOUBLE_EQ(outcome_improvement(child(1, 5, 1.0, 2.0)), std::log(0.5));
  EXPECT_DOUBLE_EQ(outcome_improvement(child(1, 5, 3.0)), std::log(3.0));  // vs the reference
  EXPECT_DOUBLE_EQ(outcome_improvement(child(1, 1)), kFailedChildImprovement);
  EXPECT_DOUBLE_EQ(outcome_improvement(child(1, 5, 0.01, 1.0)), kFailedChildImprovement);
  EXPECT_DOUBLE_EQ(outcome_improvement(child(1, 5)), 0.0);

  MetaPrompts meta({.enabled = true});
  meta.add(variant(1));
  EXPECT_FALSE(meta.score(1).has_value());
  meta.record(child(1, 5, 2.0, 1.0));
  meta.record(child(1, 2));
  ASSERT_TRUE(meta.score(1).has_value());
  EXPECT_DOUBLE_EQ(*meta.score(1), (std::log(2.0) - 1.0) / 2);
  EXPECT_EQ(meta.uses(1), 2);
  EXPECT_EQ(meta.find(1)->uses, 2);
  EXPECT_DOUBLE_EQ(*meta.find(1)->score, *meta.score(1));
}

std::map<int, int> draws(const MetaPrompts& meta, uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::map<int, int> count;
  for (int i = 0; i < n; ++i) ++count[meta.sample(rng)];
  return count;
}

TEST(MetaPrompt, SamplingIsSeededAndFollowsTheSoftmax) {
  MetaPrompts meta({.enabled = true, .exploration_rate = 0.0, .selection_temperature = 1.0});
  meta.add(variant(1));
  meta.add(variant(2));
  meta.record(child(1, 5, 1.0, 1.0));  // score 0
  meta.record(child(2, 5, 2.0, 1.0));  // score log 2: twice the weight
  EXPECT_EQ(draws(meta, 7, 100), draws(meta, 7, 100));
  std::map<int, int> c = draws(meta, 7, 30000);
  EXPECT_NEAR(double(c[2]) / 30000, 2.0 / 3.0, 0.02);

  // Temperature 0: always the best.
  MetaPrompts greedy({.enabled = true, .exploration_rate = 0.0, .selection_temperature = 0.0});
  greedy.add(variant(1));
  greedy.add(variant(2));
  greedy.record(child(2, 5, 2.0, 1.0));
  EXPECT_EQ(draws(greedy, 3, 200)[2], 200);

  // Exploration 1: uniform whatever the scores.
  MetaPrompts uniform({.enabled = true, .exploration_rate = 1.0, .selection_temperature = 0.0});
  uniform.add(variant(1));
  uniform.add(variant(2));
  uniform.record(child(2, 5, 8.0, 1.0));
  std::map<int, int> u = draws(uniform, 5, 20000);
  EXPECT_NEAR(double(u[1]) / 20000, 0.5, 0.02);
}

TEST(MetaPrompt, DropsTheWorstButNeverTheShippedNorTheNewest) {
  MetaPrompts meta({.enabled = true, .max_prompts = 2});
  for (int id = 1; id <= 4; ++id) meta.add(variant(id));
  meta.record(child(1, 1));            // shipped, worst: kept anyway
  meta.record(child(2, 5, 1.5, 1.0));  // best of the others
  meta.record(child(3, 2));            // worse than 2
  std::vector<int> dropped = meta.prune(4);
  EXPECT_EQ(dropped, (std::vector<int>{3, 2}));
  EXPECT_FALSE(meta.find(1)->dropped);
  EXPECT_FALSE(meta.find(4)->dropped);
  // Dropped variants are never sampled.
  std::map<int, int> c = draws(meta, 1, 200);
  EXPECT_EQ(c.count(2) + c.count(3), 0u);
}

TEST(MetaPrompt, ABranchChoosesAmongTheVariantsWrittenBeforeItsIteration) {
  MetaPrompts meta({.enabled = true, .exploration_rate = 1.0});
  meta.add(variant(1));
  PromptVariantRecord later = variant(2);
  later.created_trial = 3;
  meta.add(later);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(meta.sample(rng, 3), 1);
  std::map<int, int> c;
  for (int i = 0; i < 100; ++i) ++c[meta.sample(rng, 4)];
  EXPECT_GT(c[2], 0);
}

TEST(MetaPrompt, DueAtTheIntervalOnceEnoughChildren) {
  MetaPrompts meta({.enabled = true, .evolution_interval = 2, .min_samples_for_evolution = 2});
  meta.add(variant(1));
  meta.record(child(1, 1));
  EXPECT_FALSE(meta.due(2));  // one child only
  meta.record(child(1, 1));
  EXPECT_FALSE(meta.due(1));
  EXPECT_TRUE(meta.due(2));
  EXPECT_TRUE(meta.due(4));
  EXPECT_FALSE(MetaPrompts({.enabled = false}).due(2));
}

TEST(MetaPrompt, RequestTextShowsVariantsAndTheLatestOutcomes) {
  MetaPrompts meta({.enabled = true, .evolution_batch_size = 1});
  meta.add(variant(1, "shipped"));
  PromptVariantRecord second = variant(2, "rewritten");
  second.parent_id = 1;
  second.created_trial = 2;
  meta.add(second);
  meta.record(child(1, 1));
  meta.record(child(2, 5, 1.2, 1.0));
  std::string v = meta.variants_text();
  EXPECT_NE(v.find("Variant 1 (the shipped guidance"), std::string::npos) << v;
  EXPECT_NE(v.find("written after iteration 2 from variant 1"), std::string::npos) << v;
  EXPECT_NE(v.find("rewritten 2"), std::string::npos) << v;
  std::string o = meta.outcomes_text();
  EXPECT_EQ(o.find("did not compile"), std::string::npos) << o;  // only the latest one
  EXPECT_NE(o.find("variant 2: correct, 1.200x"), std::string::npos) << o;
  EXPECT_EQ(meta.best_id(), 2);
}

TEST(MetaPrompt, GuidanceFromAFencedBlockOrTheWholeAnswer) {
  EXPECT_EQ(extract_guidance("Here:\n```markdown\n## Tips\n- a\n```\nbye", 100), "## Tips\n- a");
  EXPECT_EQ(extract_guidance("  ## Tips\n- b\n", 100), "## Tips\n- b");
  EXPECT_EQ(extract_guidance("line one\nline two\nline three", 18), "line one\nline two");
  EXPECT_EQ(extract_guidance("```\n```", 100), "");
}

}  // namespace
}  // namespace kf
