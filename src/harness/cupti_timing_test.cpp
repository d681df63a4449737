// The CUPTI sample rules (interval union, when the event time wins) and the path without
// libcupti, all without a GPU.
#include "harness/cupti_timing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace kf = kernelfoundry;

namespace {

TEST(IntervalUnion, SumsSerialRecordsAndCountsOverlapOnce) {
  EXPECT_EQ(kf::interval_union_ns({}), 0u);
  // Two kernels one after the other, given out of order: the sum.
  EXPECT_EQ(kf::interval_union_ns({{300, 400}, {100, 200}}), 200u);
  // Two streams overlapping: the time the device was busy, not the sum (150 + 100).
  EXPECT_EQ(kf::interval_union_ns({{100, 250}, {200, 300}}), 200u);
  // One record inside another, and records touching end to start.
  EXPECT_EQ(kf::interval_union_ns({{100, 500}, {200, 300}}), 400u);
  EXPECT_EQ(kf::interval_union_ns({{100, 200}, {200, 300}, {300, 350}}), 250u);
  // Incomplete (end 0) or empty records add nothing.
  EXPECT_EQ(kf::interval_union_ns({{100, 0}, {500, 500}, {600, 700}}), 100u);
  // A chain where a later start lies inside a run that an earlier long record opened.
  EXPECT_EQ(kf::interval_union_ns({{0, 1000}, {100, 200}, {900, 1100}, {1200, 1300}}), 1200u);
}

kf::CallRecords call(std::size_t records, double union_ms, double first_ms, double last_ms,
                     double stop_ms) {
  kf::CallRecords c;
  c.records = records;
  c.union_ms = union_ms;
  c.first_ms = first_ms;
  c.last_ms = last_ms;
  c.stop_ms = stop_ms;
  return c;
}

TEST(SummarizeRecords, KeepsTheRecordsThatStartedInsideTheWindow) {
  // A flush kernel that ran before the window, two overlapping kernels of the call, a record
  // after the window and an incomplete one.
  kf::CallRecords c = kf::summarize_records(
      {{50'000, 90'000}, {120'000, 220'000}, {200'000, 400'000}, {900'000, 950'000}, {300'000, 0}},
      100'000, 800'000, 250'000);
  EXPECT_EQ(c.records, 2u);
  EXPECT_DOUBLE_EQ(c.union_ms, 0.28);
  EXPECT_DOUBLE_EQ(c.first_ms, 0.02);
  EXPECT_DOUBLE_EQ(c.last_ms, 0.3);
  EXPECT_DOUBLE_EQ(c.stop_ms, 0.15);
  c = kf::summarize_records({{50'000, 90'000}}, 100'000, 800'000, 100'000);
  EXPECT_EQ(c.records, 0u);
  EXPECT_EQ(c.union_ms, 0);
}

TEST(ChooseSample, RecordsWinWhenTheEventsSeeOnlyLaunchOverhead) {
  // A 16 us kernel read as 18.4 us by events (launch latency, stop event): the kernel's time.
  kf::TimedSample s = kf::choose_sample(0.0184, call(1, 0.016, 0.001, 0.017, 0.003));
  EXPECT_TRUE(s.cupti) << s.note;
  EXPECT_DOUBLE_EQ(s.ms, 0.016);
  EXPECT_TRUE(s.note.empty());
  // Gaps between back-to-back launches of a long call, just inside the allowance.
  double limit = kf::kIdleAllowanceMs + kf::kIdleAllowanceFraction * 1.0;
  s = kf::choose_sample(1.0 + limit * 0.995, call(3, 1.0, 0, 1.0 + limit * 0.99, 0.01));
  EXPECT_TRUE(s.cupti) << s.note;
  EXPECT_DOUBLE_EQ(s.ms, 1.0);
}

TEST(ChooseSample, TimeBeforeTheFirstRecordOrBeforeRunReturnedIsNotIdleTime) {
  // The first launch 25 us after the start event (host jitter): nothing of the call ran before.
  kf::TimedSample s = kf::choose_sample(0.046, call(1, 0.0204, 0.025, 0.0454, 0.026));
  EXPECT_TRUE(s.cupti) << s.note;
  EXPECT_DOUBLE_EQ(s.ms, 0.0204);
  // run() returned 0.7 ms after its kernel ended (host jitter or host work that can no longer
  // reach the outputs): the stop event fired just after it was recorded.
  s = kf::choose_sample(0.705, call(1, 0.02, 0.002, 0.022, 0.70));
  EXPECT_TRUE(s.cupti) << s.note;
  EXPECT_DOUBLE_EQ(s.ms, 0.02);
}

TEST(ChooseSample, IdleDeviceBetweenRecordsGivesTheEventTime) {
  // Two 10 us kernels with 300 us of host sleep between them.
  kf::TimedSample s = kf::choose_sample(0.33, call(2, 0.02, 0.005, 0.325, 0.326));
  EXPECT_FALSE(s.cupti);
  EXPECT_DOUBLE_EQ(s.ms, 0.33);
  EXPECT_NE(s.note.find("between its kernels"), std::string::npos) << s.note;
  EXPECT_NE(s.note.find("event time"), std::string::npos) << s.note;
  // Just past the allowance of a long call.
  double limit = kf::kIdleAllowanceMs + kf::kIdleAllowanceFraction * 2.0;
  s = kf::choose_sample(2.0 + limit * 1.02, call(1, 2.0, 0, 2.0 + limit * 1.01, 0.01));
  EXPECT_FALSE(s.cupti);
  EXPECT_DOUBLE_EQ(s.ms, 2.0 + limit * 1.02);
}

TEST(ChooseSample, DeviceBusyAfterTheLastRecordGivesTheEventTime) {
  // A 2 us kernel, run() returned at once, yet the stop event fired 0.5 ms later: the device ran
  // work no record shows (e.g. a kernel launched from the device).
  kf::TimedSample s = kf::choose_sample(0.5, call(1, 0.002, 0.002, 0.004, 0.005));
  EXPECT_FALSE(s.cupti);
  EXPECT_DOUBLE_EQ(s.ms, 0.5);
  EXPECT_NE(s.note.find("after the last one"), std::string::npos) << s.note;
}

TEST(ChooseSample, RecordsLongerThanTheEventsAreNotTrusted) {
  kf::TimedSample s = kf::choose_sample(0.100, call(4, 0.150, 0, 0.15, 0.01));
  EXPECT_FALSE(s.cupti);
  EXPECT_DOUBLE_EQ(s.ms, 0.100);
  EXPECT_NE(s.note.find("more than the events saw"), std::string::npos) << s.note;
  // Within the two clocks' noise the records still count.
  s = kf::choose_sample(0.100, call(4, 0.1015, 0, 0.1015, 0.01));
  EXPECT_TRUE(s.cupti) << s.note;
  EXPECT_DOUBLE_EQ(s.ms, 0.1015);
}

TEST(ChooseSample, NoRecordsGivesTheEventTime) {
  // A call whose work CUPTI did not see: never a zero sample.
  kf::TimedSample s = kf::choose_sample(0.05, call(0, 0, 0, 0, 0.01));
  EXPECT_FALSE(s.cupti);
  EXPECT_DOUBLE_EQ(s.ms, 0.05);
  EXPECT_NE(s.note.find("no kernel"), std::string::npos) << s.note;
}

TEST(CuptiLibrary, SonamesFirstThenTheToolkitNamedByCudaHome) {
  ::setenv("CUDA_HOME", "/opt/kf-test-cuda", 1);
  std::vector<std::string> names = kf::cupti_library_candidates(nullptr);
  ::unsetenv("CUDA_HOME");
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[0], "libcupti.so.13");
  auto at = std::find(names.begin(), names.end(), "/opt/kf-test-cuda/lib64/libcupti.so.13");
  EXPECT_NE(at, names.end());
  EXPECT_NE(
      std::find(names.begin(), names.end(), "/opt/kf-test-cuda/extras/CUPTI/lib64/libcupti.so.13"),
      names.end());
}

TEST(CuptiLibrary, EnvironmentSwitchKeepsEventTiming) {
  ::setenv("KF_HARNESS_NO_CUPTI", "1", 1);
  kf::CuptiTimer& timer = kf::CuptiTimer::instance();
  EXPECT_FALSE(timer.load(nullptr));
  ::unsetenv("KF_HARNESS_NO_CUPTI");
  EXPECT_FALSE(timer.loaded());
  EXPECT_NE(timer.why_not().find("KF_HARNESS_NO_CUPTI"), std::string::npos) << timer.why_not();
  // Tracing calls are harmless no-ops: the backend then keeps its event time.
  EXPECT_FALSE(timer.start());
  EXPECT_FALSE(timer.active());
  kf::CallRecords records;
  records.records = 3;
  std::string problem;
  timer.mark_stop();
  EXPECT_FALSE(timer.stop(&records, &problem));
  EXPECT_EQ(records.records, 0u);
  EXPECT_TRUE(problem.empty());
}

}  // namespace
