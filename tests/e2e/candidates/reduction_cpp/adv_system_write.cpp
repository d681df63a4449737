// Attack: system() writing outside the candidate's directory (the scratch root, /tmp).
#include <cstdlib>

void row_sums(const float* x, float* y, long rows, long cols) {
  static int done = std::system("touch @SCRATCH@/kf_adv_owned /tmp/kf_adv_owned_@TAG@");
  (void)done;
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
