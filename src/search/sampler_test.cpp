// Tests for parent and inspiration sampling: mode proportions, filters, exclusions, determinism.
#include "search/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace kf {
namespace {

Elite make(std::string uuid, double fitness, int verdict, int island, int memory) {
  Elite e;
  e.uuid = std::move(uuid);
  e.fitness = fitness;
  e.verdict = verdict;
  e.island = island;
  e.descriptor.memory = memory;
  return e;
}

std::map<std::string, int> count_parents(const Archive& archive, int island,
                                         const SamplingOptions& options, int draws) {
  std::mt19937_64 rng(42);
  std::map<std::string, int> counts;
  for (int i = 0; i < draws; ++i) {
    const Elite* p = sample_parent(archive, island, rng, options);
    counts[p ? p->uuid : "null"]++;
  }
  return counts;
}

TEST(SamplerTest, EmptyArchiveGivesNoParent) {
  Archive archive;
  std::mt19937_64 rng(1);
  EXPECT_EQ(sample_parent(archive, 0, rng, {}), nullptr);
  EXPECT_TRUE(sample_inspirations(archive, nullptr, 3, rng).empty());
}

TEST(SamplerTest, ExploitOnlyFollowsSoftmax) {
  Archive archive;
  archive.add(make("hi", std::log(3.0), 5, 0, 0));  // weight 3
  archive.add(make("lo", 0.0, 5, 0, 1));            // weight 1
  SamplingOptions options;
  options.exploit = 1.0;
  options.explore = 0.0;
  auto counts = count_parents(archive, 0, options, 20000);
  EXPECT_NEAR(counts["hi"] / 20000.0, 0.75, 0.02);

  options.temperature = 0;  // greedy
  counts = count_parents(archive, 0, options, 100);
  EXPECT_EQ(counts["hi"], 100);
}

TEST(SamplerTest, ExploreAvoidsTheBestCell) {
  Archive archive;
  archive.add(make("best", 10.0, 5, 0, 0));
  archive.add(make("b", 1.0, 5, 0, 1));
  archive.add(make("c", 1.0, 5, 0, 2));
  SamplingOptions options;
  options.exploit = 0.0;
  options.explore = 1.0;
  auto counts = count_parents(archive, 0, options, 10000);
  EXPECT_EQ(counts["best"], 0);
  EXPECT_NEAR(counts["b"] / 10000.0, 0.5, 0.03);
}

TEST(SamplerTest, MixedProportions) {
  Archive archive;
  archive.add(make("best", 50.0, 5, 0, 0));  // softmax mass ~1
  archive.add(make("b", 0.0, 5, 0, 1));
  archive.add(make("c", 0.0, 5, 0, 2));
  archive.add(make("d", 0.0, 5, 0, 3));
  SamplingOptions options;  // 0.7 exploit, 0.2 explore, 0.1 random
  const int n = 40000;
  auto counts = count_parents(archive, 0, options, n);
  // best: 0.7 (exploit) + 0.1 / 4 (random); each other: 0.2 / 3 + 0.1 / 4.
  EXPECT_NEAR(counts["best"] / double(n), 0.725, 0.015);
  EXPECT_NEAR(counts["b"] / double(n), 0.2 / 3 + 0.025, 0.01);
}

TEST(SamplerTest, IslandThenArchiveFallback) {
  Archive archive;
  archive.add(make("on1", 1.0, 5, 1, 0));
  auto counts = count_parents(archive, 1, {}, 50);
  EXPECT_EQ(counts["on1"], 50);
  counts = count_parents(archive, 0, {}, 50);  // island 0 is empty: the archive
  EXPECT_EQ(counts["on1"], 50);
}

TEST(SamplerTest, ImproveOnlyCorrect) {
  Archive archive;
  archive.add(make("wrong", 10.0, 4, 0, 0));
  archive.add(make("right", 1.0, 5, 0, 1));
  SamplingOptions options;
  options.improve_only_correct = true;
  auto counts = count_parents(archive, 0, options, 500);
  EXPECT_EQ(counts["right"], 500);

  Archive none;
  none.add(make("wrong", 10.0, 4, 0, 0));
  std::mt19937_64 rng(3);
  EXPECT_EQ(sample_parent(none, 0, rng, options), nullptr);
}

TEST(SamplerTest, DeterministicForASeed) {
  Archive archive;
  for (int i = 0; i < 8; ++i) archive.add(make("k" + std::to_string(i), i * 0.3, 5, i % 2, i));
  auto run = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::string> picks;
    for (int i = 0; i < 50; ++i) {
      const Elite* p = sample_parent(archive, i % 2, rng, {});
      picks.push_back(p->uuid);
      for (const Elite* e : sample_inspirations(archive, p, 2, rng)) picks.push_back(e->uuid);
    }
    return picks;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(SamplerTest, InspirationsExcludeParentAndItsCell) {
  Archive archive;
  archive.add(make("parent", 1.0, 5, 0, 0));
  archive.add(make("same-cell", 5.0, 5, 1, 0));  // parent's cell on another island
  archive.add(make("x", 1.0, 5, 0, 1));
  archive.add(make("y", 1.0, 4, 1, 2));
  Elite copy = make("x", 1.0, 5, 1, 1);  // a migrated copy of x
  archive.add(copy);
  const Elite* parent = archive.elites(0)[0];
  ASSERT_EQ(parent->uuid, "parent");
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) {
    auto got = sample_inspirations(archive, parent, 5, rng);
    ASSERT_EQ(got.size(), 2u);     // x (once) and y
    EXPECT_EQ(got[0]->uuid, "x");  // correct first
    EXPECT_EQ(got[1]->uuid, "y");
  }
}

TEST(SamplerTest, InspirationsPreferCorrectAndFit) {
  Archive archive;
  archive.add(make("parent", 0.0, 5, 0, 0));
  archive.add(make("fast", 3.0, 5, 0, 1));
  archive.add(make("slow", 0.5, 5, 0, 2));
  archive.add(make("broken", 0.0, 1, 0, 3));
  const Elite* parent = archive.elites(0)[0];
  std::mt19937_64 rng(11);
  std::map<std::string, int> counts;
  for (int i = 0; i < 6000; ++i) {
    auto got = sample_inspirations(archive, parent, 1, rng);
    ASSERT_EQ(got.size(), 1u);
    counts[got[0]->uuid]++;
  }
  EXPECT_EQ(counts["parent"], 0);
  EXPECT_GT(counts["fast"], counts["slow"]);
  EXPECT_GT(counts["slow"], 2 * counts["broken"]);
  auto two = sample_inspirations(archive, parent, 2, rng);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_NE(two[0]->uuid, two[1]->uuid);
}

}  // namespace
}  // namespace kf
