// Honest: online softmax. Each work-item keeps a running (max, sum) in one pass over its
// strided elements; the 64 pairs are merged in local memory; one more pass writes the outputs.
#define G 64

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  __local float lm[G];
  __local float ls[G];
  int row = get_group_id(0);
  int lid = get_local_id(0);
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  float m = -INFINITY, s = 0.0f;
  for (int c = lid; c < cols; c += G) {
    float v = in[c];
    if (v > m) {
      s = s * exp(m - v) + 1.0f;
      m = v;
    } else {
      s += exp(v - m);
    }
  }
  lm[lid] = m;
  ls[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = G / 2; step > 0; step >>= 1) {
    if (lid < step) {
      float m1 = lm[lid], s1 = ls[lid], m2 = lm[lid + step], s2 = ls[lid + step];
      float mm = fmax(m1, m2);
      float a = s1 > 0.0f ? s1 * exp(m1 - mm) : 0.0f;
      float b = s2 > 0.0f ? s2 * exp(m2 - mm) : 0.0f;
      lm[lid] = mm;
      ls[lid] = a + b;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float gm = lm[0];
  float inv = 1.0f / ls[0];
  for (int c = lid; c < cols; c += G) out[c] = exp(in[c] - gm) * inv;
}
