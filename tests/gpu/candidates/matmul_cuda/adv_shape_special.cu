// Adversarial (shape specialisation): the inner dimension is a compile-time constant, one
// instantiation per listed k (1, 65, 129, 200, 1024, 2048); any other k is treated as the
// nearest listed one below it. Right on every listed shape. Expected: hidden shapes (checker).
#include <cuda_runtime.h>

#include "matmul.h"

template <int K>
__global__ void matmul_fixed_k(const float* a, const float* b, float* c, int m, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0.f;
#pragma unroll 8
  for (int i = 0; i < K; ++i)
    acc += a[static_cast<size_t>(row) * K + i] * b[static_cast<size_t>(i) * n + col];
  c[static_cast<size_t>(row) * n + col] = acc;
}

template <int K>
static void launch(const float* a, const float* b, float* c, int m, int n) {
  dim3 block(32, 8);
  dim3 grid((n + 31) / 32, (m + 7) / 8);
  matmul_fixed_k<K><<<grid, block>>>(a, b, c, m, n);
}

void matmul_forward(const float* a, const float* b, float* c, int m, int n, int k) {
  if (k >= 2048) return launch<2048>(a, b, c, m, n);
  if (k >= 1024) return launch<1024>(a, b, c, m, n);
  if (k >= 200) return launch<200>(a, b, c, m, n);
  if (k >= 129) return launch<129>(a, b, c, m, n);
  if (k >= 65) return launch<65>(a, b, c, m, n);
  return launch<1>(a, b, c, m, n);
}
