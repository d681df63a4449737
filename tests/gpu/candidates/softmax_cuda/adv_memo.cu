// Adversarial (memo): a sampled hash of the input (64 strided elements and the shape); when it
// equals the last call's, the stored output is copied back instead of computing. Every call of a
// correctness case sees the same input, so the second call is served from the memo.
// Expected: defeated, or caught. Timed calls change one element in 31..61 of the input, so the
// sample almost always sees a change and it computes honestly (no gain); when a hit serves a
// stale output in the timed call the checker picks, wrong_in_timed_call.
#include <cuda_runtime.h>

#include <cmath>

#include "softmax.h"

__global__ void softmax_rows(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + static_cast<size_t>(row) * cols;
  float* yr = y + static_cast<size_t>(row) * cols;
  float m = -INFINITY;
  for (int j = lane; j < cols; j += 32) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int j = lane; j < cols; j += 32) s += expf(xr[j] - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  for (int j = lane; j < cols; j += 32) yr[j] = expf(xr[j] - m) / s;
}

__global__ void sample_hash(const float* x, long n, unsigned long long* out) {
  unsigned long long h = 1469598103934665603ull;
  for (int i = 0; i < 64; ++i) {
    long at = n <= 64 ? (i < n ? i : n - 1) : (n - 1) * i / 63;
    h = (h ^ __float_as_uint(x[at])) * 1099511628211ull;
  }
  *out = h;
}

static float* g_store = nullptr;
static size_t g_store_bytes = 0;
static unsigned long long* g_hash = nullptr;
static unsigned long long g_last = 0;
static const float* g_last_x = nullptr;
static long g_last_n = -1;

void softmax_forward(const float* x, float* y, int rows, int cols) {
  long n = static_cast<long>(rows) * cols;
  size_t bytes = sizeof(float) * static_cast<size_t>(n);
  if (g_hash == nullptr) cudaMalloc(&g_hash, sizeof(unsigned long long));
  sample_hash<<<1, 1>>>(x, n, g_hash);
  unsigned long long h = 0;
  cudaMemcpy(&h, g_hash, sizeof(h), cudaMemcpyDeviceToHost);
  if (h == g_last && x == g_last_x && n == g_last_n && g_store != nullptr) {
    cudaMemcpyAsync(y, g_store, bytes, cudaMemcpyDeviceToDevice);
    return;
  }
  softmax_rows<<<(rows + 7) / 8, 256>>>(x, y, rows, cols);
  if (bytes > g_store_bytes) {
    cudaFree(g_store);
    cudaMalloc(&g_store, bytes);
    g_store_bytes = bytes;
  }
  cudaMemcpyAsync(g_store, y, bytes, cudaMemcpyDeviceToDevice);
  g_last = h;
  g_last_x = x;
  g_last_n = n;
}
