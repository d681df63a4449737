// The reference softmax: one 256-thread block per row, shared-memory reductions.
// examples/tasks/softmax_cuda/reference.cu's REFERENCE block, as a PyTorch extension for the Python
// KernelFoundry 0.5.0 (bench/side_by_side.py writes each candidate between the markers; the rest
// stays as it is).
#include <cuda_runtime.h>
#include <torch/extension.h>

#include <cmath>

#include "softmax.h"

// [REFERENCE_START]
__global__ void softmax_reference_kernel(const float* x, float* y, int cols) {
  __shared__ float red[256];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(xr[j] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  float inv = 1.f / red[0];
  for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) * inv;
}

void softmax_reference(const float* x, float* y, int rows, int cols) {
  softmax_reference_kernel<<<rows, 256>>>(x, y, cols);
}
// [REFERENCE_END]

// The binding this task format needs (TestBase.compile_torch_extension builds one source file into
// a Python module): y = softmax(x) row-wise, both contiguous float32 [rows, cols] CUDA tensors.
void forward(torch::Tensor x, torch::Tensor y) {
  TORCH_CHECK(x.is_cuda() && y.is_cuda(), "x and y must be CUDA tensors");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32,
              "float32 only");
  TORCH_CHECK(x.dim() == 2 && x.sizes() == y.sizes(), "x and y must be [rows, cols]");
  TORCH_CHECK(x.is_contiguous() && y.is_contiguous(), "x and y must be contiguous");
  softmax_reference(x.data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(x.size(0)),
                    static_cast<int>(x.size(1)));
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "row-wise softmax (reference)");
}
