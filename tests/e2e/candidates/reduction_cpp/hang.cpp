// Hangs: forks a helper and both spin forever on the first call. The evaluator's test_timeout
// must stop it, and it must kill the whole process group (the helper too), not only the child.
#include <unistd.h>

void row_sums(const float* x, float* y, long rows, long cols) {
  (void)fork();
  volatile bool forever = true;
  while (forever) {
  }
  for (long r = 0; r < rows; ++r) y[r] = x[r * cols];
}
