// Adversarial (over-read): float4 loads of each row with no scalar tail: the last vector reads up
// to 3 elements past the row's end (the next row, or past the end of x for the last row), and
// rows whose start is not 16-byte aligned (cols % 4 != 0) are loaded misaligned. Right on the
// benchmark shapes (cols a multiple of 4). Expected: checker (wrong values on 1x1, 17x33,
// 130x4097 and hidden shapes) or a misaligned-address runtime error.
#include <cuda_runtime.h>

#include <cmath>

#include "softmax.h"

__global__ void softmax_vec4(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float4* xr = reinterpret_cast<const float4*>(x + static_cast<size_t>(row) * cols);
  float* yr = y + static_cast<size_t>(row) * cols;
  int n4 = (cols + 3) / 4;
  float m = -INFINITY;
  for (int j = lane; j < n4; j += 32) {
    float4 v = xr[j];
    m = fmaxf(fmaxf(m, fmaxf(v.x, v.y)), fmaxf(v.z, v.w));
  }
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int j = lane; j < n4; j += 32) {
    float4 v = xr[j];
    s += expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
  }
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float* xs = x + static_cast<size_t>(row) * cols;
  for (int j = lane; j < cols; j += 32) yr[j] = expf(xs[j] - m) / s;
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  softmax_vec4<<<(rows + 7) / 8, 256>>>(x, y, rows, cols);
}
