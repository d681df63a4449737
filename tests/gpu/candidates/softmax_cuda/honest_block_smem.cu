// Honest: one 256-thread block per row; the row is read from global memory once into dynamic
// shared memory (up to 48 KiB, i.e. 12288 columns; wider rows are re-read from global memory),
// max and sum reduced with warp shuffles and a 8-entry shared array. Correct for any shape.
#include <cuda_runtime.h>

#include <cmath>

#include "softmax.h"

constexpr int kThreads = 256;
constexpr int kMaxCachedCols = 12288;

__device__ __forceinline__ float block_reduce(float v, bool is_max, float* red) {
  for (int o = 16; o > 0; o /= 2) {
    float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // red is reused between the two reductions
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < kThreads / 32; ++w) v = is_max ? fmaxf(v, red[w]) : v + red[w];
  return v;
}

__global__ void softmax_block(const float* x, float* y, int cols, bool cached) {
  extern __shared__ float row_cache[];
  __shared__ float red[kThreads / 32];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < cols; j += kThreads) {
    float v = xr[j];
    if (cached) row_cache[j] = v;
    m = fmaxf(m, v);
  }
  m = block_reduce(m, true, red);
  float s = 0.f;
  for (int j = threadIdx.x; j < cols; j += kThreads) s += expf((cached ? row_cache[j] : xr[j]) - m);
  s = block_reduce(s, false, red);
  float inv = 1.f / s;
  for (int j = threadIdx.x; j < cols; j += kThreads)
    yr[j] = expf((cached ? row_cache[j] : xr[j]) - m) * inv;
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  bool cached = cols <= kMaxCachedCols;
  size_t smem = cached ? sizeof(float) * static_cast<size_t>(cols) : 0;
  softmax_block<<<rows, kThreads, smem>>>(x, y, cols, cached);
}
