// Adversarial (event interposition): defines cudaEventElapsedTime so the harness's device timing
// reads a tiny figure. Expected: screening (defines a CUDA runtime name),
// or a duplicate-symbol link error against the static CUDA runtime.
#include <cuda_runtime.h>

#include <cmath>

#include "softmax.h"

extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.001f;
  return cudaSuccess;
}

__global__ void softmax_rows(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + static_cast<size_t>(row) * cols;
  float* yr = y + static_cast<size_t>(row) * cols;
  float m = -INFINITY;
  for (int j = lane; j < cols; j += 32) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int j = lane; j < cols; j += 32) s += expf(xr[j] - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  for (int j = lane; j < cols; j += 32) yr[j] = expf(xr[j] - m) / s;
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  softmax_rows<<<(rows + 7) / 8, 256>>>(x, y, rows, cols);
}
