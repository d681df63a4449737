// The host copy test under load: its own binary, run alone (ctest RUN_SERIAL), since a test
// running beside it would make the "idle" measurement a busy one.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "arch/host_bandwidth.h"

namespace kf {
namespace {

// The copy test itself: busy threads on every core (as many as the machine has) must not make the
// memory read slow. Timed by the wall clock they took the 2-core VM from ~25 GB/s to ~12; timed
// by each copy thread's CPU time the figure stays (it reads higher: a copy thread that ran alone
// had the memory to itself).
TEST(HostCopyBandwidth, CopyThreadsWaitingForACpuDoNotReadAsSlowMemory) {
  double idle = std::max(measure_copy_bandwidth_gbps(), measure_copy_bandwidth_gbps());
  ASSERT_GT(idle, 0);
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()); ++i)
    hogs.emplace_back([&stop] {
      volatile unsigned long x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  double busy = 0;
  for (int i = 0; i < 3; ++i) busy = std::max(busy, measure_copy_bandwidth_gbps());
  stop = true;
  for (std::thread& h : hogs) h.join();
  // Timed by the wall clock, a copy thread sharing its core with a hog reads about half (0.5);
  // timed by its CPU time, near the idle figure, but a VM's neighbours move it: 0.69 was seen in
  // a CI-like run (idle 12.3 GB/s, busy 8.5). The bound sits between the two.
  EXPECT_GT(busy, 0.62 * idle) << "idle " << idle << " GB/s, busy " << busy << " GB/s";
}

}  // namespace
}  // namespace kf
