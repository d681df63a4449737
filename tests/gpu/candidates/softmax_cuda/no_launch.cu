// Launches nothing: the output keeps the harness's poison.
void softmax_forward(const float* x, float* y, int rows, int cols) {}
