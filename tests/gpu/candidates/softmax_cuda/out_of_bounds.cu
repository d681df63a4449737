// Correct values, but the last row also writes one element past the end of y.
__global__ void softmax_naive(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* xr = x + static_cast<size_t>(row) * cols;
  float* yr = y + static_cast<size_t>(row) * cols;
  float m = -INFINITY;
  for (int j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);
  float s = 0.f;
  for (int j = 0; j < cols; ++j) s += expf(xr[j] - m);
  for (int j = 0; j < cols; ++j) yr[j] = expf(xr[j] - m) / s;
  if (row == rows - 1) yr[cols] = 0.5f;
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  softmax_naive<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
}
