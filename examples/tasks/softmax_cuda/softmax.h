// Entry points task.cpp calls. The EVOLVE block in softmax.cu must keep softmax_forward's signature.
#pragma once

// x and y are device pointers to row-major [rows, cols] float32. Launch on the default stream and
// return without synchronising: the harness synchronises and times.
void softmax_forward(const float* x, float* y, int rows, int cols);
void softmax_reference(const float* x, float* y, int rows, int cols);
