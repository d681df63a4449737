// Host buffers end at a guard page: a read or write past the end crashes, and the crash handler
// names the buffer and how far past its end the access was.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness/case_state.h"
#include "harness/crash.h"
#include "harness/device.h"
#include "harness/test_util.h"
#include "kernelfoundry/harness.h"

namespace kf = kernelfoundry;

namespace {

// Reads through a volatile pointer so the compiler keeps the access.
int read_byte(const void* p, long offset) {
  return static_cast<const volatile unsigned char*>(p)[offset];
}

// A cold flush evicts each buffer's lines up to the last byte, never the guard page after it
// (touching it would crash), and writes dirty lines back: the data is all there afterwards.
TEST(HostGuardPage, ColdFlushKeepsTheDataAndStaysOffTheGuardPage) {
  std::unique_ptr<kf::Device> device = kf::make_host_device();
  std::vector<std::pair<void*, std::size_t>> buffers;
  for (std::size_t bytes :
       {std::size_t(1), std::size_t(63), std::size_t(65), std::size_t(4096), std::size_t(100003)}) {
    void* p = device->alloc_buffer("b" + std::to_string(bytes), bytes);
    std::memset(p, int(bytes % 251), bytes);
    buffers.emplace_back(p, bytes);
  }
  device->flush_caches();
  for (auto [p, bytes] : buffers) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < bytes; ++i) ASSERT_EQ(c[i], bytes % 251) << bytes << " @" << i;
    device->release(p);
  }
#if defined(__x86_64__)
  std::vector<unsigned char> plain(1000, 7);
  EXPECT_TRUE(kf::evict_host_lines(plain.data() + 3, 997));
  EXPECT_EQ(plain[999], 7);
#endif
  EXPECT_GE(kf::private_flush_bytes(), std::size_t(1) << 20);
}

TEST(HostGuardPage, BufferIsUsableUpToItsLastByte) {
  std::unique_ptr<kf::Device> device = kf::make_host_device();
  for (std::size_t bytes : {std::size_t(0), std::size_t(1), std::size_t(28), std::size_t(4096),
                            std::size_t(4097), std::size_t(1 << 20)}) {
    void* p = device->alloc_buffer("x", bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(device->page_guarded(p));
    std::memset(p, 0x5a, bytes);
    if (bytes > 0) {
      EXPECT_EQ(read_byte(p, long(bytes) - 1), 0x5a);
    }
    device->release(p);
  }
  // Plain allocations keep room for the caller's guard pattern.
  void* plain = device->alloc(64);
  EXPECT_FALSE(device->page_guarded(plain));
  device->release(plain);
}

TEST(HostGuardPage, DataIsAlignedToItsElementSize) {
  std::unique_ptr<kf::Device> device = kf::make_host_device();
  void* p = device->alloc_buffer("f", 7 * sizeof(float));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignof(float), 0u);
  void* q = device->alloc_buffer("d", 3 * sizeof(double));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % alignof(double), 0u);
  device->release(p);
  device->release(q);
}

TEST(HostGuardPageDeathTest, ReadOnePastTheEndNamesTheBuffer) {
  EXPECT_DEATH(
      {
        kf::install_crash_handlers();
        kf::set_crash_context("running the candidate on shape n=7");
        std::unique_ptr<kf::Device> device = kf::make_host_device();
        void* other = device->alloc_buffer("y", 100);
        void* x = device->alloc_buffer("x", 7 * sizeof(float));
        (void)other;
        read_byte(x, 7 * sizeof(float));
      },
      "SIGSEGV \\(segmentation fault\\) while running the candidate on shape n=7: read or wrote "
      "past the end of buffer 'x' \\(28 bytes\\): the access at byte offset \\+0 beyond its end "
      "hit a guard page");
}

TEST(HostGuardPageDeathTest, WriteFurtherPastTheEndGivesTheOffset) {
  EXPECT_DEATH(
      {
        kf::install_crash_handlers();
        std::unique_ptr<kf::Device> device = kf::make_host_device();
        float* y = static_cast<float*>(device->alloc_buffer("y", 1000 * sizeof(float)));
        static_cast<volatile float*>(y)[1002] = 1.0f;
      },
      "past the end of buffer 'y' \\(4000 bytes\\): the access at byte offset \\+8 beyond its "
      "end hit a guard page");
}

TEST(HostGuardPageDeathTest, OtherCrashesKeepThePlainMessage) {
  EXPECT_DEATH(
      {
        kf::install_crash_handlers();
        kf::set_crash_context("running the candidate");
        std::unique_ptr<kf::Device> device = kf::make_host_device();
        void* x = device->alloc_buffer("x", 16);
        device->release(x);                // its guard page is no longer registered
        volatile std::uintptr_t low = 16;  // an unmapped address the compiler cannot see
        read_byte(reinterpret_cast<const void*>(low), 0);
      },
      "SIGSEGV \\(segmentation fault\\) while running the candidate\n");
}

// y = x + 1, the candidate reading one element past the end of its input (a vector load over
// the tail would do the same).
struct ReadsPastInput : kf::Problem {
  bool* page_guarded = nullptr;
  void setup(kf::Case& c) override {
    kf::Buffer& x = c.input("x", kf::f32, c.dim("n"), kf::uniform(-1, 1));
    c.output("y", kf::f32, c.dim("n"), kf::tolerance(1e-6, 1e-6));
    if (page_guarded) *page_guarded = kf::BufferAccess::device(x).page_guarded(x.handle());
  }
  void run(kf::Case& c, kf::Impl impl) override {
    long n = c.dim("n");
    const volatile float* x = c.buffer("x").host<float>();
    float* y = c.buffer("y").host<float>();
    for (long i = 0; i < n; ++i) y[i] = x[i] + 1;
    if (impl == kf::Impl::Candidate) y[0] += 0 * x[n];
  }
};

kf::Suite one_shape_suite() {
  kf::Suite s;
  s.backend = kf::Backend::Host;
  s.correctness = {{{"n", 7}}};
  s.benchmarks = {kf::benchmark("add_one", {{{"n", 7}}})};
  return s;
}

TEST(HostGuardPageDeathTest, CandidateReadingPastAnInputCrashesWithTheBufferNamed) {
  {
    // Harness buffers come from alloc_buffer once case.cpp allocates through it.
    bool guarded = false;
    ReadsPastInput probe;
    probe.page_guarded = &guarded;
    kf::Suite s = one_shape_suite();
    kf::testing::run_main(probe, s, {"--phase", "correctness", "--seeds", "1", "--ref"});
    if (!guarded) GTEST_SKIP() << "harness buffers are not allocated through alloc_buffer yet";
  }
  EXPECT_DEATH(
      {
        ReadsPastInput p;
        kf::testing::run_main(p, one_shape_suite(), {"--phase", "correctness", "--seeds", "1"});
      },
      "SIGSEGV \\(segmentation fault\\) while running the candidate[^\n]*: read or wrote past "
      "the end of buffer 'x' \\(28 bytes\\): the access at byte offset \\+0 beyond its end hit a "
      "guard page");
}

}  // namespace
