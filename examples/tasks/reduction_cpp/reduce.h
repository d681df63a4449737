// Entry points task.cpp calls. The EVOLVE block in reduce.cpp must keep row_sums' signature.
#pragma once

// y[r] = sum over c of x[r * cols + c], for a row-major rows x cols float matrix in host memory.
void row_sums(const float* x, float* y, long rows, long cols);
void row_sums_reference(const float* x, float* y, long rows, long cols);
