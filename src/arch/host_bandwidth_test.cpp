// Tests for the host bandwidth cache: written once, re-read, re-measured for another machine or
// a file it cannot use; and the CPU profile filled from it.
#include "arch/host_bandwidth.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "util/fs.h"

namespace kf {
namespace {

class HostBandwidthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_host_bw_");
    ASSERT_TRUE(dir) << dir.message();
    dir_ = *dir / "cache";  // not there yet: the first measurement creates it
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_.parent_path(), ec);
  }
  BandwidthMeasurer counting(double gbps) {
    return [this, gbps] {
      ++measured_;
      return gbps;
    };
  }
  // A machine where no task waits for a CPU: the measurement is cached.
  static StallClock idle() {
    return [] { return 0.0; };
  }
  nlohmann::json cache_file() {
    auto text = read_file(dir_ / kHostBandwidthFile);
    EXPECT_TRUE(text) << text.message();
    return text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  }
  fs::path dir_;
  int measured_ = 0;
};

TEST_F(HostBandwidthTest, MeasuresOnceThenReadsTheCache) {
  auto first = host_copy_bandwidth(dir_, "host-a|CPU X|8", counting(12.5), idle());
  ASSERT_TRUE(first) << first.message();
  EXPECT_EQ(measured_, 1);
  EXPECT_FALSE(first->from_cache);
  EXPECT_DOUBLE_EQ(first->copy_gbps, 12.5);
  EXPECT_TRUE(first->cache_warning.empty()) << first->cache_warning;
  nlohmann::json j = cache_file();
  EXPECT_EQ(j["format"], "kernelfoundry-host-bandwidth");
  EXPECT_EQ(j["version"], 1);
  EXPECT_DOUBLE_EQ(j["machines"]["host-a|CPU X|8"]["copy_gbps"].get<double>(), 12.5);

  auto again = host_copy_bandwidth(dir_, "host-a|CPU X|8", counting(99), idle());
  ASSERT_TRUE(again) << again.message();
  EXPECT_EQ(measured_, 1);  // not measured again
  EXPECT_TRUE(again->from_cache);
  EXPECT_DOUBLE_EQ(again->copy_gbps, 12.5);
}

TEST_F(HostBandwidthTest, AnotherMachineIsMeasuredAndBothAreKept) {
  ASSERT_TRUE(host_copy_bandwidth(dir_, "host-a|CPU X|8", counting(12.5), idle()));
  auto other = host_copy_bandwidth(dir_, "host-a|CPU X|16", counting(30), idle());
  ASSERT_TRUE(other) << other.message();
  EXPECT_EQ(measured_, 2);
  EXPECT_FALSE(other->from_cache);
  EXPECT_DOUBLE_EQ(other->copy_gbps, 30);
  nlohmann::json j = cache_file();
  EXPECT_DOUBLE_EQ(j["machines"]["host-a|CPU X|8"]["copy_gbps"].get<double>(), 12.5);
  EXPECT_DOUBLE_EQ(j["machines"]["host-a|CPU X|16"]["copy_gbps"].get<double>(), 30);
}

TEST_F(HostBandwidthTest, AnUnusableFileIsMeasuredAgainAndReplaced) {
  ASSERT_TRUE(make_dirs(dir_));
  for (
      const char* text :
      {"not json", R"({"format":"kernelfoundry-host-bandwidth","version":99,"machines":{}})",
       R"({"format":"kernelfoundry-host-bandwidth","version":1,"machines":{"k":{"copy_gbps":-1}}})"}) {
    ASSERT_TRUE(write_file(dir_ / kHostBandwidthFile, text));
    int before = measured_;
    auto bw = host_copy_bandwidth(dir_, "k", counting(7), idle());
    ASSERT_TRUE(bw) << bw.message();
    EXPECT_EQ(measured_, before + 1) << text;
    EXPECT_DOUBLE_EQ(cache_file()["machines"]["k"]["copy_gbps"].get<double>(), 7) << text;
  }
}

// Measured while other processes held the CPU (some task waited for one the whole time): the
// figure is used, not cached, and the next job measures again.
TEST_F(HostBandwidthTest, AMeasurementOnABusyMachineIsUsedButNotCached) {
  double stalled_us = 0;
  StallClock busy = [&stalled_us] { return stalled_us += 1e6; };  // +1 s per read
  auto bw = host_copy_bandwidth(dir_, "k", counting(12.6), busy);
  ASSERT_TRUE(bw) << bw.message();
  EXPECT_DOUBLE_EQ(bw->copy_gbps, 12.6);
  EXPECT_FALSE(bw->from_cache);
  EXPECT_DOUBLE_EQ(bw->busy_share, 1.0);
  EXPECT_NE(bw->cache_warning.find("competed for the CPU"), std::string::npos) << bw->cache_warning;
  EXPECT_NE(bw->cache_warning.find("not cached"), std::string::npos) << bw->cache_warning;
  EXPECT_FALSE(fs::exists(dir_ / kHostBandwidthFile));
  // The next job, on an idle machine, measures again and keeps that figure.
  auto again = host_copy_bandwidth(dir_, "k", counting(24.5), idle());
  ASSERT_TRUE(again) << again.message();
  EXPECT_DOUBLE_EQ(again->copy_gbps, 24.5);
  EXPECT_EQ(measured_, 2);
  EXPECT_DOUBLE_EQ(cache_file()["machines"]["k"]["copy_gbps"].get<double>(), 24.5);
  // Said in the job's line too.
  auto cpu = find_arch("cpu");
  ASSERT_TRUE(cpu);
  fs::remove(dir_ / kHostBandwidthFile);
  auto line = apply_host_bandwidth(*cpu, dir_, counting(12.6), busy);
  ASSERT_TRUE(line) << line.message();
  EXPECT_NE(line->find("not cached"), std::string::npos) << *line;
}

TEST_F(HostBandwidthTest, AFailedMeasurementIsAnError) {
  auto bw = host_copy_bandwidth(dir_, "k", counting(0), idle());
  ASSERT_FALSE(bw);
  EXPECT_NE(bw.message().find("roofline check is off"), std::string::npos) << bw.message();
  EXPECT_FALSE(fs::exists(dir_ / kHostBandwidthFile));
}

TEST_F(HostBandwidthTest, FillsOnlyHostProfilesWithoutABandwidth) {
  auto cpu = find_arch("cpu");
  ASSERT_TRUE(cpu);
  ASSERT_EQ(cpu->dram_gbps, 0);
  auto line = apply_host_bandwidth(*cpu, dir_, counting(10), idle());
  ASSERT_TRUE(line) << line.message();
  EXPECT_DOUBLE_EQ(cpu->dram_gbps, kHostRooflineHeadroom * 10);
  EXPECT_NE(line->find("copy bandwidth 10.0 GB/s"), std::string::npos) << *line;
  EXPECT_NE(describe_arch(*cpu).find("measured at 10.0 GB/s"), std::string::npos);
  // The real machine key: the second job on this machine reads the cache.
  auto native = find_arch("native");
  ASSERT_TRUE(native);
  ASSERT_TRUE(apply_host_bandwidth(*native, dir_, counting(55), idle()));
  EXPECT_EQ(measured_, 1);
  EXPECT_DOUBLE_EQ(native->dram_gbps, kHostRooflineHeadroom * 10);

  auto h200 = find_arch("h200");
  ASSERT_TRUE(h200);
  double datasheet = h200->dram_gbps;
  auto none = apply_host_bandwidth(*h200, dir_, counting(1), idle());
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, "");
  EXPECT_DOUBLE_EQ(h200->dram_gbps, datasheet);
  EXPECT_EQ(measured_, 1);
}

TEST(HostBandwidth, MachineKeyNamesHostCpuAndThreads) {
  std::string key = host_machine_key();
  EXPECT_EQ(std::count(key.begin(), key.end(), '|'), 2) << key;
}

}  // namespace
}  // namespace kf
