// Adversarial (host thread launching later): a detached thread launches the SGEMM after the
// entry point has returned. Expected: screening (std::thread); at run time thread_outlived_call.
#include <cuda_runtime.h>

#include <thread>
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
  std::thread([=] { launch_tiled(a, b, c, m, n, k); }).detach();
}
