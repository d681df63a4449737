// Evaluation on several archs in one job (see multi_arch.h).
#include "eval/multi_arch.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "util/strings.h"

namespace kf {

namespace fs = std::filesystem;

namespace {

// A directory name for an arch entry ("cpu/basic" -> "cpu-basic").
std::string lane_dir(const std::string& arch) {
  std::string out = arch;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_') c = '-';
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

Result<ArchTarget> parse_arch_target(const std::string& entry) {
  auto bad = [&](const std::string& why) {
    return Result<ArchTarget>::error(
        "arch_targets entry '" + entry + "': " + why +
        ". Write NAME=cuda:N (CUDA device N) or NAME=opencl:PLATFORM[:DEVICE] (the OpenCL "
        "platform whose name contains PLATFORM, and its device number, from 0), e.g. "
        "h100=cuda:0, cpu=opencl:portable:0");
  };
  size_t eq = entry.find('=');
  if (eq == std::string::npos) return bad("no '='");
  ArchTarget t;
  t.arch = trim(entry.substr(0, eq));
  t.spec = trim(entry.substr(eq + 1));
  if (t.arch.empty()) return bad("no arch name before '='");
  std::vector<std::string> parts = split(t.spec, ':');
  for (std::string& p : parts) p = trim(p);
  std::string kind = parts.empty() ? "" : to_lower(parts[0]);
  if (kind == "cuda") {
    if (parts.size() != 2 || !all_digits(parts[1])) return bad("cuda needs one device number");
    t.env = {{"CUDA_VISIBLE_DEVICES", parts[1]}};
    return t;
  }
  if (kind == "opencl") {
    if (parts.size() < 2 || parts.size() > 3 || parts[1].empty())
      return bad("opencl needs a platform name and may have a device number");
    t.env = {{"KF_OPENCL_PLATFORM", parts[1]}};
    if (parts.size() == 3) {
      if (!all_digits(parts[2]))
        return bad("the OpenCL device number '" + parts[2] + "' is not a number");
      t.env.push_back({"KF_OPENCL_DEVICE", parts[2]});
    }
    return t;
  }
  return bad("unknown target kind '" + (parts.empty() ? std::string() : parts[0]) + "'");
}

std::string arch_profile_name(const std::string& arch) {
  return arch.substr(0, arch.find('/'));
}

EvalResult merge_arch_results(std::vector<EvalResult> per_arch) {
  EvalResult m;
  if (per_arch.empty()) return m;
  m.verdict = kCorrect;
  for (const EvalResult& r : per_arch) m.verdict = std::min(m.verdict, r.verdict);
  for (const EvalResult& r : per_arch) {
    if (!r.environment_error.empty()) {
      m.environment_error = r.arch + ": " + r.environment_error;
      break;
    }
  }
  const EvalResult& first = per_arch.front();
  if (m.verdict != kCorrect) {
    for (const EvalResult& r : per_arch) {
      if (r.verdict != m.verdict) continue;
      m.reason = "on " + r.arch + ": " + r.reason;
      break;
    }
  } else {
    // Each arch's speedup is already the geometric mean over its shapes: weighing it by its
    // shape count gives the mean over every (arch, shape).
    double weight = 0, log_s = 0, log_lo = 0, log_hi = 0, missed = 0;
    bool speeds = true, intervals = true;
    int batches = 0;
    std::vector<std::string> parts;
    for (const EvalResult& r : per_arch) {
      if (!r.speedup || !(*r.speedup > 0)) {
        speeds = false;
        continue;
      }
      double w = std::max<double>(1, static_cast<double>(r.timings.size()));
      weight += w;
      log_s += w * std::log(*r.speedup);
      parts.push_back(strprintf("%s %.3gx", r.arch.c_str(), *r.speedup));
      if (!r.speedup_interval) {
        intervals = false;
        continue;
      }
      const SpeedupInterval& i = *r.speedup_interval;
      log_lo += i.lo > 0 ? w * std::log(i.lo) : -std::numeric_limits<double>::infinity();
      log_hi += std::isfinite(i.hi) ? w * std::log(i.hi) : std::numeric_limits<double>::infinity();
      missed += 1 - i.confidence;
      batches += i.batches;
    }
    if (speeds && weight > 0) {
      m.speedup = std::exp(log_s / weight);
      if (intervals)
        m.speedup_interval =
            SpeedupInterval{*m.speedup, std::exp(log_lo / weight), std::exp(log_hi / weight),
                            std::max(0.0, 1 - missed), batches};
    }
    m.reason = first.reason + (parts.empty() ? "" : "; per arch: " + join(parts, ", "));
  }
  for (const EvalResult& r : per_arch) {
    for (nlohmann::json f : r.flags) {
      f["detail"] = r.arch + ": " + f.value("detail", "");
      m.flags.push_back(std::move(f));
    }
    m.eval_log += "== arch " + r.arch + ": " + std::string(verdict_name(r.verdict)) +
                  (r.speedup ? strprintf(", speedup %.3fx", *r.speedup) : "") + "\n" + r.eval_log;
    if (!m.eval_log.empty() && m.eval_log.back() != '\n') m.eval_log += "\n";
    m.build_s += r.build_s;
    m.test_s += r.test_s;
    m.screen_s += r.screen_s;
    m.check_s += r.check_s;
    m.sanitize_s += r.sanitize_s;
    m.profile_s += r.profile_s;
    m.correctness_s += r.correctness_s;
    m.benchmark_s += r.benchmark_s;
    m.build_steps_run += r.build_steps_run;
    m.build_steps_cached += r.build_steps_cached;
    if (!r.profile.is_null()) m.profile[r.arch] = r.profile;
  }
  m.harness = first.harness;
  m.dir = first.dir;
  m.binary = first.binary;
  m.template_results = first.template_results;
  m.template_params = first.template_params;
  m.fitness = eval_fitness(m);
  m.per_arch = std::move(per_arch);
  return m;
}

nlohmann::json arch_runtimes_json(const EvalResult& result, const std::string& gpu_arch) {
  nlohmann::json out = nlohmann::json::object();
  if (result.per_arch.empty()) {
    out[gpu_arch] = result.runtimes_json();
    return out;
  }
  for (const EvalResult& r : result.per_arch) out[r.arch] = r.runtimes_json();
  return out;
}

ArchEvaluators::ArchEvaluators(const TaskPackage& task, const EvalOptions& options,
                               const std::vector<ArchLane>& lanes, const Toolchain& toolchain,
                               ProcessRunner& runner, const ArchLane* reference) {
  for (const ArchLane& lane : lanes) {
    EvalOptions o = options;
    o.arch = lane.arch;
    o.device_env = lane.env;
    if (reference != nullptr && reference->name != lane.name) {
      o.reference_arch_name = reference->name;
      o.reference_arch = reference->arch;
      o.reference_device_env = reference->env;
    }
    if (lanes.size() > 1) o.work_root = options.work_root / lane_dir(lane.name);
    evaluators_.push_back(std::make_unique<Evaluator>(task, std::move(o), toolchain, runner));
    names_.push_back(lane.name);
  }
}

Result<std::vector<EvalResult>> ArchEvaluators::prepare_references(size_t* failed_lane) {
  std::vector<EvalResult> refs;
  for (size_t i = 0; i < evaluators_.size(); ++i) {
    auto ref = evaluators_[i]->prepare_reference();
    if (!ref) {
      if (failed_lane != nullptr) *failed_lane = i;
      if (evaluators_.size() == 1) return ref.status();
      return Result<std::vector<EvalResult>>::error("on arch " + names_[i] + ": " + ref.message());
    }
    ref->arch = names_[i];
    refs.push_back(std::move(*ref));
  }
  return refs;
}

EvalResult ArchEvaluators::evaluate(const std::string& work_id,
                                    const std::map<std::string, std::string>& changed) {
  std::vector<EvalResult> parts;
  for (size_t i = 0; i < evaluators_.size(); ++i) {
    parts.push_back(evaluators_[i]->evaluate(work_id, changed));
    parts.back().arch = names_[i];
    // The machine failed, or the code did not build (the same build serves every arch): the
    // other archs would say nothing more.
    if (!parts.back().environment_error.empty() || parts.back().verdict <= kCompileError) break;
  }
  if (evaluators_.size() == 1) return std::move(parts.front());
  return merged(std::move(parts));
}

EvalResult ArchEvaluators::merged(std::vector<EvalResult> parts) const {
  bool partial = parts.size() < evaluators_.size();
  EvalResult m = merge_arch_results(std::move(parts));
  if (partial) m.eval_log += "(not evaluated on the remaining archs: the result above decides)\n";
  return m;
}

template <typename F>
void ArchEvaluators::each_lane(EvalResult& result, F&& f) {
  if (result.per_arch.empty()) {
    f(*evaluators_.front(), result);
    return;
  }
  std::vector<EvalResult> parts = std::move(result.per_arch);
  for (size_t i = 0; i < parts.size() && i < evaluators_.size(); ++i) f(*evaluators_[i], parts[i]);
  result = merged(std::move(parts));
}

void ArchEvaluators::sanitize(EvalResult& result) {
  each_lane(result, [](Evaluator& e, EvalResult& r) { e.sanitize(r); });
}

void ArchEvaluators::profile(EvalResult& result) {
  each_lane(result, [](Evaluator& e, EvalResult& r) {
    if (r.verdict == kCorrect) e.profile(r);
  });
}

}  // namespace kf
