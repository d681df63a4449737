// Correct, but prints one 64 KB debug line without a newline on its first call (the line that
// overflowed the orchestrator's stack in log cleaning).
#include <cstdio>
#include <string>

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool printed = false;
  if (!printed) {
    printed = true;
    // No ':' or '(' early in the line: the old regex's file-name part then ran over all of it.
    std::string line =
        "debug row_sums rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
    while (line.size() < 64 * 1024) line += " partial=0.125";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
  }
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
