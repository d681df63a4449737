// Honest: one warp per row, one online pass for max and sum (the sum rescaled when the maximum
// grows), float4 loads and stores when the row start is 16-byte aligned (cols % 4 == 0), a
// scalar loop otherwise. Correct for any rows and cols.
#include <cuda_runtime.h>

#include <cmath>

#include "softmax.h"

__device__ __forceinline__ void online_add(float v, float& m, float& s) {
  if (v > m) {
    s = s * expf(m - v) + 1.f;
    m = v;
  } else {
    s += expf(v - m);
  }
}

__global__ void softmax_warp_vec4(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + static_cast<size_t>(row) * cols;
  float* yr = y + static_cast<size_t>(row) * cols;
  float m = -INFINITY, s = 0.f;
  bool vec = (cols % 4) == 0;
  if (vec) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    for (int j = lane; j < cols / 4; j += 32) {
      float4 v = x4[j];
      online_add(v.x, m, s);
      online_add(v.y, m, s);
      online_add(v.z, m, s);
      online_add(v.w, m, s);
    }
  } else {
    for (int j = lane; j < cols; j += 32) online_add(xr[j], m, s);
  }
  for (int off = 16; off > 0; off /= 2) {
    float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    float s2 = __shfl_xor_sync(0xffffffffu, s, off);
    float mn = fmaxf(m, m2);
    s = (m == -INFINITY ? 0.f : s * expf(m - mn)) + (m2 == -INFINITY ? 0.f : s2 * expf(m2 - mn));
    m = mn;
  }
  float inv = 1.f / s;
  if (vec) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    float4* y4 = reinterpret_cast<float4*>(yr);
    for (int j = lane; j < cols / 4; j += 32) {
      float4 v = x4[j];
      y4[j] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv,
                          expf(v.w - m) * inv);
    }
  } else {
    for (int j = lane; j < cols; j += 32) yr[j] = expf(xr[j] - m) * inv;
  }
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  const int warps = 8;
  softmax_warp_vec4<<<(rows + warps - 1) / warps, warps * 32>>>(x, y, rows, cols);
}
