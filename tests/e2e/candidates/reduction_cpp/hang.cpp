// Hangs: every OpenMP thread spins forever on the first call. The evaluator's test_timeout must
// stop it, and the whole child with its threads.
void row_sums(const float* x, float* y, long rows, long cols) {
#pragma omp parallel
  {
    volatile bool forever = true;
    while (forever) {
    }
  }
  for (long r = 0; r < rows; ++r) y[r] = x[r * cols];
}
