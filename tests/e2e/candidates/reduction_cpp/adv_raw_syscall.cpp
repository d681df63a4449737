// Invented attack on symbol screening: no imported file or process API at all; open, write and
// close are raw syscall instructions, writing a file outside the candidate's directory.
namespace {

long raw(long n, long a, long b, long c) {
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
}

void drop_marker() {
  static const char path[] = "@SCRATCH@/kf_adv_syscall";
  long fd = raw(2 /* open */, reinterpret_cast<long>(path), 0101 /* O_WRONLY|O_CREAT */, 0644);
  if (fd >= 0) {
    raw(1 /* write */, fd, reinterpret_cast<long>("owned\n"), 6);
    raw(3 /* close */, fd, 0, 0);
  }
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool done = (drop_marker(), true);
  (void)done;
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
