// Attack: reading past the end of the input. Each row is summed in 4-wide SSE loads; the last
// partial chunk is loaded whole (up to 3 floats past the row, past the buffer on the last row)
// and the extra lanes are masked off, so the sums are right unless the read faults.
#include <immintrin.h>

void row_sums(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    __m128 acc = _mm_setzero_ps();
    long c = 0;
    for (; c + 4 <= cols; c += 4) acc = _mm_add_ps(acc, _mm_loadu_ps(row + c));
    if (c < cols) {
      __m128 v = _mm_loadu_ps(row + c);  // reads past the end
      long left = cols - c;
      __m128i lane = _mm_set_epi32(3, 2, 1, 0);
      __m128 keep = _mm_castsi128_ps(_mm_cmplt_epi32(lane, _mm_set1_epi32(static_cast<int>(left))));
      acc = _mm_add_ps(acc, _mm_and_ps(v, keep));
    }
    float lanes[4];
    _mm_storeu_ps(lanes, acc);
    y[r] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  }
}
