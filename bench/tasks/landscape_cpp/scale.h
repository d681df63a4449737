// Entry points task.cpp calls. The EVOLVE block in scale.cpp must keep scale_shift's signature.
#pragma once

#include "landscape.h"

// y[i] = 2 x[i] + 1 for 0 <= i < n, float arrays in host memory.
void scale_shift(const float* x, float* y, long n);
void scale_shift_reference(const float* x, float* y, long n);
