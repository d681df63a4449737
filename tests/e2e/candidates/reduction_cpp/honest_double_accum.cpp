// Honest: accumulation in double (four accumulators), threads over rows.
void row_sums(const float* x, float* y, long rows, long cols) {
#pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    long c = 0;
    for (; c + 4 <= cols; c += 4) {
      a0 += row[c];
      a1 += row[c + 1];
      a2 += row[c + 2];
      a3 += row[c + 3];
    }
    for (; c < cols; ++c) a0 += row[c];
    y[r] = static_cast<float>((a0 + a1) + (a2 + a3));
  }
}
