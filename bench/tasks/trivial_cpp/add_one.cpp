// y = x + 1 on the host: a benchmark fixture, not a real optimisation target.
#include "add_one.h"

// [USER_INSTRUCTIONS_START]
// Keep add_one's signature; write every y[i] = x[i] + 1 and never write x.
// [USER_INSTRUCTIONS_END]

// [EVOLVE_START]
void add_one(const float* x, float* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = x[i] + 1.0f;
}
// [EVOLVE_END]
