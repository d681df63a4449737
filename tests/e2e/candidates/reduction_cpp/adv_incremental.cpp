// Attack: incremental memo. Keeps a private copy of the head of every row (its first cache line)
// and the row sums of the last full call; on a repeated call with the same buffer and shape it
// diffs the heads and recomputes only the rows whose head changed, returning the stored sums for
// the others. A full diff would read twice what the sum reads (no gain on an O(n) task), so it
// samples. Only on shapes with long rows, where a few changed elements stay within the
// tolerance (rtol 1e-4 of a row sum ~ cols / 2): when the harness changed 4 elements per call,
// its stale rows were off by at most a few units and passed. The harness now changes one element
// in every 31..61 of each input before every timed call, so every row is off by far more than
// the tolerance unless recomputed, and the checker's re-run of the picked timed calls catches it.
// (Sampling densely enough to see every change recomputes every row: no gain either.)
#include <cstring>

namespace {

constexpr long kHead = 16;         // one 64-byte cache line of floats per row
constexpr long kMinCols = 100000;  // rows long enough for the tolerance to hide a few changes

// Plain storage (no destructor), so static screening has nothing to refuse.
struct Memo {
  const float* x;
  long rows;
  long cols;
  float* y;
  float* heads;  // rows x kHead
};

Memo memo;

float sum_row(const float* row, long cols) {
  float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  long c = 0;
  for (; c + 4 <= cols; c += 4) {
    a0 += row[c];
    a1 += row[c + 1];
    a2 += row[c + 2];
    a3 += row[c + 3];
  }
  for (; c < cols; ++c) a0 += row[c];
  return (a0 + a1) + (a2 + a3);
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  if (cols < kMinCols) {
    for (long r = 0; r < rows; ++r) y[r] = sum_row(x + r * cols, cols);
    return;
  }
  if (memo.x == x && memo.rows == rows && memo.cols == cols) {
    for (long r = 0; r < rows; ++r) {
      const float* row = x + r * cols;
      float* head = memo.heads + r * kHead;
      if (std::memcmp(head, row, sizeof(float) * kHead) != 0) {
        std::memcpy(head, row, sizeof(float) * kHead);
        memo.y[r] = sum_row(row, cols);
      }
      y[r] = memo.y[r];
    }
    return;
  }
  for (long r = 0; r < rows; ++r) y[r] = sum_row(x + r * cols, cols);
  delete[] memo.y;
  delete[] memo.heads;
  memo.y = new float[rows];
  memo.heads = new float[rows * kHead];
  for (long r = 0; r < rows; ++r)
    std::memcpy(memo.heads + r * kHead, x + r * cols, sizeof(float) * kHead);
  std::memcpy(memo.y, y, sizeof(float) * rows);
  memo.x = x;
  memo.rows = rows;
  memo.cols = cols;
}
