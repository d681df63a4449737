// Adversarial (private stream): the kernel runs on a non-blocking stream of its own, so events
// recorded on the default stream would not wait for it. Expected: screening (cudaStreamCreate*).
#include <cuda_runtime.h>

#include <cmath>

#include "softmax.h"

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
  static cudaStream_t side = nullptr;
  if (side == nullptr) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  softmax_rows<<<(rows + 7) / 8, 256, 0, side>>>(x, y, rows, cols);
}
