// Adversarial (clock interposition): defines clock_gettime, through which the harness's host
// timing (steady_clock) goes, so every host interval looks tiny. Expected: screening (defines a C
// library name, class "clocks and timers").
#include <cuda_runtime.h>
#include <time.h>

#include <cmath>

#include "softmax.h"

extern "C" int clock_gettime(clockid_t, struct timespec* tp) noexcept {
  static long fake_ns = 0;
  fake_ns += 1000;
  tp->tv_sec = fake_ns / 1000000000L;
  tp->tv_nsec = fake_ns % 1000000000L;
  return 0;
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
