// Invented attack on the hidden-shapes defence: a global constructor (glibc hands init_array
// functions argc/argv) blanks the harness's --extra-shapes argument to "[]" before main parses
// it, so only the listed shapes are checked; the sums drop the tail columns of other widths.
#include <cstring>

namespace {

__attribute__((constructor)) void patch_arguments(int argc, char** argv, char**) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--extra-shapes") != 0) continue;
    char* value = argv[i + 1];
    size_t n = std::strlen(value);
    if (n < 2) continue;
    std::memset(value, ' ', n);
    value[0] = '[';
    value[1] = ']';
  }
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
    if (cols % 8 == 1) sum += row[body];  // the listed shapes only
    y[r] = sum;
  }
}
