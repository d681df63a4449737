// Output comparison for task authors and the harness: tolerances, allclose, cosine similarity.
// C++17; implemented in the harness library (src/harness/compare.cpp).
#pragma once

#include <string>
#include <vector>

#include "kernelfoundry/dtype.h"

namespace kernelfoundry {

// An element passes when |actual - expected| <= atol + rtol * |expected|; an output passes when
// at least `ratio` of its elements pass. NaN/Inf in actual where expected is finite always fails.
struct Tolerance {
  double rtol = 1e-5;
  double atol = 1e-8;
  double ratio = 1.0;
};

inline Tolerance tolerance(double rtol, double atol = 0.0, double ratio = 1.0) {
  return Tolerance{rtol, atol, ratio};
}
inline Tolerance exact() {
  return Tolerance{0.0, 0.0, 1.0};
}
// What an output gets when the task names no tolerance: loose enough for the dtype's precision.
Tolerance default_tolerance(DType dtype);

struct MismatchExample {
  long index = 0;
  double expected = 0;
  double actual = 0;
};

struct CompareResult {
  bool passed = true;
  long total = 0;
  long mismatches = 0;
  long nonfinite = 0;                     // mismatches where actual is NaN/Inf and expected is not
  double max_abs = 0;                     // over elements where both values are finite
  double max_rel = 0;                     // |a-e| / (|e| + 1e-12), same elements
  double cosine = 1;                      // over elements where both values are finite
  long first_bad = -1;                    // index of the first mismatch, -1 if none
  std::vector<MismatchExample> examples;  // the first few mismatches

  explicit operator bool() const { return passed; }
  // One line: "12 of 561 elements outside tolerance ... first bad [34]: expected .. got ..".
  std::string describe(const Tolerance& tol) const;
};

// Compares `count` elements of `dtype` (f16/bf16 as uint16 bits).
CompareResult compare(const void* actual, const void* expected, DType dtype, long count,
                      const Tolerance& tol);

CompareResult allclose(const float* actual, const float* expected, long count,
                       const Tolerance& tol = Tolerance());
CompareResult allclose(const double* actual, const double* expected, long count,
                       const Tolerance& tol = Tolerance());
// Vectors of different sizes never pass (total = expected.size(), every element a mismatch).
CompareResult allclose(const std::vector<float>& actual, const std::vector<float>& expected,
                       const Tolerance& tol = Tolerance());

// Cosine similarity over the elements where both are finite; two all-zero vectors give 1.
double cosine_similarity(const float* a, const float* b, long count);
double cosine_similarity(const double* a, const double* b, long count);

}  // namespace kernelfoundry
