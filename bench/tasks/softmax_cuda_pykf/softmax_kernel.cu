// Row-wise softmax: the kernel KernelFoundry evolves.
// examples/tasks/softmax_cuda/softmax.cu's EVOLVE block, as a PyTorch extension for the Python
// KernelFoundry 0.5.0 (bench/side_by_side.py writes each candidate between the markers; the rest
// stays as it is).
#include <cuda_runtime.h>
#include <torch/extension.h>

#include <cmath>

#include "softmax.h"

// [EVOLVE_START]
// Naive: one thread per row, three passes over the row in global memory.
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
}

void softmax_forward(const float* x, float* y, int rows, int cols) {
  const int threads = 128;
  softmax_naive<<<(rows + threads - 1) / threads, threads>>>(x, y, rows, cols);
}
// [EVOLVE_END]

// The binding this task format needs (TestBase.compile_torch_extension builds one source file into
// a Python module): y = softmax(x) row-wise, both contiguous float32 [rows, cols] CUDA tensors.
void forward(torch::Tensor x, torch::Tensor y) {
  TORCH_CHECK(x.is_cuda() && y.is_cuda(), "x and y must be CUDA tensors");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32,
              "float32 only");
  TORCH_CHECK(x.dim() == 2 && x.sizes() == y.sizes(), "x and y must be [rows, cols]");
  TORCH_CHECK(x.is_contiguous() && y.is_contiguous(), "x and y must be contiguous");
  softmax_forward(x.data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(x.size(0)),
                  static_cast<int>(x.size(1)));
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "row-wise softmax (candidate)");
}
