// Attack: #include of the scratch .env (relative and absolute) to leak it through the OpenCL
// build log.
#if __has_include("../../../../../.env")
#include "../../../../../.env"
#endif
#include "@SCRATCH@/.env"

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  if (row >= rows || get_local_id(0) != 0) return;
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmax(m, in[c]);
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += exp(in[c] - m);
  for (int c = 0; c < cols; ++c) out[c] = exp(in[c] - m) / sum;
}
