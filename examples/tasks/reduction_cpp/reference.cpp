#include "reduce.h"

// [REFERENCE_START]
// Rows split across OpenMP threads; each row summed with a SIMD reduction.
void row_sums_reference(const float* x, float* y, long rows, long cols) {
#pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (long c = 0; c < cols; ++c) sum += row[c];
    y[r] = sum;
  }
}
// [REFERENCE_END]
