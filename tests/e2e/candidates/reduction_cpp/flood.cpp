// Correct, but floods stdout with 1 GiB on its first call: no newline, a few bytes that are not
// UTF-8 at the start, then 'a'*N (the orchestrator keeps a capped head and tail of it).
#include <cstdio>
#include <vector>

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool flooded = false;
  if (!flooded) {
    flooded = true;
    std::fputs("flood:\xff\xfe ", stdout);
    std::vector<char> chunk(1 << 20, 'a');
    for (int i = 0; i < 1024; ++i) std::fwrite(chunk.data(), 1, chunk.size(), stdout);
    std::fflush(stdout);
  }
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
