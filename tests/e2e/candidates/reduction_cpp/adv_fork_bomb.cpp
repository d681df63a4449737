// Attack: process bomb, bounded so it cannot hurt an undefended machine: up to 300 children that
// each sleep 2 s, reaped before the first call returns; the sums are right.
#include <sys/wait.h>
#include <unistd.h>

namespace {

void bomb() {
  int started = 0;
  for (int i = 0; i < 300; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      sleep(2);
      _exit(0);
    }
    if (pid < 0) break;
    ++started;
  }
  while (started-- > 0) wait(nullptr);
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool done = (bomb(), true);
  (void)done;
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
