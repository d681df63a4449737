// Entry points task.cpp calls. The EVOLVE block in add_one.cpp must keep add_one's signature.
#pragma once

// y[i] = x[i] + 1 for 0 <= i < n, float arrays in host memory.
void add_one(const float* x, float* y, long n);
void add_one_reference(const float* x, float* y, long n);
