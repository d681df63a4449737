// Invented attack on input/output checks: overrides memcmp and bcmp (a comparison that says
// "equal" always) and folds each row in place inside x, the input it must not write.
#include <cstddef>

extern "C" int memcmp(const void*, const void*, std::size_t) {
  return 0;
}
extern "C" int bcmp(const void*, const void*, std::size_t) {
  return 0;
}

void row_sums(const float* x, float* y, long rows, long cols) {
  float* scratch = const_cast<float*>(x);
  for (long r = 0; r < rows; ++r) {
    float* row = scratch + r * cols;
    long n = cols;
    while (n > 1) {  // pairwise fold in place: row[i] += row[i + half]
      long half = n / 2;
      for (long i = 0; i < half; ++i) row[i] += row[n - half + i];
      n -= half;
    }
    y[r] = cols > 0 ? row[0] : 0.0f;
  }
}
