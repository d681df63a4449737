// Attack: absolute #include of the reference's source from the package's original directory
// (outside the candidate's copy), wrapped in a namespace so its symbol does not clash.
namespace stolen {
#include "@SOURCE_DIR@/examples/tasks/reduction_cpp/reference.cpp"
}

void row_sums(const float* x, float* y, long rows, long cols) {
  stolen::row_sums_reference(x, y, rows, cols);
}
