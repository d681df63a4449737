// Honest: work-item 0 walks its row with the loops unrolled by four (independent max and sum
// chains), exp stored once, then scaled.
__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  if (row >= rows || get_local_id(0) != 0) return;
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  float m0 = -INFINITY, m1 = -INFINITY, m2 = -INFINITY, m3 = -INFINITY;
  int c = 0;
  for (; c + 4 <= cols; c += 4) {
    m0 = fmax(m0, in[c]);
    m1 = fmax(m1, in[c + 1]);
    m2 = fmax(m2, in[c + 2]);
    m3 = fmax(m3, in[c + 3]);
  }
  for (; c < cols; ++c) m0 = fmax(m0, in[c]);
  float m = fmax(fmax(m0, m1), fmax(m2, m3));
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  c = 0;
  for (; c + 4 <= cols; c += 4) {
    float e0 = exp(in[c] - m), e1 = exp(in[c + 1] - m), e2 = exp(in[c + 2] - m),
          e3 = exp(in[c + 3] - m);
    out[c] = e0;
    out[c + 1] = e1;
    out[c + 2] = e2;
    out[c + 3] = e3;
    s0 += e0;
    s1 += e1;
    s2 += e2;
    s3 += e3;
  }
  for (; c < cols; ++c) {
    float e = exp(in[c] - m);
    out[c] = e;
    s0 += e;
  }
  float inv = 1.0f / ((s0 + s1) + (s2 + s3));
  for (c = 0; c < cols; ++c) out[c] *= inv;
}
