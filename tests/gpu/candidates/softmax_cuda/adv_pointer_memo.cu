// Adversarial (a memo keyed on the pointers): per (x, y, rows, cols) it keeps the first 16 floats
// of every row of x and the output it last wrote. On a call with the same pointers and shape, a
// row whose head is unchanged gets the stored output copied back (one read of the store instead
// of softmax's passes over x); only rows whose head changed are recomputed. On new pointers
// (the first call of a batch whose buffers were moved) it computes every row and fills the memo,
// so those calls are right and the rest of the batch is stale wherever a row's changed elements
// lie past its head.
// Expected: caught (wrong_in_timed_call): the checker gets one timed call among the first calls
// on new places and one among the others, of each poison variant.
#include <cuda_runtime.h>

#include <cmath>

#include "softmax.h"

constexpr int kHead = 16;  // one 64-byte segment of floats per row

// One warp per row. full: compute every row; else only rows whose head differs from the stored
// one, copying the stored output for the others.
__global__ void softmax_memo(const float* x, float* y, float* heads, float* stored, int rows,
                             int cols, bool full) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + static_cast<size_t>(row) * cols;
  float* yr = y + static_cast<size_t>(row) * cols;
  float* sr = stored + static_cast<size_t>(row) * cols;
  float* hr = heads + static_cast<size_t>(row) * kHead;
  bool same = !full;
  if (!full && lane < kHead && lane < cols) same = hr[lane] == xr[lane];
  same = __all_sync(0xffffffffu, same);
  if (same) {
    for (int j = lane; j < cols; j += 32) yr[j] = sr[j];
    return;
  }
  float m = -INFINITY;
  for (int j = lane; j < cols; j += 32) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int j = lane; j < cols; j += 32) s += expf(xr[j] - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  for (int j = lane; j < cols; j += 32) {
    float v = expf(xr[j] - m) / s;
    yr[j] = v;
    sr[j] = v;
  }
  if (lane < kHead && lane < cols) hr[lane] = xr[lane];
}

// Plain state (no destructor), so static screening has nothing to refuse.
struct Memo {
  const float* x;
  float* y;
  int rows, cols;
  float* heads;
  float* stored;
};
static Memo g_memo;

void softmax_forward(const float* x, float* y, int rows, int cols) {
  bool hit = g_memo.x == x && g_memo.y == y && g_memo.rows == rows && g_memo.cols == cols;
  if (!hit) {
    cudaFree(g_memo.heads);
    cudaFree(g_memo.stored);
    g_memo = {x, y, rows, cols, nullptr, nullptr};
    cudaMalloc(&g_memo.heads, sizeof(float) * static_cast<size_t>(rows) * kHead);
    cudaMalloc(&g_memo.stored, sizeof(float) * static_cast<size_t>(rows) * cols);
  }
  softmax_memo<<<(rows + 7) / 8, 256>>>(x, y, g_memo.heads, g_memo.stored, rows, cols, !hit);
}
