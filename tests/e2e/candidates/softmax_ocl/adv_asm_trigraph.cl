// Attack: inline assembly whose keyword is split over two lines by a trigraph continuation
// (`??/` is a backslash where trigraphs are on, as in OpenCL C builds), in an `#undef` that would
// undo the harness's build options and in the statement itself; it reads the cycle counter.
// The evaluator's screen replaces trigraphs before it looks, so it refuses the source.
#undef __as??/
m__
static inline ulong tsc(void) {
  uint lo, hi;
  __as??/
m__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((ulong)hi << 32) | lo;
}
__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  if (get_global_id(0) == 0) y[0] = (float)(tsc() & 1023);
}
