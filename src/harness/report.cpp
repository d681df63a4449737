// Result JSON ("kernelfoundry-harness-result", version 1) and its atomic write.
#include "harness/report.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "kernelfoundry/harness.h"

namespace kernelfoundry {

const char* status_name(Status status) {
  switch (status) {
    case Status::Pass:
      return "pass";
    case Status::Wrong:
      return "wrong";
    case Status::ShapeMismatch:
      return "shape_mismatch";
    case Status::Error:
      return "error";
  }
  return "error";
}

int exit_code(Status status) {
  switch (status) {
    case Status::Pass:
      return 0;
    case Status::Wrong:
    case Status::ShapeMismatch:
      return 1;
    case Status::Error:
      return 2;
  }
  return 2;
}

void Report::fail(Status s, const std::string& why, const std::string& kind) {
  if (failed()) return;
  status = s;
  reason = why;
  error_kind = s == Status::Error ? kind : "";
}

void Report::add_flag(const std::string& flag, const std::string& detail) {
  for (Flag& f : flags) {
    if (f.flag == flag) {
      ++f.count;
      return;
    }
  }
  flags.push_back(Flag{flag, detail, 1});
}

namespace {

using Json = nlohmann::ordered_json;

// What timed a shape's samples: "cupti" (kernel records), "events" (CUDA or OpenCL events),
// "mixed: K of N from cupti", or "host" (the clock around the call: the host backend's, or a
// device backend's without timestamps).
std::string timer_name(const std::string& backend, const ShapeTiming& t) {
  if (!t.device_timed || backend == "host") return "host";
  long n = long(t.device_ms.size());
  if (t.cupti_samples == 0) return "events";
  if (t.cupti_samples >= n) return "cupti";
  return "mixed: " + std::to_string(t.cupti_samples) + " of " + std::to_string(n) + " from cupti";
}

// JSON has no NaN/Inf: write null instead.
Json number(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

Json parse_or_text(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? Json(text) : j;
}

Json case_json(const CaseRecord& c) {
  Json j;
  j["phase"] = c.phase;
  j["shape"] = c.shape;
  j["seed"] = c.seed;
  j["call"] = c.call;
  j["output"] = c.output;
  j["status"] = status_name(c.status);
  j["message"] = c.message;
  j["mismatches"] = c.compared ? c.cmp.mismatches : 0;
  j["total"] = c.compared ? c.cmp.total : 0;
  j["max_abs"] = c.compared ? number(c.cmp.max_abs) : Json(0.0);
  j["max_rel"] = c.compared ? number(c.cmp.max_rel) : Json(0.0);
  j["cosine"] = c.compared ? number(c.cmp.cosine) : Json(nullptr);
  if (c.compared) {
    j["nonfinite"] = c.cmp.nonfinite;
    j["rtol"] = c.tol.rtol;
    j["atol"] = c.tol.atol;
    j["ratio"] = c.tol.ratio;
    if (c.cmp.first_bad >= 0) {
      j["first_bad"] = c.cmp.first_bad;
      j["expected"] = number(c.cmp.examples.front().expected);
      j["actual"] = number(c.cmp.examples.front().actual);
    }
  }
  return j;
}

}  // namespace

std::string report_json(const Report& r) {
  Json j;
  j["format"] = "kernelfoundry-harness-result";
  j["version"] = 1;
  j["harness_version"] = harness_version();
  j["impl"] = r.impl;
  j["backend"] = r.backend;
  j["device"] = r.device;
  Json info = Json::object();
  for (const auto& [key, value] : r.device_info) info[key] = value;
  j["device_info"] = info;
  if (!r.finished && !r.failed()) {
    j["status"] = "error";
    j["reason"] = "the task binary stopped before it finished (crash, timeout or kill)";
    j["error_kind"] = "incomplete";
  } else {
    j["status"] = status_name(r.status);
    j["reason"] = r.reason;
    if (r.status == Status::Error) j["error_kind"] = r.error_kind;
  }
  if (!r.error_log.empty()) j["error_log"] = r.error_log;
  j["finished"] = r.finished;
  j["benchmark"] = r.benchmark;
  j["cold"] = r.cold;
  j["params"] = parse_or_text(r.params_json);
  j["template_params"] = parse_or_text(r.template_params_json);
  j["argv"] = r.argv;
  j["env_switches"] = r.env_switches;

  Json cases = Json::array();
  for (const CaseRecord& c : r.cases) cases.push_back(case_json(c));
  j["cases"] = cases;

  Json flags = Json::array();
  for (const Flag& f : r.flags)
    flags.push_back({{"flag", f.flag}, {"detail", f.detail}, {"count", f.count}});
  j["flags"] = flags;

  Json timings = Json::object(), stats = Json::object();
  for (const ShapeTiming& t : r.timings) {
    Json samples = Json::array();
    for (double ms : t.device_ms) samples.push_back(number(ms));
    timings[t.shape] = samples;
    const SampleStats& s = t.stats;
    double gbps = s.median > 0 ? t.bytes / (s.median * 1e-3) / 1e9 : 0;
    stats[t.shape] = {{"median_ms", number(s.median)},
                      {"mean_ms", number(s.mean)},
                      {"min_ms", number(s.min)},
                      {"max_ms", number(s.max)},
                      {"std_ms", number(s.stddev)},
                      {"n", s.n},
                      {"rel_sem", number(s.rel_sem)},
                      {"host_median_ms", number(t.host_median_ms)},
                      {"bytes", t.bytes},
                      {"gbps", number(gbps)},
                      {"converged", t.converged},
                      {"stop", stop_reason_name(t.stop)},
                      {"warmup_calls", t.warmup_calls},
                      {"device_timed", t.device_timed},
                      {"timer", timer_name(r.backend, t)}};
  }
  j["timings"] = timings;
  j["stats"] = stats;

  Json phases = Json::object();
  for (const auto& [phase, seconds] : r.phase_seconds) phases[phase] = seconds;
  j["phase_seconds"] = phases;
  j["sampled_ms_total"] = r.sampled_ms_total;
  // A reason may quote a compiler log or candidate output that is not UTF-8: replace those bytes
  // instead of throwing, so the result file is still written.
  return j.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string write_error_text(int err) {
  std::string text = std::strerror(err);
  switch (err) {
    case ENOSPC:
      return text + " (the disk is full)";
    case EDQUOT:
      return text + " (the disk quota is used up)";
    case EROFS:
      return text + " (the file system is read-only)";
    case EFBIG:
      return text + " (a file size limit, ulimit -f, was reached)";
    default:
      return text;
  }
}

bool write_report(const std::string& path, const Report& report, std::string* err) {
  std::string text = report_json(report);
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  // Every step is checked: on a full disk the data often fails only at fflush or fclose.
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    *err = "cannot write the result file " + path + ": " + write_error_text(errno);
    return false;
  }
  int error = 0;
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size()) error = errno ? errno : EIO;
  errno = 0;
  if (std::fflush(f) != 0 && error == 0) error = errno ? errno : EIO;
  errno = 0;
  if (std::fclose(f) != 0 && error == 0) error = errno ? errno : EIO;
  if (error == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    *err = "cannot write the result file " + path + ": " + write_error_text(error);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace kernelfoundry
