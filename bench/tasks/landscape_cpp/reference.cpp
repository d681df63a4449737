#include "scale.h"

// [REFERENCE_START]
void scale_shift_reference(const float* x, float* y, long n) {
  burn(landscape_cost(false, 0, 1, false, false));
  for (long i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
}
// [REFERENCE_END]
