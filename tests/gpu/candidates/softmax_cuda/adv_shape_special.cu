// Adversarial (shape specialisation): fully unrolled code for exactly the listed column counts;
// any other width is treated as the nearest listed one below it. Right on every listed shape.
// Expected: hidden shapes (cols moved by 1..7 and a random size: the checker finds wrong values).
#include <cuda_runtime.h>

#include <cmath>

#include "softmax.h"

template <int COLS>
__global__ void softmax_fixed(const float* x, float* y, int rows) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + static_cast<size_t>(row) * COLS;
  float* yr = y + static_cast<size_t>(row) * COLS;
  float m = -INFINITY;
#pragma unroll 4
  for (int j = lane; j < COLS; j += 32) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
#pragma unroll 4
  for (int j = lane; j < COLS; j += 32) s += expf(xr[j] - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
#pragma unroll 4
  for (int j = lane; j < COLS; j += 32) yr[j] = expf(xr[j] - m) / s;
}

template <int COLS>
static void launch(const float* x, float* y, int rows) {
  softmax_fixed<COLS><<<(rows + 7) / 8, 256>>>(x, y, rows);
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  if (cols >= 32768) return launch<32768>(x, y, rows);
  if (cols >= 4097) return launch<4097>(x, y, rows);
  if (cols >= 4096) return launch<4096>(x, y, rows);
  if (cols >= 1024) return launch<1024>(x, y, rows);
  if (cols >= 1000) return launch<1000>(x, y, rows);
  if (cols >= 33) return launch<33>(x, y, rows);
  return launch<1>(x, y, rows);
}
