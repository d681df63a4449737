// Does not compile: 'maximum' is never declared.
__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  if (row >= rows || get_local_id(0) != 0) return;
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmax(m, x[(long)row * cols + c]);
  y[(long)row * cols] = maximum;
}
