// Row sums on the host. Compiled with g++ -O3 -march=native -fopenmp; OpenMP pragmas are allowed.
#include "reduce.h"

// [USER_INSTRUCTIONS_START]
// Keep row_sums' signature and write every y[r]; never write x. Results must match the
// reference within rtol 1e-4 (atol 1e-3): accumulate in float with any order, or in double.
// Shapes range from a single element to 4096 x 8192; cols need not be a multiple of the
// vector width. The machine has a few cores; threads and SIMD are both fair game.
// [USER_INSTRUCTIONS_END]

// [EVOLVE_START]
// Naive version: one thread, one scalar accumulator per row (the dependency chain keeps the
// compiler from vectorising the float sum).
void row_sums(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
// [EVOLVE_END]
