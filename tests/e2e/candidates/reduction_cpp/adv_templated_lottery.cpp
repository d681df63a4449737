// Adversarial: a templated kernel whose eight "combinations" are the same code (the parameter
// changes nothing), listed only to draw eight noisy measurements and be credited with the
// luckiest. It is correct; what must hold is that its figure comes from a run of its own after
// the choice, not from the draw that won it.
template <int kCopy>
void forward_templated(const float* x, float* y, long rows, long cols) {
#pragma omp parallel for schedule(dynamic, 4) if (rows * cols > 65536)
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (long c = 0; c < cols; ++c) sum += row[c];
    y[r] = sum;
  }
}

void row_sums(const float* x, float* y, long rows, long cols, int copy) {
  if (copy == 1) return forward_templated<1>(x, y, rows, cols);
  if (copy == 2) return forward_templated<2>(x, y, rows, cols);
  if (copy == 3) return forward_templated<3>(x, y, rows, cols);
  if (copy == 4) return forward_templated<4>(x, y, rows, cols);
  if (copy == 5) return forward_templated<5>(x, y, rows, cols);
  if (copy == 6) return forward_templated<6>(x, y, rows, cols);
  if (copy == 7) return forward_templated<7>(x, y, rows, cols);
  if (copy == 8) return forward_templated<8>(x, y, rows, cols);
}
