// Templated, with one combination the "device" refuses at launch: lanes=2048 stands in for a CUDA
// launch over the device's limits (more threads per block than it allows), whose runtime error
// the harness reports in these words, so the CPU test exercises reporting it as a limit while the
// other combinations run.
#include <stdexcept>

template <int kLanes, bool kTail>
void forward_templated(const float* x, float* y, long rows, long cols) {
  if (kLanes > 1024)
    throw std::runtime_error(
        "CUDA error from run(): invalid configuration argument (cudaErrorInvalidConfiguration)");
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
  if (lanes == 2048 && tail) return forward_templated<2048, true>(x, y, rows, cols);
  if (lanes == 16 && tail) return forward_templated<16, true>(x, y, rows, cols);
  throw std::invalid_argument("row_sums: no instantiation for these parameters");
}
