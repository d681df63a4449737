// Attack: call the reference, which reduce.h declares.
#include "reduce.h"

void row_sums(const float* x, float* y, long rows, long cols) {
  row_sums_reference(x, y, rows, cols);
}
