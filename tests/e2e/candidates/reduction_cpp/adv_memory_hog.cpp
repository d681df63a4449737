// Attack: memory hog, bounded: allocates and touches up to 9 GiB in 256 MiB steps (past the
// default 8 GiB limit of eval_config.memory_limit_gib; a 24 GiB machine survives it undefended);
// then the sums. Uses only what static screening allows, so the memory limit must stop it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void hog() {
  const long long step = 256LL << 20;
  long long cap = 9LL << 30;
  std::vector<char*> blocks;
  for (long long used = 0; used + step <= cap; used += step) {
    char* p = static_cast<char*>(std::malloc(step));
    if (!p) break;
    std::memset(p, 1, step);
    blocks.push_back(p);
  }
  std::printf("held %zu MiB\n", blocks.size() * 256);
  for (char* p : blocks) std::free(p);
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool done = (hog(), true);
  (void)done;
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
