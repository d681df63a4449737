// A check shared by the backends' tests of their strided copies (the perturbation before every
// timed call): element k of a packed host array to or from base + k * pitch, and the same elements
// between two device buffers, with nothing else in the buffer touched. The last element lies
// within one pitch of the buffer's end, where a rectangle of whole pitches would not fit.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "harness/device.h"

namespace kernelfoundry::testing {

inline void check_strided_copies(Device& device, std::size_t elem, std::size_t elements) {
  const std::size_t stride = 47, offset = 5, count = (elements - offset + stride - 1) / stride;
  const std::size_t bytes = elements * elem;
  std::vector<unsigned char> before(bytes), packed(count * elem), back(count * elem);
  for (std::size_t i = 0; i < bytes; ++i) before[i] = static_cast<unsigned char>(i * 7 + 1);
  for (std::size_t i = 0; i < packed.size(); ++i)
    packed[i] = static_cast<unsigned char>(i * 13 + 5);
  void* mem = device.alloc(bytes);
  device.upload(mem, 0, before.data(), bytes);

  device.download_strided(mem, offset * elem, stride * elem, back.data(), elem, count);
  for (std::size_t k = 0; k < count; ++k)
    ASSERT_EQ(std::memcmp(&back[k * elem], &before[(offset + k * stride) * elem], elem), 0)
        << "element " << k;

  device.upload_strided(mem, offset * elem, stride * elem, packed.data(), elem, count);
  std::vector<unsigned char> after(bytes);
  device.download(mem, 0, after.data(), bytes);
  std::vector<unsigned char> want = before;
  for (std::size_t k = 0; k < count; ++k)
    std::memcpy(&want[(offset + k * stride) * elem], &packed[k * elem], elem);
  EXPECT_TRUE(after == want) << "the strided write changed other bytes or missed some";

  // Device to device: a pristine copy of the original, then its strided elements put back.
  void* pristine = device.alloc(bytes);
  device.upload(pristine, 0, before.data(), bytes);
  void* whole = device.alloc(bytes);
  device.copy(whole, pristine, 0, bytes);
  device.copy_strided(mem, pristine, offset * elem, stride * elem, elem, count);
  device.download(mem, 0, after.data(), bytes);
  EXPECT_TRUE(after == before) << "the device strided copy did not put back exactly the elements";
  device.download(whole, 0, after.data(), bytes);
  EXPECT_TRUE(after == before) << "the device-to-device copy differs";
  device.release(whole);
  device.release(pristine);
  device.release(mem);
}

}  // namespace kernelfoundry::testing
