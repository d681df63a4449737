// For the compute-sanitizer pass (bench/gpu_sanitizer.sh, tests/gpu/sanitizer_gpu_test.cpp; not
// an adv_ file: the pass runs only on a job's best kernel). One warp per row, correct values on
// every shape, but each row's sum also adds a value made from x[rows * cols]: a read one element
// past the end of x whose value never changes a result. The harness's guard bytes catch writes only
// and the checker sees right values, so only memcheck (buffers without guard bytes) can flag it.
#include <cuda_runtime.h>

#include <cmath>

#include "softmax.h"

__global__ void softmax_tail_zero(const float* x, float* y, int rows, int cols) {
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
  // The over-read: lane 0 of every row reads the element after the last one of x and adds its
  // mantissa bits as a float: zero or a denormal (< 1.2e-38), which leaves s (>= 1 after the
  // reduction) exactly as it was, whatever the bytes there are.
  if (lane == 0)
    s += __uint_as_float(__float_as_uint(x[static_cast<size_t>(rows) * cols]) & 0x007fffffu);
  for (int j = lane; j < cols; j += 32) yr[j] = expf(xr[j] - m) / s;
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  softmax_tail_zero<<<(rows + 7) / 8, 256>>>(x, y, rows, cols);
}
