// Writes nothing: y keeps whatever the harness put there (its poison pattern).
__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  (void)x;
  (void)y;
  (void)rows;
  (void)cols;
}
