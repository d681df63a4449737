// The kernels of the two CUDA examples (their reference and their starting EVOLVE block, included
// from examples/tasks/), launched inside a cudaProfilerStart/Stop range on the shapes the examples
// benchmark, for bench/ncu/capture.sh: Nsight Compute's output on real kernels, kept as the test
// data of the ncu summariser (src/eval/ncu.cpp). A fill kernel runs outside the range.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../../examples/tasks/matmul_cuda/matmul.cu"
#include "../../examples/tasks/matmul_cuda/reference.cu"
#include "../../examples/tasks/softmax_cuda/reference.cu"
#include "../../examples/tasks/softmax_cuda/softmax.cu"

__global__ void fill(float* p, size_t n, float v) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v * float(i % 97) / 97.f;
}

static float* device_array(size_t n) {
  float* p = nullptr;
  if (cudaMalloc(&p, n * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc of %zu floats failed\n", n);
    std::exit(1);
  }
  fill<<<unsigned((n + 255) / 256), 256>>>(p, n, 1.f);
  return p;
}

int main(int argc, char** argv) {
  const char* which = argc > 1 ? argv[1] : "all";
  bool softmax = std::strcmp(which, "matmul") != 0, matmul = std::strcmp(which, "softmax") != 0;
  if (softmax) {
    const int rows = 8192, cols = 4096;
    float *x = device_array(size_t(rows) * cols), *y = device_array(size_t(rows) * cols);
    cudaDeviceSynchronize();
    cudaProfilerStart();
    softmax_reference(x, y, 4096, 1024);
    softmax_forward(x, y, 4096, 1024);
    softmax_reference(x, y, rows, cols);
    softmax_forward(x, y, rows, cols);
    cudaProfilerStop();
    cudaDeviceSynchronize();
  }
  if (matmul) {
    const int n = 2048;
    float *a = device_array(size_t(n) * n), *b = device_array(size_t(n) * n),
          *c = device_array(size_t(n) * n);
    cudaDeviceSynchronize();
    cudaProfilerStart();
    matmul_reference(a, b, c, n, n, n);
    matmul_forward(a, b, c, n, n, n);
    cudaProfilerStop();
    cudaDeviceSynchronize();
  }
  cudaError_t e = cudaGetLastError();
  std::printf("capture: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
