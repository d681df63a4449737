// Reference row-wise softmax: one work-group of 64 work-items per row (the same launch as the
// candidate: global rows * 64, local 64), with work-group reductions for the max and the sum.
// The candidate is timed against this kernel.

// [REFERENCE_START]
#define REF_GROUP 64

__kernel void softmax_reference(__global const float* x, __global float* y, int rows, int cols) {
  __local float scratch[REF_GROUP];
  int row = get_group_id(0);
  int lid = get_local_id(0);
  // No early return before the barriers: the global size is exactly rows * 64, and PoCL's
  // work-group compiler crashes on a return ahead of a barrier.
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;

  // Row maximum: a strided pass per work-item, then a tree reduction in local memory.
  float m = -INFINITY;
  for (int c = lid; c < cols; c += REF_GROUP) m = fmax(m, in[c]);
  scratch[lid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = REF_GROUP / 2; step > 0; step /= 2) {
    if (lid < step) scratch[lid] = fmax(scratch[lid], scratch[lid + step]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  m = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);

  // Sum of exp(x - max), reduced the same way.
  float s = 0.0f;
  for (int c = lid; c < cols; c += REF_GROUP) s += exp(in[c] - m);
  scratch[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = REF_GROUP / 2; step > 0; step /= 2) {
    if (lid < step) scratch[lid] += scratch[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float inv = 1.0f / scratch[0];

  for (int c = lid; c < cols; c += REF_GROUP) out[c] = exp(in[c] - m) * inv;
}
// [REFERENCE_END]
