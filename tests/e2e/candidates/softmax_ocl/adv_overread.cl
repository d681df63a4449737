// Attack: reading past the end of the input. Rows are read in whole 16-wide vectors, the last
// one running past the row (past the buffer on the last row); the extra lanes are ignored.
__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  if (row >= rows || get_local_id(0) != 0) return;
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; c += 16) {
    float v[16];
    vstore16(vload16(0, in + c), 0, v);  // reads up to 15 floats past the end
    for (int k = 0; k < 16 && c + k < cols; ++k) m = fmax(m, v[k]);
  }
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += exp(in[c] - m);
  float inv = 1.0f / s;
  for (int c = 0; c < cols; ++c) out[c] = exp(in[c] - m) * inv;
}
