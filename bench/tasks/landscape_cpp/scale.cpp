// The search-quality benchmark's kernel: y = 2x + 1, whose run time is set by its knobs through
// the hidden landscape of landscape.h (burn). Compiled with g++ -O3 -march=native -fopenmp.
#include "scale.h"

// [USER_INSTRUCTIONS_START]
// Keep scale_shift's signature; write every y[i] = 2 x[i] + 1 and never write x. The kernel's
// knobs (tiling and TILE, the unroll factor, omp simd, __restrict) set its cost through
// burn(landscape_cost(...)): keep that call in step with the code.
// [USER_INSTRUCTIONS_END]

// [EVOLVE_START]
void scale_shift(const float* x, float* y, long n) {
  burn(landscape_cost(false, 0, 1, false, false));
  for (long i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
}
// [EVOLVE_END]
