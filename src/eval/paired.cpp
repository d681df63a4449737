// The paired speedup's statistics: per-pair log ratios, Student-t intervals (the t quantile
// computed here from the incomplete beta function), the combination over shapes, and the
// "clearly faster" comparison the search uses.
#include "eval/paired.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "util/strings.h"

namespace kf {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The median of the positive, finite values of `samples`; nullopt when there is none.
std::optional<double> clean_median(const std::vector<double>& samples) {
  std::vector<double> v;
  v.reserve(samples.size());
  for (double s : samples)
    if (std::isfinite(s) && s > 0) v.push_back(s);
  if (v.empty()) return std::nullopt;
  return median_of(std::move(v));
}

// ln(median(reference) / median(candidate)) of each usable pair that is not a probe, without
// the outlying pairs (see paired.h).
std::vector<double> log_ratios(const std::vector<BatchPair>& batches) {
  std::vector<double> out;
  for (const BatchPair& b : batches) {
    if (b.probe) continue;
    std::optional<double> c = clean_median(b.candidate_ms), r = clean_median(b.reference_ms);
    if (!c || !r) continue;
    double x = std::log(*r / *c);
    if (std::isfinite(x)) out.push_back(x);
  }
  if (out.size() < 5) return out;
  double med = median_of(out);
  std::vector<double> deviation;
  for (double x : out) deviation.push_back(std::fabs(x - med));
  double limit = 4 * std::max(1.4826 * median_of(deviation), 0.01);
  std::vector<double> kept;
  for (double x : out)
    if (std::fabs(x - med) <= limit) kept.push_back(x);
  if (kept.size() * 3 < out.size() * 2) return out;  // not a few outliers: keep them all
  return kept;
}

// A shape's mean log ratio, the variance of that mean (s^2 / n) and its degrees of freedom.
struct LogMean {
  double mean = 0, var = 0, df = 0;
  int n = 0;
};

LogMean log_mean(const std::vector<double>& x) {
  LogMean m;
  m.n = static_cast<int>(x.size());
  if (m.n == 0) return m;
  // Identical ratios give exactly that ratio and a zero-width interval (a sum divided back
  // could be off by a rounding step).
  if (std::all_of(x.begin(), x.end(), [&](double v) { return v == x[0]; })) {
    m.mean = x[0];
    m.var = m.n < 2 ? kInf : 0;
    m.df = m.n - 1;
    return m;
  }
  double sum = 0;
  for (double v : x) sum += v;
  m.mean = sum / m.n;
  if (m.n < 2) {
    m.var = kInf;
    return m;
  }
  double ss = 0;
  for (double v : x) ss += (v - m.mean) * (v - m.mean);
  m.var = ss / (m.n - 1) / m.n;
  m.df = m.n - 1;
  return m;
}

// Clamps a confidence into (0, 1); a nonsense value falls back to 95%.
double sane_confidence(double c) {
  return (std::isfinite(c) && c > 0 && c < 1) ? c : 0.95;
}

SpeedupInterval interval_of(double mean, double var, double df, int batches, double confidence) {
  SpeedupInterval out;
  out.confidence = confidence;
  out.batches = batches;
  out.speedup = std::exp(mean);
  if (!std::isfinite(var) || df <= 0) {
    out.lo = 0;
    out.hi = kInf;
    return out;
  }
  double half = var > 0 ? student_t_quantile(0.5 + confidence / 2, df) * std::sqrt(var) : 0.0;
  out.lo = std::exp(mean - half);
  out.hi = std::exp(mean + half);
  return out;
}

// The continued fraction of the regularized incomplete beta function (modified Lentz), valid
// for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 20000; ++m) {
    double m2 = 2.0 * m;
    double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < kEps) break;
  }
  return h;
}

// The regularized incomplete beta function I_x(a, b).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

// P(T <= t) for t >= 0: 1 - I_{df/(df+t^2)}(df/2, 1/2) / 2.
double student_t_cdf_upper_half(double t, double df) {
  return 1 - 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

}  // namespace

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  // Closed forms for 1 and 2 degrees of freedom (the cases with the widest tails).
  if (df == 1) return std::tan(std::numbers::pi * (p - 0.5));
  if (df == 2) return (2 * p - 1) / std::sqrt(2 * p * (1 - p));
  // Otherwise bisection on the CDF (monotone, so it cannot fail); past 1e6 degrees of freedom
  // the t and normal quantiles agree to ~1e-6 and the beta fraction gets slow.
  auto cdf = [df](double t) {
    return std::isfinite(df) && df < 1e6 ? student_t_cdf_upper_half(t, df) : normal_cdf(t);
  };
  double lo = 0, hi = 1;
  while (cdf(hi) < p && hi < 1e12) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    double mid = 0.5 * (lo + hi);
    (cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

SpeedupInterval shape_speedup(const std::vector<BatchPair>& batches, double confidence) {
  confidence = sane_confidence(confidence);
  LogMean m = log_mean(log_ratios(batches));
  if (m.n == 0) {
    SpeedupInterval none;
    none.confidence = confidence;
    return none;
  }
  return interval_of(m.mean, m.var, m.df, m.n, confidence);
}

SpeedupInterval paired_speedup(const std::vector<ShapePairs>& shapes, double confidence) {
  confidence = sane_confidence(confidence);
  std::vector<LogMean> means;
  int batches = 0;
  for (const ShapePairs& s : shapes) {
    LogMean m = log_mean(log_ratios(s.batches));
    if (m.n == 0) continue;
    means.push_back(m);
    batches += m.n;
  }
  if (means.empty()) {
    SpeedupInterval none;
    none.confidence = confidence;
    return none;
  }
  // mean = (1/S) sum m_s; var = (1/S^2) sum var_s for independent shapes; df by
  // Welch-Satterthwaite: (sum w_s)^2 / sum (w_s^2 / df_s) with w_s = var_s / S^2.
  const double k = static_cast<double>(means.size());
  double mean = 0, var = 0, df_denominator = 0;
  bool unbounded = false;
  for (const LogMean& m : means) {
    mean += m.mean / k;
    if (!std::isfinite(m.var)) {
      unbounded = true;
      continue;
    }
    double w = m.var / (k * k);
    var += w;
    df_denominator += w * w / m.df;
  }
  if (unbounded) return interval_of(mean, kInf, 0, batches, confidence);
  // All shapes without spread: the interval has zero width whatever the df.
  double df = df_denominator > 0 ? var * var / df_denominator : batches - k;
  return interval_of(mean, var, std::max(df, 1.0), batches, confidence);
}

bool pairs_converged(const std::vector<BatchPair>& batches, double rel_halfwidth, int min_batches) {
  SpeedupInterval s = shape_speedup(batches);
  if (s.batches < std::max(min_batches, 2)) return false;
  if (!(s.lo > 0) || !std::isfinite(s.hi)) return false;
  return std::log(s.hi / s.lo) / 2 < rel_halfwidth;
}

double log_standard_error(const SpeedupInterval& interval) {
  if (interval.batches < 2 || !(interval.lo > 0) || !std::isfinite(interval.hi) ||
      interval.hi < interval.lo)
    return kInf;
  double width = std::log(interval.hi / interval.lo);
  if (width <= 0) return 0;
  double t = student_t_quantile(0.5 + sane_confidence(interval.confidence) / 2,
                                static_cast<double>(interval.batches - 1));
  return width / (2 * t);
}

bool clearly_faster(const SpeedupInterval& a, const SpeedupInterval& b) {
  if (!(a.speedup > 0) || !(b.speedup > 0)) return false;
  double diff = std::log(a.speedup / b.speedup);
  if (!(diff > 0)) return false;
  double sa = log_standard_error(a), sb = log_standard_error(b);
  if (!std::isfinite(sa) || !std::isfinite(sb)) return false;  // an unbounded side: unclear
  double se = std::sqrt(sa * sa + sb * sb);
  if (se == 0) return true;
  // df of the difference by Welch-Satterthwaite, each side with the df log_standard_error used.
  double da = a.batches - 1, db = b.batches - 1;
  double va = sa * sa, vb = sb * sb;
  double df = (va + vb) * (va + vb) / (va * va / da + vb * vb / db);
  double confidence = std::max(sane_confidence(a.confidence), sane_confidence(b.confidence));
  double t = student_t_quantile(0.5 + confidence / 2, std::max(df, 1.0));
  return diff - t * se > 0;
}

bool faster_than(const std::optional<double>& a_speedup,
                 const std::optional<SpeedupInterval>& a_interval,
                 const std::optional<double>& b_speedup,
                 const std::optional<SpeedupInterval>& b_interval) {
  if (!a_speedup) return false;
  if (!b_speedup) return true;
  if (a_interval && b_interval) return clearly_faster(*a_interval, *b_interval);
  return *a_speedup > *b_speedup;
}

std::string interval_text(const SpeedupInterval& interval, int decimals) {
  if (!std::isfinite(interval.hi)) return strprintf("[%.*f-inf]", decimals, interval.lo);
  return strprintf("[%.*f-%.*f]", decimals, interval.lo, decimals, interval.hi);
}

nlohmann::json interval_json(const SpeedupInterval& interval) {
  return {{"speedup", interval.speedup},
          {"lo", interval.lo},
          {"hi", std::isfinite(interval.hi) ? nlohmann::json(interval.hi) : nlohmann::json()},
          {"confidence", interval.confidence},
          {"batches", interval.batches}};
}

nlohmann::json pairs_json(const std::vector<ShapePairs>& shapes) {
  nlohmann::json out = nlohmann::json::object();
  for (const ShapePairs& s : shapes) {
    nlohmann::json batches = nlohmann::json::array();
    for (const BatchPair& b : s.batches) {
      nlohmann::json pair = {{"candidate_ms", b.candidate_ms}, {"reference_ms", b.reference_ms}};
      if (b.probe) pair["probe"] = true;
      batches.push_back(std::move(pair));
    }
    out[s.shape] = std::move(batches);
  }
  return out;
}

}  // namespace kf
