// Row-wise softmax over a row-major rows x cols matrix of floats:
//   y[r][c] = exp(x[r][c] - max_c x[r][c]) / sum_c exp(x[r][c] - max_c x[r][c])
//
// Launch contract (fixed by task.cpp; keep it):
//   - kernel name and signature: softmax(__global const float* x, __global float* y,
//                                        int rows, int cols)
//   - local work size 64, global work size rows * 64 (1-D): work-group r owns row r, so a
//     kernel may use the 64 work-items of a group together (local memory, barriers).
//   - x and y do not alias; write every y element; never write past y[rows * cols - 1]; do not
//     write x.
//
// [USER_INSTRUCTIONS_START]
// The kernel runs on the device the harness picks (PoCL on a CPU here, an NVIDIA GPU elsewhere).
// Inputs are large logits (about N(85, 2)), so subtracting the row maximum before exp() is
// required: exp(85) alone is close to FLT_MAX. Results must match the reference within rtol 1e-4
// (atol 1e-7) on every element. Keep the launch contract above; cols need not be a multiple of
// 64 (tests use cols = 1, 33, 1000, 4097).
// [USER_INSTRUCTIONS_END]

// [EVOLVE_START]
// Naive version: work-item 0 of each group walks its row three times (max, sum, normalise);
// the other 63 work-items of the group idle.
__kernel void softmax(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_group_id(0);
  if (row >= rows || get_local_id(0) != 0) return;
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;

  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmax(m, in[c]);

  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += exp(in[c] - m);

  for (int c = 0; c < cols; ++c) out[c] = exp(in[c] - m) / sum;
}
// [EVOLVE_END]
