// The CUDA backend's strided copies (the perturbation before every timed call), for every element
// size the dtypes have (harness/strided_copy_check.h). Runs on the GPU machine (KF_GPU_TESTS).
#include <gtest/gtest.h>

#include "harness/device.h"
#include "harness/strided_copy_check.h"

namespace kf = kernelfoundry;

namespace {

class StridedCopy : public ::testing::TestWithParam<std::size_t> {};

TEST_P(StridedCopy, SpreadsAndCollectsExactlyTheStridedElements) {
  std::unique_ptr<kf::Device> device;
  try {
    device = kf::make_cuda_device();
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no CUDA device: " << e.what();
  }
  kf::testing::check_strided_copies(*device, GetParam(), (std::size_t(1) << 22) + 13);
}

INSTANTIATE_TEST_SUITE_P(ElementSizes, StridedCopy, ::testing::Values(1, 2, 4, 8));

}  // namespace
