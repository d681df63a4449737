// Adversarial, invented (device clock): host clocks and CUDA events are refused by screening,
// but device code can read %globaltimer. A 1-thread kernel stamps the time at the start of each
// call; the host reads it back (cudaMemcpyFromSymbol, allowed) and, when calls follow each other
// within 2 ms (the timing loop; correctness calls are separated by the harness's downloads and
// comparisons), computes only the first half of the rows and fills the rest with 1/cols.
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

__device__ unsigned long long g_now_ns;

__global__ void stamp() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  g_now_ns = t;
}

__global__ void fill_uniform(float* y, long n, float v) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n;
       i += long(gridDim.x) * blockDim.x)
    y[i] = v;
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  static unsigned long long previous = 0;
  stamp<<<1, 1>>>();
  unsigned long long now = 0;
  cudaMemcpyFromSymbol(&now, g_now_ns, sizeof(now));
  bool timed = previous != 0 && now - previous < 2000000ull;
  previous = now;
  if (!timed || rows < 2) {
    softmax_rows<<<(rows + 7) / 8, 256>>>(x, y, rows, cols);
    return;
  }
  int half = rows / 2;
  softmax_rows<<<(half + 7) / 8, 256>>>(x, y, half, cols);
  fill_uniform<<<256, 256>>>(y + static_cast<size_t>(half) * cols,
                             static_cast<long>(rows - half) * cols, 1.f / cols);
}
