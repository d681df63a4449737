// Test candidate for the re-measurement of a flagged result
// (FaultsHog.FlaggedResultIsRemeasuredSideBySide): the reference's row sums, done once in the
// first measurement (harness phase "all"), and in a process running phase "benchmark" (the
// evaluator's re-measurement) 8 times over with one scalar load at a time (about 0.3 GB/s of row
// data on the 2-core VM). With the host bandwidth set to 2 GB/s, the first measurement beats
// the roofline bound (twice that, 4 GB/s) and is flagged; the re-measurement does not.
#include <cstring>

namespace {

bool remeasuring = false;

__attribute__((constructor)) void read_phase(int argc, char** argv, char**) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--phase") == 0 && std::strcmp(argv[i + 1], "benchmark") == 0)
      remeasuring = true;
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  if (!remeasuring) {
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; ++r) {
      const float* row = x + r * cols;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (long c = 0; c < cols; ++c) sum += row[c];
      y[r] = sum;
    }
    return;
  }
  for (int k = 0; k < 8; ++k) {
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; ++r) {
      const volatile float* row = x + r * cols;  // one scalar load at a time, every repeat
      float sum = 0.0f;
      for (long c = 0; c < cols; ++c) sum += row[c];
      y[r] = sum;
    }
  }
}
