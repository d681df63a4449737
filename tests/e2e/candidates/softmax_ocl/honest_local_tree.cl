// Honest: the group's 64 work-items stride over the row; max and sum reduced as a tree in local
// memory; exp computed once per element and stored, then scaled.
#define G 64

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  __local float red[G];
  int row = get_group_id(0);
  int lid = get_local_id(0);
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  float m = -INFINITY;
  for (int c = lid; c < cols; c += G) m = fmax(m, in[c]);
  red[lid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = G / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] = fmax(red[lid], red[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  m = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float sum = 0.0f;
  for (int c = lid; c < cols; c += G) {
    float e = exp(in[c] - m);
    out[c] = e;
    sum += e;
  }
  red[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = G / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float inv = 1.0f / red[0];
  for (int c = lid; c < cols; c += G) out[c] *= inv;
}
