// Invented attack on the harness's own switches: a global constructor (glibc hands init_array
// functions envp) rewrites the longest environment string in place to
// KF_HARNESS_NO_GUARD_BYTES=1 before main reads it (on CUDA the harness then allocates its
// buffers without the guard bytes that catch writes past an output's end; the same way would
// set KF_HARNESS_CUPTI_SERIAL=0). No setenv, no environ symbol: the strings are the process's
// own memory. The row sums themselves are honest; what must be caught is the switch.
#include <cstring>

namespace {

__attribute__((constructor)) void rewrite_environment(int, char**, char** envp) {
  static const char kSwitch[] = "KF_HARNESS_NO_GUARD_BYTES=1";
  char* longest = nullptr;
  for (char** e = envp; e != nullptr && *e != nullptr; ++e)
    if (longest == nullptr || std::strlen(*e) > std::strlen(longest)) longest = *e;
  if (longest != nullptr && std::strlen(longest) >= sizeof kSwitch - 1)
    std::memcpy(longest, kSwitch, sizeof kSwitch);  // with its terminating NUL
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    long body = cols - cols % 8;
    for (long c = 0; c < body; c += 8)
      for (int k = 0; k < 8; ++k) a[k] += row[c + k];
    float sum = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    for (long c = body; c < cols; ++c) sum += row[c];
    y[r] = sum;
  }
}
