// Templated, with two combinations over an H100/H200's limits: tile=64, rows_per_thread=4 needs
// 80 KiB of static shared memory (ptxas refuses it: skipped before running); tile=64,
// rows_per_thread=1 builds but launches 64 x 64 = 4096 threads per block (over 1024: fails its own
// run at launch). The other five combinations are the e2e test's templated.cu.
#include <stdexcept>

template <int kTile, int kRowsPerThread>
__global__ void matmul_tiled(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ float as[kTile * kRowsPerThread][kTile];
  __shared__ float bs[kTile][kTile];
  int row0 = blockIdx.y * kTile * kRowsPerThread + threadIdx.y;
  int col = blockIdx.x * kTile + threadIdx.x;
  float acc[kRowsPerThread] = {};
  for (int t = 0; t < k; t += kTile) {
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      int row = row0 + r * kTile, ak = t + threadIdx.x;
      as[threadIdx.y + r * kTile][threadIdx.x] =
          (row < m && ak < k) ? a[static_cast<size_t>(row) * k + ak] : 0.f;
    }
    int bk = t + threadIdx.y;
    bs[threadIdx.y][threadIdx.x] = (bk < k && col < n) ? b[static_cast<size_t>(bk) * n + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTile; ++i)
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r)
        acc[r] += as[threadIdx.y + r * kTile][i] * bs[i][threadIdx.x];
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    int row = row0 + r * kTile;
    if (row < m && col < n) c[static_cast<size_t>(row) * n + col] = acc[r];
  }
}

template <int kTile, int kRowsPerThread>
void forward_templated(const float* a, const float* b, float* c, int m, int n, int k) {
  dim3 block(kTile, kTile);
  dim3 grid((n + kTile - 1) / kTile, (m + kTile * kRowsPerThread - 1) / (kTile * kRowsPerThread));
  matmul_tiled<kTile, kRowsPerThread><<<grid, block>>>(a, b, c, m, n, k);
}

void matmul_forward(const float* a, const float* b, float* c, int m, int n, int k, int tile,
                    int rows_per_thread) {
  switch (tile) {
    case 16:
      if (rows_per_thread == 1) return forward_templated<16, 1>(a, b, c, m, n, k);
      if (rows_per_thread == 2) return forward_templated<16, 2>(a, b, c, m, n, k);
      if (rows_per_thread == 4) return forward_templated<16, 4>(a, b, c, m, n, k);
      break;
    case 32:
      if (rows_per_thread == 1) return forward_templated<32, 1>(a, b, c, m, n, k);
      if (rows_per_thread == 2) return forward_templated<32, 2>(a, b, c, m, n, k);
      break;
    case 64:
      if (rows_per_thread == 1) return forward_templated<64, 1>(a, b, c, m, n, k);
      if (rows_per_thread == 4) return forward_templated<64, 4>(a, b, c, m, n, k);
      break;
  }
  throw std::invalid_argument("matmul_forward: no instantiation for these parameters");
}
