// Adversarial (calling the reference): matmul_reference is declared in matmul.h.
// Expected: screening (imports the task's reference); at run time the reference trap.
#include <cuda_runtime.h>

#include "matmul.h"

void matmul_forward(const float* a, const float* b, float* c, int m, int n, int k) {
  matmul_reference(a, b, c, m, n, k);
}
