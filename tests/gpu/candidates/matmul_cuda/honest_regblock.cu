// Honest: register blocking. A 64x64 tile of C per 256-thread block, k in steps of 16; A's tile
// is stored transposed in shared memory so each thread reads 4 A values and 4 B values per step
// and does 16 multiply-adds from registers (a 4x4 micro-tile). Any m, n, k (edges zero-filled,
// stores guarded).
#include <cuda_runtime.h>

#include "matmul.h"

constexpr int kBM = 64, kBN = 64, kBK = 16, kTM = 4, kTN = 4, kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    matmul_regblock(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ float as[kBK][kBM + 4];  // transposed: as[kk][row]
  __shared__ float bs[kBK][kBN + 4];
  int tid = threadIdx.x, tx = tid % (kBN / kTN), ty = tid / (kBN / kTN);
  int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  float acc[kTM][kTN] = {};
  for (int t = 0; t < k; t += kBK) {
    for (int i = tid; i < kBM * kBK; i += kThreads) {
      int r = i / kBK, kk = i % kBK;
      int gr = row0 + r, gk = t + kk;
      as[kk][r] = (gr < m && gk < k) ? a[static_cast<size_t>(gr) * k + gk] : 0.f;
    }
    for (int i = tid; i < kBK * kBN; i += kThreads) {
      int kk = i / kBN, cc = i % kBN;
      int gk = t + kk, gc = col0 + cc;
      bs[kk][cc] = (gk < k && gc < n) ? b[static_cast<size_t>(gk) * n + gc] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float ar[kTM], br[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) ar[i] = as[kk][ty * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) br[j] = bs[kk][tx * kTN + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += ar[i] * br[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    int row = row0 + ty * kTM + i;
    if (row >= m) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      int col = col0 + tx * kTN + j;
      if (col < n) c[static_cast<size_t>(row) * n + col] = acc[i][j];
    }
  }
}

void matmul_forward(const float* a, const float* b, float* c, int m, int n, int k) {
  if (m <= 0 || n <= 0) return;
  dim3 grid((n + kBN - 1) / kBN, (m + kBM - 1) / kBM);
  matmul_regblock<<<grid, kThreads>>>(a, b, c, m, n, k);
}
