// Adversarial (stale pointers): remembers the first call's x and y for each shape and launches
// every later call of that shape on those pointers, as a CUDA graph captured once per shape
// would. Calls that reuse the first call's buffers see a correct output; any call on buffers of
// its own (another correctness case, a moved batch, a checked timed call) leaves its y unwritten.
// Expected: caught (wrong output in a correctness case or in a checked timed call).
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

// Trivially destructible state (a static std::map would need an atexit destructor, which the
// screening refuses before this trick is ever tried).
struct First {
  int rows, cols;
  const float* x;
  float* y;
};
static First g_first[64];
static int g_count = 0;

void softmax_forward(const float* x, float* y, int rows, int cols) {
  int at = 0;
  while (at < g_count && (g_first[at].rows != rows || g_first[at].cols != cols)) ++at;
  if (at == g_count && g_count < 64) g_first[g_count++] = {rows, cols, x, y};
  const float* use_x = at < g_count ? g_first[at].x : x;
  float* use_y = at < g_count ? g_first[at].y : y;
  softmax_rows<<<(rows + 7) / 8, 256>>>(use_x, use_y, rows, cols);
}
