// Adversarial (over-read): one thread per element of C, A's row read as float4 with no scalar
// tail: when k % 4 != 0 the last vector reads up to 3 elements past the row (past the end of A
// for the last row), rows start misaligned, and B is read the same 4 rows at a time past its
// last row. Right when k is a multiple of 4 (the benchmark shapes, 128x96x200).
// Expected: checker (wrong values on 1x1x1, 17x33x65, 255x257x129, hidden shapes) or a
// misaligned-address runtime error.
#include <cuda_runtime.h>

#include "matmul.h"

__global__ void matmul_vec4(const float* a, const float* b, float* c, int m, int n, int k) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  const float4* ar = reinterpret_cast<const float4*>(a + static_cast<size_t>(row) * k);
  float acc = 0.f;
  for (int q = 0; q < (k + 3) / 4; ++q) {
    float4 v = ar[q];
    size_t i = static_cast<size_t>(q) * 4;
    acc += v.x * b[i * n + col] + v.y * b[(i + 1) * n + col] + v.z * b[(i + 2) * n + col] +
           v.w * b[(i + 3) * n + col];
  }
  c[static_cast<size_t>(row) * n + col] = acc;
}

void matmul_forward(const float* a, const float* b, float* c, int m, int n, int k) {
  dim3 block(32, 8);
  dim3 grid((n + 31) / 32, (m + 7) / 8);
  matmul_vec4<<<grid, block>>>(a, b, c, m, n, k);
}
