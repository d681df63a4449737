// Adversarial (calling the reference): softmax_reference is declared in softmax.h, so the
// candidate simply calls it. Expected: screening (imports the task's reference); at run time the
// trap the candidate binary links in its place ("called a function of the task's reference").
#include <cuda_runtime.h>

#include "softmax.h"

void softmax_forward(const float* x, float* y, int rows, int cols) {
  softmax_reference(x, y, rows, cols);
}
