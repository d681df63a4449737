// The CUDA backend's strided copies (the perturbation before every timed call): element k of a
// packed host array to or from base + k * pitch, and the same elements between two device
// buffers, for every element size the dtypes have, and nothing else in the buffer touched. Runs on
// the GPU machine (KF_GPU_TESTS).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "harness/device.h"

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
  const std::size_t elem = GetParam(), elements = (std::size_t(1) << 22) + 13;
  const std::size_t stride = 47, offset = 5, count = (elements - offset + stride - 1) / stride;
  const std::size_t bytes = elements * elem;
  std::vector<unsigned char> before(bytes), packed(count * elem), back(count * elem);
  for (std::size_t i = 0; i < bytes; ++i) before[i] = static_cast<unsigned char>(i * 7 + 1);
  for (std::size_t i = 0; i < packed.size(); ++i)
    packed[i] = static_cast<unsigned char>(i * 13 + 5);
  void* mem = device->alloc(bytes);
  device->upload(mem, 0, before.data(), bytes);

  device->download_strided(mem, offset * elem, stride * elem, back.data(), elem, count);
  for (std::size_t k = 0; k < count; ++k)
    ASSERT_EQ(std::memcmp(&back[k * elem], &before[(offset + k * stride) * elem], elem), 0)
        << "element " << k;

  device->upload_strided(mem, offset * elem, stride * elem, packed.data(), elem, count);
  std::vector<unsigned char> after(bytes);
  device->download(mem, 0, after.data(), bytes);
  std::vector<unsigned char> want = before;
  for (std::size_t k = 0; k < count; ++k)
    std::memcpy(&want[(offset + k * stride) * elem], &packed[k * elem], elem);
  EXPECT_TRUE(after == want) << "the strided write changed other bytes or missed some";

  // Device to device: a pristine copy of the original, then its strided elements put back.
  void* pristine = device->alloc(bytes);
  device->upload(pristine, 0, before.data(), bytes);
  void* whole = device->alloc(bytes);
  device->copy(whole, pristine, 0, bytes);
  device->copy_strided(mem, pristine, offset * elem, stride * elem, elem, count);
  device->download(mem, 0, after.data(), bytes);
  EXPECT_TRUE(after == before) << "the device strided copy did not put back exactly the elements";
  device->download(whole, 0, after.data(), bytes);
  EXPECT_TRUE(after == before) << "the device-to-device copy differs";
  device->release(whole);
  device->release(pristine);
  device->release(mem);
}

INSTANTIATE_TEST_SUITE_P(ElementSizes, StridedCopy, ::testing::Values(1, 2, 4, 8));

}  // namespace
