// Right output, but it scribbles on its input: x is shifted by the row maximum in place, so
// x differs after the call.
__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  if (row >= rows || get_local_id(0) != 0) return;
  __global float* in = (__global float*)(x + (long)row * cols);  // casts away const
  __global float* out = y + (long)row * cols;

  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmax(m, in[c]);
  for (int c = 0; c < cols; ++c) in[c] -= m;  // x now holds x - max
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += exp(in[c]);
  for (int c = 0; c < cols; ++c) out[c] = exp(in[c]) / s;
}
