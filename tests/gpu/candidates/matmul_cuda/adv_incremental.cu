// Adversarial, invented (incremental recompute): the timed calls' inputs differ from the
// previous call's in only a few elements (4 perturbed per input, the previous 4 restored), so it
// keeps device copies of A, B and C, diffs the new inputs against them (a read of A and B), and
// when few elements changed recomputes only the rows of C whose A row changed and the columns
// whose B column changed, then copies its C out. Every output is exactly right, on every call.
// Cost per timed call: ~2 reads of A and B plus a copy of C, not 2mnk flops.
// Expected: defeated. Timed calls now change every input at one element in 31..61 throughout
// (every row of A and column band of B), so "few elements changed" never holds and it always
// recomputes the whole product: correct, no gain (a delta update of C would still be bounded
// only by the roofline and max_plausible_speedup; docs/security.md, Known limits).
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

__global__ void diff_a(const float* a, float* a0, long count, int k, int* row_changed,
                       int* changes) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < count;
       i += long(gridDim.x) * blockDim.x) {
    float v = a[i];
    if (__float_as_uint(v) != __float_as_uint(a0[i])) {
      a0[i] = v;
      row_changed[i / k] = 1;
      atomicAdd(changes, 1);
    }
  }
}

__global__ void diff_b(const float* b, float* b0, long count, int n, int* col_changed,
                       int* changes) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < count;
       i += long(gridDim.x) * blockDim.x) {
    float v = b[i];
    if (__float_as_uint(v) != __float_as_uint(b0[i])) {
      b0[i] = v;
      col_changed[i % n] = 1;
      atomicAdd(changes, 1);
    }
  }
}

__global__ void patch(const float* a0, const float* b0, float* c0, int m, int n, int k,
                      const int* row_changed, const int* col_changed) {
  long count = static_cast<long>(m) * n;
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < count;
       i += long(gridDim.x) * blockDim.x) {
    int r = static_cast<int>(i / n), col = static_cast<int>(i % n);
    if (!row_changed[r] && !col_changed[col]) continue;
    float acc = 0.f;
    for (int j = 0; j < k; ++j)
      acc += a0[static_cast<size_t>(r) * k + j] * b0[static_cast<size_t>(j) * n + col];
    c0[i] = acc;
  }
}

static const float* g_a = nullptr;
static const float* g_b = nullptr;
static int g_m = -1, g_n = -1, g_k = -1;
static float *g_a0 = nullptr, *g_b0 = nullptr, *g_c0 = nullptr;
static int *g_rows = nullptr, *g_cols = nullptr, *g_changes = nullptr;

static void release() {
  cudaFree(g_a0);
  cudaFree(g_b0);
  cudaFree(g_c0);
  cudaFree(g_rows);
  cudaFree(g_cols);
  g_a0 = g_b0 = g_c0 = nullptr;
  g_rows = g_cols = nullptr;
}

void matmul_forward(const float* a, const float* b, float* c, int m, int n, int k) {
  size_t na = static_cast<size_t>(m) * k, nb = static_cast<size_t>(k) * n,
         nc = static_cast<size_t>(m) * n;
  bool same = a == g_a && b == g_b && m == g_m && n == g_n && k == g_k && g_c0 != nullptr;
  if (same && nc > 0 && na > 0) {
    cudaMemsetAsync(g_rows, 0, sizeof(int) * m);
    cudaMemsetAsync(g_cols, 0, sizeof(int) * n);
    cudaMemsetAsync(g_changes, 0, sizeof(int));
    diff_a<<<1024, 256>>>(a, g_a0, static_cast<long>(na), k, g_rows, g_changes);
    diff_b<<<1024, 256>>>(b, g_b0, static_cast<long>(nb), n, g_cols, g_changes);
    int changes = 0;
    cudaMemcpy(&changes, g_changes, sizeof(int), cudaMemcpyDeviceToHost);
    if (changes <= 64) {
      if (changes > 0) patch<<<1024, 256>>>(g_a0, g_b0, g_c0, m, n, k, g_rows, g_cols);
      cudaMemcpyAsync(c, g_c0, sizeof(float) * nc, cudaMemcpyDeviceToDevice);
      return;
    }
  }
  // A new problem (or too many changes): multiply in full and keep copies of A, B and C.
  launch_tiled(a, b, c, m, n, k);
  if (!same) {
    release();
    if (g_changes == nullptr) cudaMalloc(&g_changes, sizeof(int));
    if (cudaMalloc(&g_a0, sizeof(float) * (na + 1)) != cudaSuccess ||
        cudaMalloc(&g_b0, sizeof(float) * (nb + 1)) != cudaSuccess ||
        cudaMalloc(&g_c0, sizeof(float) * (nc + 1)) != cudaSuccess ||
        cudaMalloc(&g_rows, sizeof(int) * (m + 1)) != cudaSuccess ||
        cudaMalloc(&g_cols, sizeof(int) * (n + 1)) != cudaSuccess) {
      release();
      g_a = g_b = nullptr;
      return;
    }
  }
  cudaMemcpyAsync(g_a0, a, sizeof(float) * na, cudaMemcpyDeviceToDevice);
  cudaMemcpyAsync(g_b0, b, sizeof(float) * nb, cudaMemcpyDeviceToDevice);
  cudaMemcpyAsync(g_c0, c, sizeof(float) * nc, cudaMemcpyDeviceToDevice);
  g_a = a;
  g_b = b;
  g_m = m;
  g_n = n;
  g_k = k;
}
