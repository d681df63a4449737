// Attack: #include the package's reference kernel and run its body for the candidate.
#include "reference.cl"

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  softmax_reference(x, y, rows, cols);
}
