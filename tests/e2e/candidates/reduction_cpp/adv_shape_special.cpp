// Attack: shape specialisation. 8-wide unrolled sums whose tail handles only the remainders the
// listed shapes have (cols % 8 of 0 or 1); any other width silently drops its last columns.
void row_sums(const float* x, float* y, long rows, long cols) {
#pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    long body = cols - cols % 8;
    for (long c = 0; c < body; c += 8)
      for (int k = 0; k < 8; ++k) a[k] += row[c + k];
    float sum = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    if (cols % 8 == 1) sum += row[body];  // every listed shape: 1, 1001, 33, 65537
    y[r] = sum;
  }
}
