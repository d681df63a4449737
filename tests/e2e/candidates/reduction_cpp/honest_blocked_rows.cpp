// Honest: four rows at a time (four independent dependency chains), unrolled by two columns;
// leftover rows one by one.
void row_sums(const float* x, float* y, long rows, long cols) {
  long r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* p0 = x + r * cols;
    const float* p1 = p0 + cols;
    const float* p2 = p1 + cols;
    const float* p3 = p2 + cols;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    long c = 0;
    for (; c + 2 <= cols; c += 2) {
      s0 += p0[c];
      t0 += p0[c + 1];
      s1 += p1[c];
      t1 += p1[c + 1];
      s2 += p2[c];
      t2 += p2[c + 1];
      s3 += p3[c];
      t3 += p3[c + 1];
    }
    if (c < cols) {
      s0 += p0[c];
      s1 += p1[c];
      s2 += p2[c];
      s3 += p3[c];
    }
    y[r] = s0 + t0;
    y[r + 1] = s1 + t1;
    y[r + 2] = s2 + t2;
    y[r + 3] = s3 + t3;
  }
  for (; r < rows; ++r) {
    float s = 0.0f;
    for (long c = 0; c < cols; ++c) s += x[r * cols + c];
    y[r] = s;
  }
}
