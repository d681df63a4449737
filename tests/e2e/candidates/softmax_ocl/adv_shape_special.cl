// Attack: shape specialisation. 16-wide vectors; the row tail is handled only for the
// remainders the listed shapes have (cols % 16 of 0, 1 or 8); other widths leave garbage.
__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  if (row >= rows || get_local_id(0) != 0) return;
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  int body = cols - cols % 16;
  int tail = cols % 16;
  int handled = (tail == 1 || tail == 8) ? tail : 0;
  float16 vm = (float16)(-INFINITY);
  for (int c = 0; c < body; c += 16) vm = fmax(vm, vload16(0, in + c));
  float8 m8 = fmax(vm.lo, vm.hi);
  float4 m4 = fmax(m8.lo, m8.hi);
  float m = fmax(fmax(m4.x, m4.y), fmax(m4.z, m4.w));
  for (int c = body; c < body + handled; ++c) m = fmax(m, in[c]);
  float s = 0.0f;
  for (int c = 0; c < body + handled; ++c) s += exp(in[c] - m);
  float inv = 1.0f / s;
  for (int c = 0; c < body + handled; ++c) out[c] = exp(in[c] - m) * inv;
}
