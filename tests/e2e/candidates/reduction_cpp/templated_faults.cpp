// Templated, for the first pass's shared children: row sums with kLanes accumulators, where
// kFault 1 crashes the process (a write through a null pointer) and kFault 2 throws. Each takes
// down only its own combination; the others are run and judged.
#include <stdexcept>

template <int kLanes, int kFault>
void forward_templated(const float* x, float* y, long rows, long cols) {
  if (kFault == 1) {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
  }
  if (kFault == 2) throw std::runtime_error("this combination gives up");
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float acc[kLanes] = {};
    long c = 0;
    for (; c + kLanes <= cols; c += kLanes)
      for (int k = 0; k < kLanes; ++k) acc[k] += row[c + k];
    float sum = 0.0f;
    for (; c < cols; ++c) sum += row[c];
    for (int k = 0; k < kLanes; ++k) sum += acc[k];
    y[r] = sum;
  }
}

void row_sums(const float* x, float* y, long rows, long cols, int lanes, int fault) {
  if (lanes == 1 && fault == 0) return forward_templated<1, 0>(x, y, rows, cols);
  if (lanes == 2 && fault == 0) return forward_templated<2, 0>(x, y, rows, cols);
  if (lanes == 4 && fault == 1) return forward_templated<4, 1>(x, y, rows, cols);
  if (lanes == 8 && fault == 0) return forward_templated<8, 0>(x, y, rows, cols);
  if (lanes == 16 && fault == 2) return forward_templated<16, 2>(x, y, rows, cols);
  if (lanes == 32 && fault == 0) return forward_templated<32, 0>(x, y, rows, cols);
  throw std::invalid_argument("row_sums: no instantiation for these parameters");
}
