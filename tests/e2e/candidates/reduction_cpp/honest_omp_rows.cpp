// Honest: rows split across OpenMP threads (dynamic chunks), one SIMD reduction per row.
void row_sums(const float* x, float* y, long rows, long cols) {
#pragma omp parallel for schedule(dynamic, 4) if (rows * cols > 65536)
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (long c = 0; c < cols; ++c) sum += row[c];
    y[r] = sum;
  }
}
