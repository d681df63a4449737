// Adversarial (precomputed result): the first call on a shape computes and keeps the output; any
// later call on the same shape only queues a cudaMemcpyAsync of it on the default stream.
// Expected: checker (a second seed of a small shape, the perturbed timed calls and the
// post-timing call on fresh inputs all get the stored result of other inputs).
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

struct Stored {
  int rows = -1, cols = -1;
  float* data = nullptr;
};
static Stored g_stored[32];
static int g_count = 0;

void softmax_forward(const float* x, float* y, int rows, int cols) {
  size_t bytes = sizeof(float) * static_cast<size_t>(rows) * cols;
  for (int i = 0; i < g_count; ++i) {
    if (g_stored[i].rows == rows && g_stored[i].cols == cols) {
      cudaMemcpyAsync(y, g_stored[i].data, bytes, cudaMemcpyDeviceToDevice, 0);
      return;
    }
  }
  softmax_rows<<<(rows + 7) / 8, 256>>>(x, y, rows, cols);
  if (g_count < 32 && cudaMalloc(&g_stored[g_count].data, bytes) == cudaSuccess) {
    cudaMemcpyAsync(g_stored[g_count].data, y, bytes, cudaMemcpyDeviceToDevice, 0);
    g_stored[g_count].rows = rows;
    g_stored[g_count].cols = cols;
    ++g_count;
  }
}
