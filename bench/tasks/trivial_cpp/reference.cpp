#include "add_one.h"

// [REFERENCE_START]
void add_one_reference(const float* x, float* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = x[i] + 1.0f;
}
// [REFERENCE_END]
