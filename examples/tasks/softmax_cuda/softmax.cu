// Row-wise softmax: the kernel KernelFoundry evolves.
// Contract: keep `void softmax_forward(const float* x, float* y, int rows, int cols)` (declared in
// softmax.h); y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)); any launch configuration.
#include <cuda_runtime.h>

#include <cmath>

#include "softmax.h"

// [EVOLVE_START]
// Naive: one thread per row, three passes over the row in global memory.
__global__ void softmax_naive(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* xr = x + static_cast<size_t>(row) * cols;
  float* yr = y + static_cast<size_t>(row) * cols;
  float m = -INFINITY;
  for (int j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);
  float s = 0.f;
  for (int j = 0; j < cols; ++j) s += expf(xr[j] - m);
  for (int j = 0; j < cols; ++j) yr[j] = expf(xr[j] - m) / s;
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  const int threads = 128;
  softmax_naive<<<(rows + threads - 1) / threads, threads>>>(x, y, rows, cols);
}
// [EVOLVE_END]
