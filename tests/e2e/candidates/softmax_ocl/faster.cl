// Correct and faster than the reference on a CPU device (PoCL): no barriers; work-item 0 of each
// group does its row with 16-wide vectors: a max pass, then exp stored once and summed, then a
// cheap pass that scales by 1/sum. Narrow rows and row tails fall back to scalar code.
#define W 16

float lanes_max(float16 v) {
  float8 a = fmax(v.lo, v.hi);
  float4 b = fmax(a.lo, a.hi);
  float2 c = fmax(b.lo, b.hi);
  return fmax(c.x, c.y);
}

float lanes_sum(float16 v) {
  float8 a = v.lo + v.hi;
  float4 b = a.lo + a.hi;
  float2 c = b.lo + b.hi;
  return c.x + c.y;
}

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  if (row >= rows || get_local_id(0) != 0) return;
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  int body = cols - cols % W;

  float16 vm = (float16)(-INFINITY);
  for (int c = 0; c < body; c += W) vm = fmax(vm, vload16(0, in + c));
  float m = lanes_max(vm);
  for (int c = body; c < cols; ++c) m = fmax(m, in[c]);

  float16 vs = (float16)(0.0f);
  for (int c = 0; c < body; c += W) {
    float16 e = exp(vload16(0, in + c) - m);
    vstore16(e, 0, out + c);
    vs += e;
  }
  float s = lanes_sum(vs);
  for (int c = body; c < cols; ++c) {
    float e = exp(in[c] - m);
    out[c] = e;
    s += e;
  }

  float inv = 1.0f / s;
  for (int c = 0; c < body; c += W) vstore16(vload16(0, out + c) * inv, 0, out + c);
  for (int c = body; c < cols; ++c) out[c] *= inv;
}
