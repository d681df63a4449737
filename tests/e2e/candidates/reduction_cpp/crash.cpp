// Crashes: an indexing bug stores about 4 TB past y, into unmapped memory (SIGSEGV).
void row_sums(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r + (1L << 40)] = sum;
  }
}
