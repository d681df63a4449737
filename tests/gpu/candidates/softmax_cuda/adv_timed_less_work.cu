// Adversarial (less work on calls it guesses are timed): a correctness case calls twice with the
// same buffers; a third identical call in a row must be the timing loop, so from then on only
// the first half of the rows is computed and the rest gets a plausible uniform 1/cols.
// Expected: checker on the randomly picked timed call and the last one (wrong_in_timed_call).
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

__global__ void fill_uniform(float* y, long n, float v) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n;
       i += long(gridDim.x) * blockDim.x)
    y[i] = v;
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  static const float* last_x = nullptr;
  static float* last_y = nullptr;
  static int last_rows = -1, last_cols = -1, streak = 0;
  bool same = x == last_x && y == last_y && rows == last_rows && cols == last_cols;
  streak = same ? streak + 1 : 1;
  last_x = x;
  last_y = y;
  last_rows = rows;
  last_cols = cols;
  if (streak < 3 || rows < 2) {
    softmax_rows<<<(rows + 7) / 8, 256>>>(x, y, rows, cols);
    return;
  }
  int half = rows / 2;
  softmax_rows<<<(half + 7) / 8, 256>>>(x, y, half, cols);
  long rest = static_cast<long>(rows - half) * cols;
  fill_uniform<<<256, 256>>>(y + static_cast<size_t>(half) * cols, rest, 1.f / cols);
}
