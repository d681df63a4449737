// examples/tasks/softmax_cuda/softmax.h: what the two extensions' bindings call. The EVOLVE
// block in softmax_kernel.cu must keep softmax_forward's signature.
#pragma once

// x and y are device pointers to row-major [rows, cols] float32. Launch on the default stream and
// return without synchronising: the benchmark synchronises and times.
void softmax_forward(const float* x, float* y, int rows, int cols);
void softmax_reference(const float* x, float* y, int rows, int cols);
