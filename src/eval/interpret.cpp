// Turns what the test child did (its exit, its result file) into a verdict, a reason and timings.
#include "eval/interpret.h"

#include <algorithm>
#include <cmath>

#include "util/strings.h"

namespace kf {
namespace {

bool looks_like_compile_error(const std::string& reason) {
  std::string r = to_lower(reason);
  return r.find("build failed") != std::string::npos ||
         r.find("clbuildprogram") != std::string::npos ||
         r.find("compile error") != std::string::npos ||
         r.find("compilation failed") != std::string::npos;
}

}  // namespace

std::string json_text(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

double json_number(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return 0;
  double v = it->get<double>();
  return std::isfinite(v) ? v : 0;
}

bool faster_on_a_busy_machine(const EvalResult& result) {
  if (result.verdict != kCorrect || !result.speedup_interval) return false;
  bool busy = false;
  for (const auto& f : result.flags) busy = busy || json_text(f, "flag") == "machine_busy";
  return busy && result.speedup_interval->lo > 1;
}

bool is_suspect_flag(const std::string& flag) {
  return flag == "faster_than_roofline" || flag == "device_time_exceeds_host_time" ||
         flag == "reported_time_exceeds_wall_time" || flag == "implausible_speedup" ||
         flag == "wrong_after_timing" || flag == "input_modified" ||
         flag == "wrong_in_timed_call" || flag == "thread_outlived_call";
}

void add_flag(EvalResult& result, const std::string& flag, const std::string& detail,
              bool suspect) {
  for (const auto& f : result.flags)
    if (f.value("flag", "") == flag) return;
  result.flags.push_back({{"flag", flag}, {"detail", detail}, {"suspect", suspect}});
}

void interpret_test_run(const ProcessResult& proc, const nlohmann::json& result, EvalResult& out) {
  // The result file is written inside the candidate's process, so it is read as untrusted: a
  // value of the wrong type is skipped, never thrown on (nlohmann's value() and get() throw).
  bool have_result = result.is_object() && result.contains("status");
  if (have_result) out.harness = result;

  if (have_result) {
    if (auto flags = result.find("flags"); flags != result.end() && flags->is_array()) {
      // add_flag looks for repeats: a bounded count keeps a flood of flags from going quadratic.
      constexpr size_t kMaxFlags = 64;
      for (size_t i = 0; i < flags->size() && i < kMaxFlags; ++i) {
        const nlohmann::json& f = (*flags)[i];
        std::string name = json_text(f, "flag");
        if (!name.empty()) add_flag(out, name, json_text(f, "detail"), is_suspect_flag(name));
      }
    }
    if (auto phases = result.find("phase_seconds"); phases != result.end()) {
      out.correctness_s = json_number(*phases, "correctness");
      out.benchmark_s = json_number(*phases, "benchmark");
    }
    if (auto stats = result.find("stats"); stats != result.end() && stats->is_object()) {
      for (const auto& [shape, s] : stats->items()) {
        ShapeTiming t;
        t.median_ms = json_number(s, "median_ms");
        t.mean_ms = json_number(s, "mean_ms");
        t.min_ms = json_number(s, "min_ms");
        t.std_ms = json_number(s, "std_ms");
        t.n = static_cast<int>(std::clamp(json_number(s, "n"), 0.0, 1e9));
        out.timings[shape] = t;
      }
    }
    if (auto timings = result.find("timings"); timings != result.end() && timings->is_object()) {
      for (const auto& [shape, samples] : timings->items()) {
        if (!samples.is_array()) continue;
        std::vector<double>& kept = out.timings[shape].samples_ms;
        for (const auto& v : samples)
          if (v.is_number()) kept.push_back(v.get<double>());
      }
    }
  }

  // A kill or crash decides first: the result file may predate it.
  if (proc.timed_out || proc.inactive) {
    out.verdict = kRuntimeError;
    out.reason =
        proc.timed_out
            ? strprintf("timed out after %.0f s (test_timeout): a hang or far too slow",
                        proc.limit_s)
            : strprintf("no output for %.0f s (inactivity timeout): likely a hang", proc.limit_s);
    return;
  }
  if (!proc.started) {
    out.verdict = kRuntimeError;
    out.reason = "the test binary could not be started: " + proc.start_error;
    return;
  }
  std::string status = json_text(result, "status");
  std::string reason = json_text(result, "reason");
  if (proc.term_signal != 0) {
    out.verdict = kRuntimeError;
    out.reason = "crashed: " + proc.describe();
    if (status == "pass") out.reason += " (after passing the correctness phase)";
    return;
  }
  if (!have_result) {
    out.verdict = proc.exit_code == 1 ? kWrongValues : kRuntimeError;
    out.reason = "the test binary wrote no result file (" + proc.describe() + ")";
    return;
  }
  if (status == "pass" && proc.exit_code == 0) {
    out.verdict = kCorrect;
    out.reason = reason.empty() ? "correct on every shape and seed" : reason;
  } else if (status == "wrong") {
    out.verdict = kWrongValues;
    out.reason = reason.empty() ? "wrong values" : reason;
  } else if (status == "shape_mismatch") {
    out.verdict = kShapeMismatch;
    out.reason = reason.empty() ? "output shape mismatch" : reason;
  } else if (status == "compile_error" ||
             (status == "error" &&
              (json_text(result, "error_kind") == "compile" || looks_like_compile_error(reason)))) {
    // Run-time compiled kernels (OpenCL) fail to build inside the test child; the harness marks
    // that error_kind "compile".
    out.verdict = kCompileError;
    out.reason = reason.empty() ? "the kernel did not compile" : reason;
  } else {
    out.verdict = kRuntimeError;
    out.reason = reason.empty() ? "runtime error (" + proc.describe() + ")" : reason;
    if (status == "pass")
      out.reason = "the test binary exited with " + proc.describe() + " after passing";
  }
}

std::optional<double> geomean_speedup(const std::map<std::string, ShapeTiming>& reference,
                                      const std::map<std::string, ShapeTiming>& candidate) {
  double log_sum = 0;
  int n = 0;
  for (const auto& [shape, c] : candidate) {
    auto r = reference.find(shape);
    if (r == reference.end() || r->second.median_ms <= 0 || c.median_ms <= 0) continue;
    log_sum += std::log(r->second.median_ms / c.median_ms);
    ++n;
  }
  if (n == 0) return std::nullopt;
  return std::exp(log_sum / n);
}

}  // namespace kf
