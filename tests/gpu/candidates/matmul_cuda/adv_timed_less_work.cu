// Adversarial (less work on calls it guesses are timed): a third identical call in a row
// (same buffers and shape) must be the timing loop; from then on only the first half of C's rows
// is computed and the rest is zeroed. Expected: checker on the randomly picked timed call and
// the last one (wrong_in_timed_call).
#include <cuda_runtime.h>

#include "matmul.h"

constexpr int kTile = 16;

__global__ void matmul_tiled(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  int row = blockIdx.y * kTile + threadIdx.y;
  int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < k; t += kTile) {
    int ak = t + threadIdx.x, bk = t + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = (row < m && ak < k) ? a[static_cast<size_t>(row) * k + ak] : 0.f;
    bs[threadIdx.y][threadIdx.x] = (bk < k && col < n) ? b[static_cast<size_t>(bk) * n + col] : 0.f;
    __syncthreads();
    for (int i = 0; i < kTile; ++i) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[static_cast<size_t>(row) * n + col] = acc;
}

static void launch_tiled(const float* a, const float* b, float* c, int m, int n, int k,
                         cudaStream_t stream = 0) {
  dim3 block(kTile, kTile);
  dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  matmul_tiled<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
}

void matmul_forward(const float* a, const float* b, float* c, int m, int n, int k) {
  static const float* last_a = nullptr;
  static float* last_c = nullptr;
  static int last_m = -1, last_n = -1, last_k = -1, streak = 0;
  bool same = a == last_a && c == last_c && m == last_m && n == last_n && k == last_k;
  streak = same ? streak + 1 : 1;
  last_a = a;
  last_c = c;
  last_m = m;
  last_n = n;
  last_k = k;
  if (streak < 3 || m < 2) return launch_tiled(a, b, c, m, n, k);
  int half = m / 2;
  launch_tiled(a, b, c, half, n, k);
  cudaMemsetAsync(c + static_cast<size_t>(half) * n, 0,
                  sizeof(float) * static_cast<size_t>(m - half) * n);
}
