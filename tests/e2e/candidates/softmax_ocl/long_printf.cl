// Correct, but work-item 0 of each launch printf()s a 60 KB line with no newline (a debug print
// left in): PoCL forwards it to the test child's stdout.
#define GROUP 64

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  __local float part[GROUP];
  int row = get_group_id(0);
  int lid = get_local_id(0);
  if (get_global_id(0) == 0) {
    for (int i = 0; i < 6000; ++i) printf("partial%04d ", i);
  }
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;

  float m = -INFINITY;
  for (int c = lid; c < cols; c += GROUP) m = fmax(m, in[c]);
  part[lid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = GROUP / 2; step > 0; step >>= 1) {
    if (lid < step) part[lid] = fmax(part[lid], part[lid + step]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  m = part[0];
  barrier(CLK_LOCAL_MEM_FENCE);

  float s = 0.0f;
  for (int c = lid; c < cols; c += GROUP) s += exp(in[c] - m);
  part[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = GROUP / 2; step > 0; step >>= 1) {
    if (lid < step) part[lid] += part[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float inv = 1.0f / part[0];
  for (int c = lid; c < cols; c += GROUP) out[c] = exp(in[c] - m) * inv;
}
