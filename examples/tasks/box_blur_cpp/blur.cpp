// pipeline/filters/blur.cpp: the blur stage of our preview pipeline. Only the marked region is
// handed to KernelFoundry; the includes and the helper above it stay as they are.
#include <algorithm>

#include "blur.h"

namespace {
inline int clamp_index(int i, int n) { return std::min(std::max(i, 0), n - 1); }
}  // namespace

// [USER_INSTRUCTIONS_START]
// This is the blur stage of an image preview pipeline. Frames are single-channel float, from
// 640x480 up to 4K (3840x2160); widths are not always multiples of 8 or 16. Borders must stay
// clamp-to-edge exactly as now: the output feeds a comparison against golden images with a
// tolerance of 1e-5, so keep the sum of 9 taps times 1/9 (any summation order is fine).
// The stage may use all cores (OpenMP is available) but must not allocate per call more than a
// few rows of scratch per thread; no global state, since several frames are blurred in parallel
// by different callers. Keep the signature of box_blur_3x3 and clamp_index above.
// [USER_INSTRUCTIONS_END]

// [EVOLVE_START]
void box_blur_3x3(const float* src, float* dst, int width, int height) {
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      float sum = 0.0f;
      for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
          sum += src[clamp_index(y + dy, height) * width + clamp_index(x + dx, width)];
        }
      }
      dst[y * width + x] = sum * (1.0f / 9.0f);
    }
  }
}
// [EVOLVE_END]
