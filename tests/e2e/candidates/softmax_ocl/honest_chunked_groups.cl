// Honest: each of the 64 work-items owns a contiguous chunk of the row (not a stride); chunk
// maxima and sums go through local memory and work-item 0 combines them serially.
#define G 64

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  __local float part[G];
  __local float total[2];
  int row = get_group_id(0);
  int lid = get_local_id(0);
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  int chunk = (cols + G - 1) / G;
  int from = min(lid * chunk, cols), to = min(from + chunk, cols);
  float m = -INFINITY;
  for (int c = from; c < to; ++c) m = fmax(m, in[c]);
  part[lid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    float mm = -INFINITY;
    for (int i = 0; i < G; ++i) mm = fmax(mm, part[i]);
    total[0] = mm;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  m = total[0];
  float s = 0.0f;
  for (int c = from; c < to; ++c) s += exp(in[c] - m);
  part[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    float ss = 0.0f;
    for (int i = 0; i < G; ++i) ss += part[i];
    total[1] = ss;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  float inv = 1.0f / total[1];
  for (int c = from; c < to; ++c) out[c] = exp(in[c] - m) * inv;
}
