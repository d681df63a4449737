// Templated (prompt.allow_templated): row sums with kLanes independent accumulators, the tail
// summed or (kTail false) wrongly dropped. lanes=1 is the naive dependency chain (slow), 16 lanes
// pipeline and vectorise (fast); lanes=16 without the tail is wrong whenever cols % 16 != 0.
#include <stdexcept>

template <int kLanes, bool kTail>
void forward_templated(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float acc[kLanes] = {};
    long c = 0;
    for (; c + kLanes <= cols; c += kLanes)
      for (int k = 0; k < kLanes; ++k) acc[k] += row[c + k];
    float sum = 0.0f;
    if (kTail)
      for (; c < cols; ++c) sum += row[c];
    for (int k = 0; k < kLanes; ++k) sum += acc[k];
    y[r] = sum;
  }
}

void row_sums(const float* x, float* y, long rows, long cols, int lanes, bool tail) {
  if (lanes == 1 && tail) return forward_templated<1, true>(x, y, rows, cols);
  if (lanes == 8 && tail) return forward_templated<8, true>(x, y, rows, cols);
  if (lanes == 16 && tail) return forward_templated<16, true>(x, y, rows, cols);
  if (lanes == 16 && !tail) return forward_templated<16, false>(x, y, rows, cols);
  throw std::invalid_argument("row_sums: no instantiation for these parameters");
}
