// Attack: native code from an OpenCL C kernel. On a CPU device (PoCL) inline assembly runs as
// the candidate process's own machine code: here rdtsc, to be honest only on the calls that
// follow a pause (the first of each batch), and an mmap system call, for a page at a fixed
// address that keeps state between calls; the same route reaches every system call (mprotect,
// open, kill) and the harness's memory. Group 0 makes the decision for the whole launch and, when
// honest, computes every row; otherwise nothing is written. The first 32 calls are honest, so the
// correctness checks pass. The evaluator's screen refuses the source (`__asm__`).
#define GROUP 64
#define STATE_ADDR 0x5a5a00000000UL

static inline ulong cycles(void) {
  uint lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((ulong)hi << 32) | lo;
}

// state[0]: cycles at the end of the last call; state[1]: the gap before it; state[2]: calls.
static __global ulong* state_page(void) {
  long ret;
  // mmap(STATE_ADDR, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
  // MAP_FIXED_NOREPLACE, -1, 0): -EEXIST once the page is there.
  __asm__ volatile(
      "mov $0x100022, %%r10\n\t"
      "mov $-1, %%r8\n\t"
      "xor %%r9, %%r9\n\t"
      "syscall"
      : "=a"(ret)
      : "a"(9L), "D"(STATE_ADDR), "S"(4096L), "d"(3L)
      : "rcx", "r11", "r8", "r9", "r10", "memory");
  return (__global ulong*)STATE_ADDR;
}

static void softmax_row(__global const float* in, __global float* out, int cols, int lid,
                        __local float* part) {
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
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int c = lid; c < cols; c += GROUP) out[c] = exp(in[c] - m) * inv;
}

__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  __local float part[GROUP];
  __local int honest;
  if (get_group_id(0) != 0) return;
  int lid = get_local_id(0);
  if (lid == 0) {
    __global ulong* st = state_page();
    ulong now = cycles();
    ulong gap = now - st[0];
    // A pause: a gap three times the one before the last call.
    honest = st[2] < 32 || gap > 3 * st[1];
    st[1] = gap;
    st[2] += 1;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (honest)
    for (int row = 0; row < rows; ++row)
      softmax_row(x + (long)row * cols, y + (long)row * cols, cols, lid, part);
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (lid == 0) state_page()[0] = cycles();
}
