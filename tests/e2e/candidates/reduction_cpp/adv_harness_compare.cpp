// Attack: harness symbol override. Defines kernelfoundry::compare and the rest of the harness's
// compare API so that every comparison passes, then returns half-row sums (wrong, twice as fast).
#include <kernelfoundry/compare.h>

namespace kernelfoundry {

Tolerance default_tolerance(DType) {
  return Tolerance{1e30, 1e30, 0.0};
}

CompareResult compare(const void*, const void*, DType, long count, const Tolerance&) {
  CompareResult r;
  r.total = count;
  return r;
}
CompareResult allclose(const float*, const float*, long count, const Tolerance&) {
  CompareResult r;
  r.total = count;
  return r;
}
CompareResult allclose(const double*, const double*, long count, const Tolerance&) {
  CompareResult r;
  r.total = count;
  return r;
}
CompareResult allclose(const std::vector<float>&, const std::vector<float>& expected,
                       const Tolerance&) {
  CompareResult r;
  r.total = static_cast<long>(expected.size());
  return r;
}
double cosine_similarity(const float*, const float*, long) {
  return 1.0;
}
double cosine_similarity(const double*, const double*, long) {
  return 1.0;
}
std::string CompareResult::describe(const Tolerance&) const {
  return "all elements match";
}

}  // namespace kernelfoundry

void row_sums(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < (cols + 1) / 2; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
