// Tests for the MAP-Elites archive: replacement rules, islands, best(), suspects and migration.
#include "search/archive.h"

#include <gtest/gtest.h>

#include <limits>

namespace kf {
namespace {

Elite make(std::string uuid, double fitness, int verdict = 5, int island = 0, int memory = 0,
           bool suspect = false) {
  Elite e;
  e.uuid = std::move(uuid);
  e.fitness = fitness;
  e.verdict = verdict;
  e.island = island;
  e.descriptor.memory = memory;
  e.suspect = suspect;
  return e;
}

TEST(ArchiveTest, EmptyArchive) {
  Archive archive;
  EXPECT_EQ(archive.size(), 0u);
  EXPECT_EQ(archive.best(), nullptr);
  EXPECT_EQ(archive.best_on(0), nullptr);
  EXPECT_EQ(archive.num_islands(), 2);
  EXPECT_TRUE(archive.elites().empty());
}

TEST(ArchiveTest, AddFillsEmptyCellAndReplacesOnlyWhenBetter) {
  Archive archive;
  EXPECT_TRUE(archive.add(make("a", 1.0)));
  EXPECT_FALSE(archive.add(make("b", 0.5)));  // worse
  EXPECT_FALSE(archive.add(make("c", 1.0)));  // tie keeps the incumbent
  EXPECT_TRUE(archive.add(make("d", 2.0)));
  ASSERT_EQ(archive.size(), 1u);
  EXPECT_EQ(archive.elites()[0]->uuid, "d");
  EXPECT_TRUE(archive.add(make("e", 0.1, 5, 0, /*memory=*/1)));  // another cell
  EXPECT_EQ(archive.size(), 2u);
}

TEST(ArchiveTest, TieBreaksOnVerdictThenSpeedup) {
  Archive archive;
  archive.add(make("a", 1.0, 4));
  EXPECT_TRUE(archive.add(make("b", 1.0, 5)));
  Elite fast = make("c", 1.0, 5);
  fast.speedup = 1.5;
  EXPECT_TRUE(archive.add(fast));
  Elite slower = make("d", 1.0, 5);
  slower.speedup = 1.2;
  EXPECT_FALSE(archive.add(slower));
  EXPECT_EQ(archive.elites()[0]->uuid, "c");
}

TEST(ArchiveTest, SuspectNeverReplacesTrusted) {
  Archive archive;
  archive.add(make("trusted", 1.0));
  EXPECT_FALSE(archive.add(make("sus", 100.0, 5, 0, 0, true)));
  EXPECT_EQ(archive.elites()[0]->uuid, "trusted");

  Archive other;
  other.add(make("sus", 100.0, 5, 0, 0, true));
  EXPECT_TRUE(other.add(make("trusted", 1.0)));  // a trusted kernel displaces a suspect one
  EXPECT_EQ(other.elites()[0]->uuid, "trusted");
}

// A trusted correct elite with speedup `s` and, when batches > 0, the interval [lo, hi].
Elite timed(std::string uuid, double s, double lo = 0, double hi = 0, int batches = 0) {
  Elite e = make(std::move(uuid), 5 + s);
  e.speedup = s;
  if (batches > 0) e.interval = SpeedupInterval{s, lo, hi, 0.95, batches};
  return e;
}

TEST(ArchiveTest, CellChangesHandsOnlyWhenTheIntervalSaysFaster) {
  Archive archive;
  archive.add(timed("incumbent", 1.25, 1.24, 1.26, 10));
  // A higher point estimate inside the noise (the old rule, fitness, would have taken it).
  EXPECT_FALSE(archive.add(timed("noisy", 1.30, 1.10, 1.53, 10)));
  EXPECT_FALSE(archive.add(timed("one-pair", 3.00, 0, std::numeric_limits<double>::infinity(), 1)));
  EXPECT_FALSE(archive.add(timed("same", 1.25, 1.24, 1.26, 10)));
  EXPECT_EQ(archive.elites()[0]->uuid, "incumbent");
  // Clearly faster: 1.40 [1.38-1.42] against 1.25 [1.24-1.26].
  EXPECT_TRUE(archive.add(timed("faster", 1.40, 1.38, 1.42, 10)));
  EXPECT_EQ(archive.elites()[0]->uuid, "faster");
  // A suspect kernel never takes a trusted one's place, however good its interval.
  Elite sus = timed("sus", 9.0, 8.9, 9.1, 10);
  sus.suspect = true;
  EXPECT_FALSE(archive.add(sus));
}

TEST(ArchiveTest, WithoutBothIntervalsTheCellFallsBackToPointEstimates) {
  Archive archive;
  archive.add(timed("old", 1.25));  // an old kernel: no interval
  EXPECT_FALSE(archive.add(timed("slower", 1.20, 1.19, 1.21, 10)));
  EXPECT_TRUE(archive.add(timed("newer", 1.26, 1.10, 1.44, 10)));  // 1.26 > 1.25
  EXPECT_FALSE(archive.add(timed("no-interval", 1.26)));           // a tie keeps the incumbent
  EXPECT_TRUE(archive.add(timed("no-interval-faster", 1.27)));
  EXPECT_EQ(archive.elites()[0]->uuid, "no-interval-faster");
}

TEST(ArchiveTest, IslandsAreSeparate) {
  Archive archive;
  EXPECT_TRUE(archive.add(make("a", 1.0, 5, 0)));
  EXPECT_TRUE(archive.add(make("b", 0.5, 5, 1)));  // same cell, other island
  EXPECT_TRUE(archive.add(make("c", 0.7, 5, 3)));  // wraps to island 1
  EXPECT_EQ(archive.size(), 2u);
  ASSERT_EQ(archive.elites(1).size(), 1u);
  EXPECT_EQ(archive.elites(1)[0]->uuid, "c");
  EXPECT_EQ(archive.elites(1)[0]->island, 1);
  EXPECT_EQ(archive.best_on(0)->uuid, "a");
  EXPECT_EQ(archive.best_on(1)->uuid, "c");
  EXPECT_EQ(archive.best_on(5), nullptr);
  EXPECT_EQ(archive.elites(-1).size(), 2u);
}

TEST(ArchiveTest, BestPrefersTrustedCorrect) {
  Archive archive;
  archive.add(make("wrong", 9.0, 4, 0, 0));
  archive.add(make("sus", 8.0, 5, 0, 1, true));
  archive.add(make("ok", 1.0, 5, 1, 2));
  archive.add(make("better", 2.0, 5, 1, 3));
  EXPECT_EQ(archive.best()->uuid, "better");

  Archive failing;
  failing.add(make("x", 0.2, 1, 0, 0));
  failing.add(make("y", 0.4, 2, 0, 1));
  EXPECT_EQ(failing.best()->uuid, "y");  // none correct: highest fitness overall
}

TEST(ArchiveTest, ElitesAreOrderedByIslandThenCell) {
  Archive archive;
  archive.add(make("b1", 1, 5, 1, 1));
  archive.add(make("a2", 1, 5, 0, 2));
  archive.add(make("a0", 1, 5, 0, 0));
  std::vector<std::string> uuids;
  for (const Elite* e : archive.elites()) uuids.push_back(e->uuid);
  EXPECT_EQ(uuids, (std::vector<std::string>{"a0", "a2", "b1"}));
}

TEST(ArchiveTest, MigrationCopiesBestAlongTheRing) {
  ArchiveOptions options;
  options.num_islands = 3;
  options.migrants = 1;
  Archive archive(options);
  archive.add(make("i0", 3.0, 5, 0, 0));
  archive.add(make("i0-weak", 0.1, 5, 0, 1));
  archive.add(make("i1", 1.0, 5, 1, 0));
  archive.add(make("i2", 2.0, 5, 2, 2));
  archive.migrate();
  // i0 beats i1 in cell m0 on island 1; i1 moves to island 2; i2 moves to island 0's m2 cell.
  EXPECT_EQ(archive.best_on(1)->uuid, "i0");
  EXPECT_EQ(archive.elites(1).size(), 1u);
  ASSERT_EQ(archive.elites(2).size(), 2u);
  EXPECT_EQ(archive.elites(2)[0]->uuid, "i1");
  EXPECT_EQ(archive.elites(2)[0]->island, 2);
  EXPECT_EQ(archive.elites(0).size(), 3u);
  // Migrants were chosen before placement: i0 did not travel on to island 2 in the same call.
  for (const Elite* e : archive.elites(2)) EXPECT_NE(e->uuid, "i0");
}

TEST(ArchiveTest, ShouldMigrate) {
  Archive archive;  // 2 islands, interval 3
  EXPECT_FALSE(archive.should_migrate(0));
  EXPECT_FALSE(archive.should_migrate(2));
  EXPECT_TRUE(archive.should_migrate(3));
  EXPECT_TRUE(archive.should_migrate(6));
  ArchiveOptions single;
  single.num_islands = 1;
  EXPECT_FALSE(Archive(single).should_migrate(3));
  Archive one(single);
  one.add(make("a", 1));
  one.migrate();
  EXPECT_EQ(one.size(), 1u);
}

}  // namespace
}  // namespace kf
