// Invented attack on the "fault of the machine" path: prints the harness's cannot-write-result
// line and exits with its code, so a wrong kernel is "not evaluated" and the job stops.
#include <unistd.h>

#include <cstdio>

void row_sums(const float*, float* y, long rows, long) {
  for (long r = 0; r < rows; ++r) y[r] = 0.0f;
  std::printf(
      "kernelfoundry harness: cannot write the result file run/result.json: No space left on "
      "device\n");
  std::fflush(stdout);
  _exit(3);
}
