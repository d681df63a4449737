// allclose semantics shared by the harness and task authors: per-element |a-e| <= atol + rtol*|e|,
// a pass ratio per output, NaN/Inf handling, and the statistics a failure report needs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "harness/parallel.h"
#include "kernelfoundry/compare.h"

namespace kernelfoundry {
namespace {

constexpr std::size_t kMaxExamples = 5;

// Accumulates one comparison: statistics over every element, mismatches as decided by the caller.
class Accumulator {
 public:
  explicit Accumulator(const Tolerance& tol) : tol_(tol) {}

  void record(long i, double a, double e, bool ok) {
    bool a_finite = std::isfinite(a), e_finite = std::isfinite(e);
    if (a_finite && e_finite) {
      double diff = std::fabs(a - e);
      if (diff > r_.max_abs) r_.max_abs = diff;
      double scale = std::fabs(e) + 1e-12;  // divide only when the maximum moves
      if (diff > r_.max_rel * scale) r_.max_rel = diff / scale;
      dot_ += a * e;
      na_ += a * a;
      ne_ += e * e;
      ++finite_pairs_;
    }
    if (!ok) {
      if (r_.mismatches == 0) r_.first_bad = i;
      ++r_.mismatches;
      if (!a_finite && e_finite) ++r_.nonfinite;
      if (r_.examples.size() < kMaxExamples) r_.examples.push_back({i, e, a});
    }
  }

  // Folds in the accumulator of the chunk that follows this one.
  void merge(const Accumulator& next) {
    const CompareResult& n = next.r_;
    r_.max_abs = std::max(r_.max_abs, n.max_abs);
    r_.max_rel = std::max(r_.max_rel, n.max_rel);
    dot_ += next.dot_;
    na_ += next.na_;
    ne_ += next.ne_;
    finite_pairs_ += next.finite_pairs_;
    if (r_.mismatches == 0 && n.mismatches > 0) r_.first_bad = n.first_bad;
    r_.mismatches += n.mismatches;
    r_.nonfinite += n.nonfinite;
    for (const auto& ex : n.examples) {
      if (r_.examples.size() < kMaxExamples) r_.examples.push_back(ex);
    }
  }

  CompareResult finish(long total) {
    r_.total = total;
    if (na_ == 0 && ne_ == 0) {
      r_.cosine = (finite_pairs_ == total) ? 1.0 : 0.0;
    } else if (na_ == 0 || ne_ == 0) {
      r_.cosine = 0.0;
    } else {
      r_.cosine = dot_ / (std::sqrt(na_) * std::sqrt(ne_));
    }
    double allowed = std::floor((1.0 - tol_.ratio) * double(total) + 1e-9);
    r_.passed = double(r_.mismatches) <= (allowed < 0 ? 0 : allowed);
    return r_;
  }

 private:
  Tolerance tol_;
  CompareResult r_;
  double dot_ = 0, na_ = 0, ne_ = 0;
  long finite_pairs_ = 0;
};

bool float_element_ok(double a, double e, bool equal_bits, const Tolerance& tol) {
  if (equal_bits || a == e) return true;
  if (std::isnan(a) && std::isnan(e)) return true;
  if (!std::isfinite(a) || !std::isfinite(e)) return false;  // NaN/Inf against a finite value
  return std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);
}

// Chunks of a fixed size compared in parallel and merged in order: the result (sums included)
// is the same for any thread count.
constexpr long kCompareChunk = 1L << 20;

template <class Element>
CompareResult compare_chunked(long n, const Tolerance& tol, Element element) {
  long chunks = (n + kCompareChunk - 1) / kCompareChunk;
  std::vector<Accumulator> parts(std::size_t(std::max(1L, chunks)), Accumulator(tol));
  parallel_chunks(n, kCompareChunk, [&](long c, long begin, long end) {
    Accumulator& acc = parts[std::size_t(c)];
    for (long i = begin; i < end; ++i) element(acc, i);
  });
  for (std::size_t c = 1; c < parts.size(); ++c) parts[0].merge(parts[c]);
  return parts[0].finish(n);
}

template <class T, class Convert>
CompareResult compare_floats(const void* actual, const void* expected, long n, const Tolerance& tol,
                             Convert convert) {
  const T* a = static_cast<const T*>(actual);
  const T* e = static_cast<const T*>(expected);
  return compare_chunked(n, tol, [&](Accumulator& acc, long i) {
    double av = convert(a[i]), ev = convert(e[i]);
    bool equal_bits = std::memcmp(&a[i], &e[i], sizeof(T)) == 0;
    acc.record(i, av, ev, float_element_ok(av, ev, equal_bits, tol));
  });
}

// Integers compare in their own type (exact beyond 2^53); the tolerance applies to the distance.
template <class T>
CompareResult compare_ints(const void* actual, const void* expected, long n, const Tolerance& tol) {
  const T* a = static_cast<const T*>(actual);
  const T* e = static_cast<const T*>(expected);
  return compare_chunked(n, tol, [&](Accumulator& acc, long i) {
    bool ok = a[i] == e[i];
    if (!ok) {
      std::uint64_t d = a[i] > e[i] ? std::uint64_t(a[i]) - std::uint64_t(e[i])
                                    : std::uint64_t(e[i]) - std::uint64_t(a[i]);
      ok = double(d) <= tol.atol + tol.rtol * std::fabs(double(e[i]));
    }
    acc.record(i, double(a[i]), double(e[i]), ok);
  });
}

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return buf;
}

}  // namespace

Tolerance default_tolerance(DType dtype) {
  switch (dtype) {
    case DType::F64:
      return Tolerance{1e-9, 1e-12, 1.0};
    case DType::F32:
      return Tolerance{1e-5, 1e-8, 1.0};
    case DType::F16:
      return Tolerance{1e-3, 1e-5, 1.0};
    case DType::BF16:
      return Tolerance{1e-2, 1e-4, 1.0};
    default:
      return exact();
  }
}

CompareResult compare(const void* actual, const void* expected, DType dtype, long count,
                      const Tolerance& tol) {
  auto same = [](auto v) { return double(v); };
  switch (dtype) {
    case DType::F32:
      return compare_floats<float>(actual, expected, count, tol, same);
    case DType::F64:
      return compare_floats<double>(actual, expected, count, tol, same);
    case DType::F16:
      return compare_floats<std::uint16_t>(
          actual, expected, count, tol, [](std::uint16_t h) { return double(half_to_float(h)); });
    case DType::BF16:
      return compare_floats<std::uint16_t>(
          actual, expected, count, tol, [](std::uint16_t b) { return double(bf16_to_float(b)); });
    case DType::I8:
      return compare_ints<std::int8_t>(actual, expected, count, tol);
    case DType::U8:
      return compare_ints<std::uint8_t>(actual, expected, count, tol);
    case DType::I32:
      return compare_ints<std::int32_t>(actual, expected, count, tol);
    case DType::U32:
      return compare_ints<std::uint32_t>(actual, expected, count, tol);
    case DType::I64:
      return compare_ints<std::int64_t>(actual, expected, count, tol);
  }
  return CompareResult();
}

CompareResult allclose(const float* actual, const float* expected, long count,
                       const Tolerance& tol) {
  return compare(actual, expected, DType::F32, count, tol);
}

CompareResult allclose(const double* actual, const double* expected, long count,
                       const Tolerance& tol) {
  return compare(actual, expected, DType::F64, count, tol);
}

CompareResult allclose(const std::vector<float>& actual, const std::vector<float>& expected,
                       const Tolerance& tol) {
  if (actual.size() != expected.size()) {
    CompareResult r;
    r.passed = false;
    r.total = long(expected.size());
    r.mismatches = r.total;
    r.cosine = 0;
    return r;
  }
  return allclose(actual.data(), expected.data(), long(actual.size()), tol);
}

double cosine_similarity(const float* a, const float* b, long count) {
  return compare(a, b, DType::F32, count, Tolerance{}).cosine;
}

double cosine_similarity(const double* a, const double* b, long count) {
  return compare(a, b, DType::F64, count, Tolerance{}).cosine;
}

std::string CompareResult::describe(const Tolerance& tol) const {
  char buf[512];
  if (passed && mismatches == 0) {
    std::snprintf(buf, sizeof buf, "all %ld elements within tolerance (max_abs %.3g, max_rel %.3g)",
                  total, max_abs, max_rel);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "%ld of %ld elements outside tolerance (rtol %g, atol %g, need %g%% within)",
                mismatches, total, tol.rtol, tol.atol, tol.ratio * 100.0);
  std::string out = buf;
  if (nonfinite > 0)
    out += "; " + std::to_string(nonfinite) + " are NaN/Inf where finite was expected";
  std::snprintf(buf, sizeof buf, "; max_abs %.4g, max_rel %.4g, cosine %.6f", max_abs, max_rel,
                cosine);
  out += buf;
  if (!examples.empty()) {
    out += "; first mismatches:";
    for (std::size_t k = 0; k < examples.size(); ++k) {
      out += (k ? ", [" : " [") + std::to_string(examples[k].index) + "] expected " +
             format_value(examples[k].expected) + " got " + format_value(examples[k].actual);
    }
  }
  return out;
}

}  // namespace kernelfoundry
