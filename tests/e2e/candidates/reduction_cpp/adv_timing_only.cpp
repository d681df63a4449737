// Invented attack on timing: counts calls per shape; the first two (correctness) do all rows,
// later ones (timed, it guesses) only every eighth row, leaving the others from the last call.
namespace {

void sum_rows(const float* x, float* y, long rows, long cols, long stride) {
  for (long r = 0; r < rows; r += stride) {
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
  sum_rows(x, y, rows, cols, ++calls <= 2 ? 1 : 8);
}
