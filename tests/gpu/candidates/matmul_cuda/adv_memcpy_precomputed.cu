// Adversarial (precomputed result): the first call on a shape multiplies and keeps C; later
// calls on that shape only queue a cudaMemcpyAsync of it on the default stream.
// Expected: checker (other seeds of a small shape, perturbed timed calls, the post-timing call).
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

struct Stored {
  int m = -1, n = -1, k = -1;
  float* data = nullptr;
};
static Stored g_stored[32];
static int g_count = 0;

void matmul_forward(const float* a, const float* b, float* c, int m, int n, int k) {
  size_t bytes = sizeof(float) * static_cast<size_t>(m) * n;
  for (int i = 0; i < g_count; ++i) {
    const Stored& s = g_stored[i];
    if (s.m == m && s.n == n && s.k == k) {
      cudaMemcpyAsync(c, s.data, bytes, cudaMemcpyDeviceToDevice, 0);
      return;
    }
  }
  launch_tiled(a, b, c, m, n, k);
  if (g_count < 32 && cudaMalloc(&g_stored[g_count].data, bytes) == cudaSuccess) {
    cudaMemcpyAsync(g_stored[g_count].data, c, bytes, cudaMemcpyDeviceToDevice, 0);
    g_stored[g_count].m = m;
    g_stored[g_count].n = n;
    g_stored[g_count].k = k;
    ++g_count;
  }
}
