// Honest: one thread, eight independent accumulators per row so the adds pipeline and vectorise.
void row_sums(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    long c = 0;
    for (; c + 8 <= cols; c += 8)
      for (int k = 0; k < 8; ++k) a[k] += row[c + k];
    float tail = 0.0f;
    for (; c < cols; ++c) tail += row[c];
    y[r] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + tail;
  }
}
