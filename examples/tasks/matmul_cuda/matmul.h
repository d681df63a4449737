// Entry points task.cpp calls. The EVOLVE block in matmul.cu must keep matmul_forward's signature.
#pragma once

// C[M,N] = A[M,K] x B[K,N], row-major float32 device pointers. Launch on the default stream and
// return without synchronising.
void matmul_forward(const float* a, const float* b, float* c, int m, int n, int k);
void matmul_reference(const float* a, const float* b, float* c, int m, int n, int k);
