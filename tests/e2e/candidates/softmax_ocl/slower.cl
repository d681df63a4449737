// Correct but deliberately slow: no reduction; each of the first 8 work-items of the group walks
// the whole row itself for the maximum and the sum (8 times the work of one pass), then writes
// every 8th element of the row.
#define WORKERS 8

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  int lid = get_local_id(0);
  if (row >= rows || lid >= WORKERS) return;
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;

  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmax(m, in[c]);
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += exp(in[c] - m);
  for (int c = lid; c < cols; c += WORKERS) out[c] = exp(in[c] - m) / s;
}
