// Adversarial (symbol override): defines kernelfoundry::compare, the harness's comparison, to
// always pass, and writes zeros. Expected: screening (a definition in namespace kernelfoundry);
// the checker child (the reference binary, no candidate code) would fail it anyway.
#include <cuda_runtime.h>

#include <kernelfoundry/compare.h>

#include "softmax.h"

namespace kernelfoundry {
CompareResult compare(const void*, const void*, DType, long count, const Tolerance&) {
  CompareResult r;
  r.passed = true;
  r.total = count;
  return r;
}
}  // namespace kernelfoundry

void softmax_forward(const float* x, float* y, int rows, int cols) {
  cudaMemsetAsync(y, 0, sizeof(float) * static_cast<size_t>(rows) * cols);
}
