// Honest: std::reduce (no execution policy: it may reorder, so it vectorises) per row.
#include <numeric>

void row_sums(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    y[r] = std::reduce(row, row + cols, 0.0f);
  }
}
