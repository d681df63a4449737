// Correct, with bytes that are not UTF-8 in a comment: café ÿþ.
// It prints once, without a newline, a debug line that is not UTF-8 either.
#include <cstdio>

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool printed = false;
  if (!printed) {
    printed = true;
    std::fputs("r\xe9sultat \xff\xfe", stdout);
    std::fflush(stdout);
  }
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
