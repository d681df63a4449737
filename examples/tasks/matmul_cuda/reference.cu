// The reference SGEMM: one thread per element of C, straight from the definition.
#include <cuda_runtime.h>

#include "matmul.h"

// [REFERENCE_START]
__global__ void matmul_reference_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc += a[static_cast<size_t>(row) * k + i] * b[static_cast<size_t>(i) * n + col];
  c[static_cast<size_t>(row) * n + col] = acc;
}

void matmul_reference(const float* a, const float* b, float* c, int m, int n, int k) {
  dim3 block(32, 8);
  dim3 grid((n + block.x - 1) / block.x, (m + block.y - 1) / block.y);
  matmul_reference_kernel<<<grid, block>>>(a, b, c, m, n, k);
}
// [REFERENCE_END]
