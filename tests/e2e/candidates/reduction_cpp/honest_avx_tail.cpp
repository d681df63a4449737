// Honest: AVX intrinsics (8 floats, two accumulators) where the compiler targets AVX, SSE
// otherwise, and a scalar tail; never reads past the row.
#include <immintrin.h>

void row_sums(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    long c = 0;
    float sum = 0.0f;
#ifdef __AVX__
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (; c + 16 <= cols; c += 16) {
      a0 = _mm256_add_ps(a0, _mm256_loadu_ps(row + c));
      a1 = _mm256_add_ps(a1, _mm256_loadu_ps(row + c + 8));
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, _mm256_add_ps(a0, a1));
    for (float v : lanes) sum += v;
#else
    __m128 a0 = _mm_setzero_ps();
    for (; c + 4 <= cols; c += 4) a0 = _mm_add_ps(a0, _mm_loadu_ps(row + c));
    float lanes[4];
    _mm_storeu_ps(lanes, a0);
    for (float v : lanes) sum += v;
#endif
    for (; c < cols; ++c) sum += row[c];
    y[r] = sum;
  }
}
