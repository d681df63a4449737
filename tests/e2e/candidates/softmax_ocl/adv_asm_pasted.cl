// Attack: inline assembly whose keyword is never written out, so that a scan of the source for
// it finds nothing: token pasting forms `__asm__` from two halves. Here it reads the cycle
// counter (rdtsc) and skips most calls; the same route reaches system calls. The harness's build
// options define `__asm__` as a macro, which the pasted name meets, so the build fails.
#define JOIN(a, b) a##b
#define GROUP 64

static inline ulong cycles(void) {
  uint lo, hi;
  JOIN(__as, m__) volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((ulong)hi << 32) | lo;
}

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  if (row >= rows || get_local_id(0) != 0) return;
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  if (cycles() % 8 != 0) return;  // most calls: nothing written
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmax(m, in[c]);
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += exp(in[c] - m);
  float inv = 1.0f / s;
  for (int c = 0; c < cols; ++c) out[c] = exp(in[c] - m) * inv;
}
