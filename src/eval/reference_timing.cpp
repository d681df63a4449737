// Reference timings kept across jobs: the key, the short re-check and what the job says about it.
#include "eval/reference_timing.h"

#include <algorithm>
#include <cmath>

#include "util/hash.h"
#include "util/strings.h"

namespace kf {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + mid));
}

// "2025-01-31T12:34:56.789Z" -> "2025-01-31 12:34 UTC"; other text as it is.
std::string readable_time(const std::string& iso) {
  if (iso.size() >= 16 && iso[10] == 'T')
    return iso.substr(0, 10) + " " + iso.substr(11, 5) + " UTC";
  return iso;
}

std::string percent(double fraction) {
  return strprintf("%.1f%%", 100 * std::fabs(fraction));
}

}  // namespace

nlohmann::json ReferenceTimingKey::to_json() const {
  return {{"version", version},   {"task_hash", task_hash},
          {"language", language}, {"gpu_arch", gpu_arch},
          {"settings", settings}, {"backend", backend},
          {"device", device},     {"device_arch", device_arch},
          {"timer", timer},       {"harness_version", harness_version},
          {"build", build}};
}

ReferenceTimingKey ReferenceTimingKey::from_json(const nlohmann::json& j) {
  ReferenceTimingKey k;
  if (!j.is_object()) return k;
  // A key without a version predates them all: never the current one.
  auto v = j.find("version");
  k.version = v != j.end() && v->is_number_integer() ? v->get<int>() : 0;
  auto text = [&](const char* name) {
    auto it = j.find(name);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  k.task_hash = text("task_hash");
  k.language = text("language");
  k.gpu_arch = text("gpu_arch");
  if (auto it = j.find("settings"); it != j.end() && it->is_object()) k.settings = *it;
  k.backend = text("backend");
  k.device = text("device");
  k.device_arch = text("device_arch");
  k.timer = text("timer");
  k.harness_version = text("harness_version");
  k.build = text("build");
  return k;
}

std::string ReferenceTimingKey::digest() const {
  // nlohmann::json keeps object keys sorted: the same key always dumps to the same text.
  return sha256_hex(to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

bool ReferenceTimingKey::same_setup(const ReferenceTimingKey& o) const {
  return version == o.version && task_hash == o.task_hash && language == o.language &&
         gpu_arch == o.gpu_arch && settings == o.settings;
}

std::string ReferenceTimingKey::run_differences(const ReferenceTimingKey& o) const {
  std::vector<std::string> differ;
  if (backend != o.backend) differ.push_back("backend");
  if (device != o.device) differ.push_back("device");
  if (device_arch != o.device_arch) differ.push_back("device arch");
  if (timer != o.timer) differ.push_back("timer");
  if (harness_version != o.harness_version) differ.push_back("harness version");
  if (build != o.build) differ.push_back("build (compiler, flags or harness library)");
  return join(differ, ", ");
}

ReferenceTimingKey reference_timing_setup(const std::string& task_hash, const EvalOptions& o) {
  ReferenceTimingKey k;
  k.task_hash = task_hash;
  k.language = std::string(language_name(o.language));
  k.gpu_arch = o.arch.name + (o.arch.cuda_sm.empty() ? "" : " (" + o.arch.cuda_sm + ")");
  // The settings the harness's timing loop follows; the rest of eval_config does not change a
  // sample (seeds, hidden shapes, limits) or only flags one (the DRAM bound).
  k.settings = {{"noise_target", o.noise_target},         {"min_samples", o.min_samples},
                {"max_samples", o.max_samples},           {"time_budget", o.time_budget_s},
                {"warmup_min_time", o.warmup_min_time_s}, {"warmup_min_iters", o.warmup_min_iters},
                {"cold_samples", o.cold_samples}};
  return k;
}

ReferenceTimingKey reference_timing_key(ReferenceTimingKey k, const nlohmann::json& harness,
                                        const std::string& build_key) {
  auto text = [](const nlohmann::json& j, const char* name) {
    if (!j.is_object()) return std::string();
    auto it = j.find(name);
    // What the driver says is not always UTF-8; the key is JSON text.
    return it != j.end() && it->is_string() ? escape_invalid_utf8(it->get<std::string>())
                                            : std::string();
  };
  k.backend = text(harness, "backend");
  k.device = text(harness, "device");
  k.harness_version = text(harness, "harness_version");
  nlohmann::json info =
      harness.is_object() ? harness.value("device_info", nlohmann::json()) : nlohmann::json();
  k.device_arch = text(info, "arch");  // CUDA's sm_XX
  // "cupti (libcupti.so.12)" or "events (why)": which timer, not where it was found.
  std::string timer = text(info, "timer");
  k.timer = timer.substr(0, timer.find(' '));
  k.build = build_key;
  return k;
}

nlohmann::json timings_to_json(const std::map<std::string, ShapeTiming>& timings) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [shape, t] : timings)
    out[shape] = {{"median_ms", t.median_ms},
                  {"mean_ms", t.mean_ms},
                  {"min_ms", t.min_ms},
                  {"std_ms", t.std_ms},
                  {"n", t.n},
                  {"samples_ms", t.samples_ms}};
  return out;
}

std::map<std::string, ShapeTiming> timings_from_json(const nlohmann::json& j) {
  std::map<std::string, ShapeTiming> out;
  if (!j.is_object()) return out;
  auto number = [](const nlohmann::json& o, const char* name) {
    auto it = o.find(name);
    return it != o.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  for (const auto& [shape, o] : j.items()) {
    if (!o.is_object()) continue;
    ShapeTiming t;
    t.median_ms = number(o, "median_ms");
    t.mean_ms = number(o, "mean_ms");
    t.min_ms = number(o, "min_ms");
    t.std_ms = number(o, "std_ms");
    t.n = static_cast<int>(std::clamp(number(o, "n"), 0.0, 1e9));
    if (auto s = o.find("samples_ms"); s != o.end() && s->is_array())
      for (const auto& v : *s)
        if (v.is_number()) t.samples_ms.push_back(v.get<double>());
    out[shape] = std::move(t);
  }
  return out;
}

std::vector<std::string> recheck_harness_args(const EvalOptions& o) {
  double budget = std::min(o.time_budget_s, std::clamp(0.1 * o.time_budget_s, 0.1, 0.25));
  int max_samples = std::max(o.min_samples, std::min(o.max_samples, 200));
  return {"--time-budget", strprintf("%g", budget), "--max-samples", std::to_string(max_samples)};
}

double median_noise(const ShapeTiming& t) {
  if (t.samples_ms.size() >= 3) {
    double med = median_of(t.samples_ms);
    if (!(med > 0)) return 0;
    std::vector<double> dev;
    dev.reserve(t.samples_ms.size());
    for (double s : t.samples_ms) dev.push_back(std::fabs(s - med));
    double sigma = 1.4826 * median_of(std::move(dev));
    return 1.2533 * sigma / std::sqrt(double(t.samples_ms.size())) / med;
  }
  if (t.n > 0 && t.median_ms > 0) return 1.2533 * t.std_ms / std::sqrt(double(t.n)) / t.median_ms;
  return 0;
}

TimingRecheck recheck_timings(const std::map<std::string, ShapeTiming>& kept,
                              const std::map<std::string, ShapeTiming>& recheck, double floor) {
  const double ceiling = std::max(kRecheckCeiling, floor);
  TimingRecheck r;
  for (const auto& [shape, t] : recheck)
    if (!kept.count(shape)) {
      r.problem = "shape " + shape + " is not in the kept timing";
      r.worst_shape = shape;
      return r;
    }
  if (kept.empty()) {
    r.problem = "the kept timing has no shape";
    return r;
  }
  r.agree = true;
  double worst = -1;
  for (const auto& [shape, k] : kept) {
    auto it = recheck.find(shape);
    if (it == recheck.end()) {
      r.agree = false;
      r.problem = "shape " + shape + " was not re-measured";
      r.worst_shape = shape;
      return r;
    }
    ShapeRecheck s;
    s.shape = shape;
    s.kept_ms = k.median_ms;
    s.recheck_ms = it->second.median_ms;
    s.recheck_n = it->second.n;
    if (!(s.kept_ms > 0) || !(s.recheck_ms > 0)) {
      r.agree = false;
      r.problem = "shape " + shape + " has no median to compare";
      r.worst_shape = shape;
      r.shapes.push_back(s);
      return r;
    }
    s.rel_diff = s.recheck_ms / s.kept_ms - 1;
    double a = median_noise(k), b = median_noise(it->second);
    s.noise = std::sqrt(a * a + b * b);
    s.tolerance = std::min(ceiling, std::max(floor, kRecheckSigmas * s.noise));
    bool within = std::fabs(s.rel_diff) <= s.tolerance;
    // The worst is the first shape that failed, else the one furthest off.
    if (r.agree && (!within || std::fabs(s.rel_diff) > worst)) {
      worst = std::fabs(s.rel_diff);
      r.worst_shape = shape;
      r.worst_rel_diff = s.rel_diff;
    }
    if (!within) r.agree = false;
    r.shapes.push_back(s);
  }
  return r;
}

const char* reference_timing_source_name(ReferenceTimingOutcome::Source source) {
  switch (source) {
    case ReferenceTimingOutcome::Source::kNone:
      return "none";
    case ReferenceTimingOutcome::Source::kTimed:
      return "timed";
    case ReferenceTimingOutcome::Source::kFresh:
      return "timed_fresh";
    case ReferenceTimingOutcome::Source::kReused:
      return "reused";
    case ReferenceTimingOutcome::Source::kRetimed:
      return "retimed";
  }
  return "?";
}

std::string ReferenceTimingOutcome::progress_text() const {
  std::string out;
  switch (source) {
    case Source::kNone:
      return "";
    case Source::kTimed:
      out = "; timed, no kept timing to reuse";
      break;
    case Source::kFresh:
      out = "; timed afresh (eval_config.reuse_reference_timing is false)";
      break;
    case Source::kReused:
      out = "; timing reused from job " + from_job + " of " + readable_time(timed_at) +
            ", re-checked within " + percent(recheck.worst_rel_diff);
      break;
    case Source::kRetimed:
      out = recheck.problem.empty()
                ? "; kept timing disagreed by " + percent(recheck.worst_rel_diff) + " on shape " +
                      recheck.worst_shape + ", re-timed"
                : "; kept timing did not fit (" + recheck.problem + "), re-timed";
      break;
  }
  for (const std::string& n : notes) out += "; " + n;
  return out;
}

std::string ReferenceTimingOutcome::log_text() const {
  if (source == Source::kNone) return "";
  std::string text = progress_text();
  std::string out = (text.size() > 2 ? text.substr(2) : text) + "\n";
  if (!recheck.shapes.empty()) {
    out += strprintf("%-28s %12s %12s %8s %9s %5s\n", "shape", "kept ms", "re-check ms", "diff",
                     "tolerance", "n");
    for (const ShapeRecheck& s : recheck.shapes)
      out += strprintf("%-28s %12.4f %12.4f %+7.1f%% %8.1f%% %5d\n", s.shape.c_str(), s.kept_ms,
                       s.recheck_ms, 100 * s.rel_diff, 100 * s.tolerance, s.recheck_n);
  }
  return out;
}

nlohmann::json ReferenceTimingOutcome::to_json() const {
  if (source == Source::kNone) return nullptr;
  nlohmann::json j = {
      {"source", reference_timing_source_name(source)}, {"key", digest}, {"notes", notes}};
  if (source == Source::kReused || source == Source::kRetimed) {
    j["from_job"] = from_job;
    j["timed_at"] = timed_at;
    nlohmann::json shapes = nlohmann::json::object();
    for (const ShapeRecheck& s : recheck.shapes)
      shapes[s.shape] = {{"kept_median_ms", s.kept_ms}, {"recheck_median_ms", s.recheck_ms},
                         {"rel_diff", s.rel_diff},      {"noise", s.noise},
                         {"tolerance", s.tolerance},    {"recheck_n", s.recheck_n}};
    j["recheck"] = {{"agree", recheck.agree},
                    {"worst_shape", recheck.worst_shape},
                    {"worst_rel_diff", recheck.worst_rel_diff},
                    {"problem", recheck.problem},
                    {"shapes", shapes}};
    if (!recheck_timings.empty()) j["recheck_runtimes"] = timings_to_json(recheck_timings);
  }
  return j;
}

}  // namespace kf
