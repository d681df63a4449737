// The evaluator's side of the paced benchmark against the harness's own side (Pacer), in two
// threads: batches alternate in ABBA order, shapes end when their interval is narrow, claimed
// samples are held against the wall clock, and a line out of protocol aborts the run.
#include "eval/paced.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <mutex>
#include <thread>

#include "harness/pace.h"
#include "util/pressure.h"

namespace kf {
namespace {

std::filesystem::path temp_dir() {
  std::string pattern = "/tmp/kf_paced_test_XXXXXX";
  return ::mkdtemp(pattern.data());
}

struct Log {
  std::mutex mu;
  std::string order;  // 'C' per candidate batch, 'R' per reference batch, '|' per shape
  void add(char c) {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(c);
  }
};

// The candidate child: each call "takes" `ms` (claimed), over the listed shapes.
void candidate(const std::vector<std::string>& args, const std::vector<std::string>& shapes,
               double ms, Log* log, std::string* error) {
  kernelfoundry::Pacer pacer(args[1], args[3]);
  for (const std::string& shape : shapes) {
    log->add('|');
    std::vector<double> samples;
    for (long batch = 0;; ++batch) {
      kernelfoundry::PaceCommand c = pacer.boundary(shape, batch, 1.0, samples);
      if (c.kind == kernelfoundry::PaceCommand::Kind::Error) {
        *error = c.error;
        return;
      }
      if (c.kind == kernelfoundry::PaceCommand::Kind::Next) break;
      log->add('C');
      samples.assign(std::size_t(c.calls), ms);
      std::this_thread::sleep_for(std::chrono::microseconds(long(ms * 1000 * c.calls)));
    }
  }
  pacer.done();
}

TEST(PacedTiming, PairsAlternateAbbaAndEachShapeStopsWhenNarrow) {
  Log log;
  PacedTiming::Options o;
  o.batch_target_ms = 4;  // estimate 1 ms: 4 calls per batch
  o.min_pairs = 3;        // after the probe
  auto paced = PacedTiming::start(temp_dir(), o, [&](const std::string&, long calls) {
    log.add('R');
    return Result<std::vector<double>>(std::vector<double>(std::size_t(calls), 2.0));
  });
  ASSERT_TRUE(paced) << paced.message();
  std::string error;
  std::thread child(candidate, (*paced)->harness_args(), std::vector<std::string>{"a", "b"}, 1.0,
                    &log, &error);
  child.join();
  (*paced)->finish();
  EXPECT_EQ(error, "");
  EXPECT_TRUE((*paced)->complete()) << (*paced)->problem();
  // Constant ratios: the interval is a point from the 4th pair on (the probe, then min_pairs).
  EXPECT_EQ(log.order, "|CRRCCRRC|CRRCCRRC");
  const auto& pairs = (*paced)->pairs();
  ASSERT_EQ(pairs.size(), 2u);
  for (const ShapePairs& s : pairs) {
    ASSERT_EQ(s.batches.size(), 4u) << s.shape;
    EXPECT_TRUE(s.batches[0].probe);
    EXPECT_FALSE(s.batches[1].probe);
    // The first pair probes with 2 calls; the others get the estimate's 4 (the wall-time
    // target of 100 ms would allow more).
    for (std::size_t i = 0; i < s.batches.size(); ++i) {
      std::size_t k = i == 0 ? 2 : 4;
      EXPECT_EQ(s.batches[i].candidate_ms, std::vector<double>(k, 1.0)) << i;
      EXPECT_EQ(s.batches[i].reference_ms, std::vector<double>(k, 2.0)) << i;
    }
  }
  EXPECT_NEAR(paired_speedup(pairs).speedup, 2.0, 1e-12);
  EXPECT_TRUE((*paced)->suspicions().empty());
}

TEST(PacedTiming, ClaimsBeyondTheWallClockAreSuspect) {
  PacedTiming::Options o;
  o.batch_target_ms = 1;  // one call per batch
  o.min_pairs = 2;
  auto paced = PacedTiming::start(temp_dir(), o, [&](const std::string&, long calls) {
    return Result<std::vector<double>>(std::vector<double>(std::size_t(calls), 1.0));
  });
  ASSERT_TRUE(paced);
  // A child that says each call took 500 ms but answers at once.
  std::vector<std::string> args = (*paced)->harness_args();
  std::string error;
  std::thread child([&] {
    kernelfoundry::Pacer pacer(args[1], args[3]);
    std::vector<double> samples;
    for (long batch = 0;; ++batch) {
      kernelfoundry::PaceCommand c = pacer.boundary("a", batch, 1.0, samples);
      if (c.kind != kernelfoundry::PaceCommand::Kind::Go) break;
      samples.assign(std::size_t(c.calls), 500.0);
    }
    pacer.done();
  });
  child.join();
  (*paced)->finish();
  ASSERT_FALSE((*paced)->suspicions().empty());
  EXPECT_NE((*paced)->suspicions()[0].find("wall time"), std::string::npos);
}

TEST(PacedTiming, ALineOutOfProtocolAbortsTheRun) {
  auto paced =
      PacedTiming::start(temp_dir(), PacedTiming::Options{}, [&](const std::string&, long) {
        return Result<std::vector<double>>(std::vector<double>{1.0});
      });
  ASSERT_TRUE(paced);
  std::vector<std::string> args = (*paced)->harness_args();
  std::string error;
  std::thread child([&] {
    kernelfoundry::Pacer pacer(args[1], args[3]);
    kernelfoundry::PaceCommand c = pacer.boundary("a", 0, 1.0, {});
    ASSERT_EQ(c.kind, kernelfoundry::PaceCommand::Kind::Go);
    // Batch 5 when batch 1 is due: out of turn.
    c = pacer.boundary("a", 5, 1.0, std::vector<double>(std::size_t(c.calls), 1.0));
    error = c.error;
  });
  child.join();
  (*paced)->finish();
  EXPECT_NE(error.find("ended the paced benchmark: a pacing boundary out of turn"),
            std::string::npos)
      << error;
  EXPECT_FALSE((*paced)->complete());
}

TEST(PacedTiming, AReferenceThatCannotBeTimedEndsTheShapesAndLeavesThemIncomplete) {
  PacedTiming::Options o;
  o.batch_target_ms = 1;
  auto paced = PacedTiming::start(temp_dir(), o, [&](const std::string&, long) {
    return Result<std::vector<double>>::error("the judge is gone");
  });
  ASSERT_TRUE(paced);
  Log log;
  std::string error;
  std::thread child(candidate, (*paced)->harness_args(), std::vector<std::string>{"a", "b"}, 0.1,
                    &log, &error);
  child.join();
  (*paced)->finish();
  EXPECT_EQ(error, "");  // the candidate's run goes on; only the pairing is lost
  EXPECT_FALSE((*paced)->complete());
  EXPECT_NE((*paced)->problem().find("the judge is gone"), std::string::npos);
}

TEST(PacedTiming, ReportedSamplesMustBeTheBatchesSamples) {
  std::vector<ShapePairs> pairs = {{"a", {{{1.0, 2.0}, {3.0}}, {{1.5}, {3.0}}}}};
  EXPECT_EQ(compare_reported_samples(pairs, {{"a", {1.0, 2.0, 1.5}}}), "");
  // Rounded to the lines' 9 digits: still the same.
  EXPECT_EQ(compare_reported_samples(pairs, {{"a", {1.0000000001, 2.0, 1.5}}}), "");
  EXPECT_NE(compare_reported_samples(pairs, {{"a", {1.0, 2.0, 0.5}}}).find("sample 2"),
            std::string::npos);
  EXPECT_NE(compare_reported_samples(pairs, {{"a", {1.0, 2.0}}}).find("2 samples"),
            std::string::npos);
  EXPECT_NE(compare_reported_samples(pairs, {{"b", {1.0}}}).find("missing"), std::string::npos);
}

TEST(PacedTiming, BoundaryLines) {
  PaceBoundary b;
  EXPECT_TRUE(parse_pace_boundary("kf-pace n1 rows=4 2 0.5 1.25 2", "n1", &b));
  EXPECT_EQ(b.shape, "rows=4");
  EXPECT_EQ(b.batch, 2);
  EXPECT_EQ(b.samples_ms, (std::vector<double>{1.25, 2}));
  EXPECT_TRUE(parse_pace_boundary("kf-pace n1 done", "n1", &b));
  EXPECT_TRUE(b.done);
  EXPECT_FALSE(parse_pace_boundary("kf-pace n2 rows=4 2 0.5", "n1", &b));  // another nonce
  EXPECT_FALSE(parse_pace_boundary("kf-pace n1 rows=4 x 0.5", "n1", &b));
  EXPECT_FALSE(parse_pace_boundary("kf-pace n1 rows=4 1 0.5 nan", "n1", &b));
  EXPECT_FALSE(parse_pace_boundary("kf-pace n1 rows=4", "n1", &b));
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

TEST(PacedTest, CpuPressureTotalIsTheSomeLine) {
  EXPECT_EQ(cpu_pressure_total_us("some avg10=15.95 avg60=64.59 avg300=65.58 total=9131962826\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"),
            9131962826.0);
  // Only "some" counts (a task waiting for a CPU); missing or bad text is "no accounting".
  EXPECT_EQ(cpu_pressure_total_us("full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n"), -1);
  EXPECT_EQ(cpu_pressure_total_us(""), -1);
  EXPECT_EQ(cpu_pressure_total_us("some avg10=0.00 total=x12\n"), -1);
  EXPECT_EQ(cpu_pressure_total_us("some avg10=0.00 avg60=0.00\n"), -1);
}

}  // namespace
}  // namespace kf
