// The reduction_cpp reference's own code as a candidate (bench/self_speedup.py): measured against
// the reference it must read 1.00x, whatever else the machine is doing.
void row_sums(const float* x, float* y, long rows, long cols) {
#pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (long c = 0; c < cols; ++c) sum += row[c];
    y[r] = sum;
  }
}
