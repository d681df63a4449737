// The shipped version of the blur, copied verbatim: what every candidate is checked and timed
// against.
#include <algorithm>

#include "blur.h"

// [REFERENCE_START]
void box_blur_3x3_shipped(const float* src, float* dst, int width, int height) {
  auto at = [&](int x, int y) {
    x = std::min(std::max(x, 0), width - 1);
    y = std::min(std::max(y, 0), height - 1);
    return src[y * width + x];
  };
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      float sum = 0.0f;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) sum += at(x + dx, y + dy);
      dst[y * width + x] = sum * (1.0f / 9.0f);
    }
  }
}
// [REFERENCE_END]
