// Attack: work after return. The first two calls of a shape (the correctness calls) are done in
// place; later calls (timed) hand the work to a detached std::thread and return at once.
#include <thread>

namespace {

void sum_rows(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  static long last_rows = -1, last_cols = -1, calls = 0;
  if (rows != last_rows || cols != last_cols) {
    last_rows = rows;
    last_cols = cols;
    calls = 0;
  }
  if (++calls <= 2) {
    sum_rows(x, y, rows, cols);
    return;
  }
  std::thread(sum_rows, x, y, rows, cols).detach();
}
