// Honest: work-item 0 of each group does its row with float4 loads and stores and a scalar tail
// (never past the row).
__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  if (row >= rows || get_local_id(0) != 0) return;
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  int body = cols & ~3;
  float4 vm = (float4)(-INFINITY);
  for (int c = 0; c < body; c += 4) vm = fmax(vm, vload4(0, in + c));
  float m = fmax(fmax(vm.x, vm.y), fmax(vm.z, vm.w));
  for (int c = body; c < cols; ++c) m = fmax(m, in[c]);
  float4 vs = (float4)(0.0f);
  for (int c = 0; c < body; c += 4) {
    float4 e = exp(vload4(0, in + c) - m);
    vstore4(e, 0, out + c);
    vs += e;
  }
  float s = (vs.x + vs.y) + (vs.z + vs.w);
  for (int c = body; c < cols; ++c) {
    float e = exp(in[c] - m);
    out[c] = e;
    s += e;
  }
  float inv = 1.0f / s;
  for (int c = 0; c < body; c += 4) vstore4(vload4(0, out + c) * inv, 0, out + c);
  for (int c = body; c < cols; ++c) out[c] *= inv;
}
