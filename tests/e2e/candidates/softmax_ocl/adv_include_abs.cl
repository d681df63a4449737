// Attack: absolute #include of the reference kernel from the package's original directory,
// outside the candidate's copy, and run its body.
#include "@SOURCE_DIR@/examples/tasks/softmax_ocl/reference.cl"

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  softmax_reference(x, y, rows, cols);
}
