// Adversarial (memo): a sampled hash of A and B (64 strided elements each, and the shape);
// when it equals the last call's, the stored C is copied back instead of multiplying.
// Expected: defeated, or caught. Timed calls change one element in 31..61 of every input, so the
// sample almost always sees a change and it multiplies honestly (no gain); when a hit serves a
// stale C in the timed call the checker picks, wrong_in_timed_call.
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

__global__ void sample_hash(const float* a, long na, const float* b, long nb,
                            unsigned long long* out) {
  unsigned long long h = 1469598103934665603ull;
  for (int i = 0; i < 64; ++i) {
    long ia = na <= 64 ? (i < na ? i : na - 1) : (na - 1) * i / 63;
    long ib = nb <= 64 ? (i < nb ? i : nb - 1) : (nb - 1) * i / 63;
    h = (h ^ __float_as_uint(a[ia])) * 1099511628211ull;
    h = (h ^ __float_as_uint(b[ib])) * 1099511628211ull;
  }
  *out = h;
}

static float* g_store = nullptr;
static size_t g_store_bytes = 0;
static unsigned long long* g_hash = nullptr;
static unsigned long long g_last = 0;
static int g_m = -1, g_n = -1, g_k = -1;

void matmul_forward(const float* a, const float* b, float* c, int m, int n, int k) {
  size_t bytes = sizeof(float) * static_cast<size_t>(m) * n;
  if (g_hash == nullptr) cudaMalloc(&g_hash, sizeof(unsigned long long));
  sample_hash<<<1, 1>>>(a, static_cast<long>(m) * k, b, static_cast<long>(k) * n, g_hash);
  unsigned long long h = 0;
  cudaMemcpy(&h, g_hash, sizeof(h), cudaMemcpyDeviceToHost);
  if (h == g_last && m == g_m && n == g_n && k == g_k && g_store != nullptr) {
    cudaMemcpyAsync(c, g_store, bytes, cudaMemcpyDeviceToDevice);
    return;
  }
  launch_tiled(a, b, c, m, n, k);
  if (bytes > g_store_bytes) {
    cudaFree(g_store);
    cudaMalloc(&g_store, bytes);
    g_store_bytes = bytes;
  }
  cudaMemcpyAsync(g_store, c, bytes, cudaMemcpyDeviceToDevice);
  g_last = h;
  g_m = m;
  g_n = n;
  g_k = k;
}
