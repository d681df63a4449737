// perf stat's CSV, its figures per timed call, and the hints they support.
#include "eval/profile.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "util/strings.h"

namespace kf {

std::vector<PerfCount> parse_perf_stat(const std::string& text) {
  std::vector<PerfCount> out;
  for (const std::string& raw : split(text, '\n')) {
    std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    // value,unit,event,run time,percentage,metric value,metric unit
    std::vector<std::string> f = split(line, ',');
    if (f.size() < 3 || trim(f[2]).empty()) continue;
    PerfCount c;
    c.event = trim(f[2]);
    if (ends_with(c.event, ":u")) {
      c.user_only = true;
      c.event.resize(c.event.size() - 2);
    }
    c.unit = trim(f[1]);
    std::string value = trim(f[0]);
    if (value.empty() || value[0] == '<') {
      c.counted = false;  // <not supported>, <not counted>
    } else {
      char* end = nullptr;
      c.value = std::strtod(value.c_str(), &end);
      c.counted = end != value.c_str() && std::isfinite(c.value);
    }
    out.push_back(c);
  }
  return out;
}

const std::vector<std::string>& perf_events() {
  static const std::vector<std::string> kEvents = {
      "task-clock",   "context-switches", "cpu-migrations", "page-faults", "cycles",
      "instructions", "cache-references", "cache-misses",   "branches",    "branch-misses"};
  return kEvents;
}

ProfileSummary summarise_perf(const std::vector<PerfCount>& counts, const std::string& shape,
                              long calls, double wall_ms_per_call, int cores) {
  ProfileSummary s;
  std::map<std::string, double> v;
  std::vector<std::string> missing;
  const std::vector<std::string>& asked = perf_events();
  for (const PerfCount& c : counts) {
    // Only the events perf was asked for: the file lies in the candidate's work directory, and a
    // line it wrote there names nothing the prompt should repeat.
    if (std::find(asked.begin(), asked.end(), c.event) == asked.end()) continue;
    // Scheduler events happen in the kernel: counted in user space only they are always 0.
    if (c.user_only && (c.event == "context-switches" || c.event == "cpu-migrations")) continue;
    if (c.counted) {
      v[c.event] = c.value;
    } else {
      missing.push_back(c.event);
    }
  }
  if (calls <= 0 || v.empty()) {
    s.lines.push_back("perf stat counted nothing on shape " + shape);
    return s;
  }
  auto per_call = [&](const char* event) { return v.at(event) / double(calls); };
  s.metrics = {{"tool", "perf stat"}, {"shape", shape}, {"calls", calls}};
  nlohmann::json& m = s.metrics["per_call"] = nlohmann::json::object();
  for (const auto& [event, value] : v) m[event] = value / double(calls);
  if (!missing.empty()) s.metrics["not_counted"] = missing;

  std::string line =
      strprintf("perf stat over %ld timed calls of shape %s, per call:", calls, shape.c_str());
  double busy = 0;
  if (v.count("task-clock") != 0 && wall_ms_per_call > 0) {
    double cpu_ms = per_call("task-clock");
    busy = cpu_ms / wall_ms_per_call;
    s.metrics["cores_busy"] = busy;
    line += strprintf(" CPU time %.3g ms in %.3g ms (%.1f cores busy of %d)", cpu_ms,
                      wall_ms_per_call, busy, cores);
  }
  for (const char* e : {"context-switches", "cpu-migrations", "page-faults"})
    if (v.count(e) != 0) line += strprintf(", %s %.3g", e, per_call(e));
  s.lines.push_back(line);

  std::vector<std::string> hw;
  if (v.count("cycles") != 0 && v.count("instructions") != 0 && v.at("cycles") > 0) {
    double ipc = v.at("instructions") / v.at("cycles");
    s.metrics["ipc"] = ipc;
    hw.push_back(strprintf("IPC %.2f (%.3g instructions, %.3g cycles)", ipc,
                           per_call("instructions"), per_call("cycles")));
  }
  if (v.count("cache-references") != 0 && v.count("cache-misses") != 0 &&
      v.at("cache-references") > 0) {
    double rate = v.at("cache-misses") / v.at("cache-references");
    s.metrics["cache_miss_rate"] = rate;
    hw.push_back(strprintf("last-level cache misses %.1f%% of references (%.3g)", 100 * rate,
                           per_call("cache-misses")));
  }
  if (v.count("branches") != 0 && v.count("branch-misses") != 0 && v.at("branches") > 0) {
    double rate = v.at("branch-misses") / v.at("branches");
    s.metrics["branch_miss_rate"] = rate;
    hw.push_back(strprintf("branch misses %.2f%%", 100 * rate));
  }
  if (!hw.empty()) {
    s.lines.push_back(join(hw, "; "));
  } else if (!missing.empty()) {
    s.lines.push_back("hardware counters not counted here (" + join(missing, ", ") +
                      "): a VM without a PMU, or perf_event_paranoid; software counters only");
  }

  // Hints: only what the figures show.
  // From 64 a call (256 KiB of fresh pages): the harness's own copies between calls fault a few.
  if (v.count("page-faults") != 0 && per_call("page-faults") >= 64)
    s.lines.push_back(strprintf(
        "hint: %.3g page faults per call: the kernel touches memory it has not touched before on "
        "every call (an allocation per call?); allocate once, outside the timed work",
        per_call("page-faults")));
  if (busy > 0 && cores > 1 && busy < 0.75 * cores)
    s.lines.push_back(strprintf(
        "hint: %.1f of %d cores busy during a call: the work is not spread over all cores "
        "(serial parts, too few parallel tasks, or waiting on memory)",
        busy, cores));
  if (s.metrics.contains("ipc") && s.metrics["ipc"].get<double>() < 0.7)
    s.lines.push_back("hint: low IPC: the cores mostly wait, most likely on memory");
  return s;
}

ProfilerChoice parse_profiler_choice(const std::string& word) {
  if (word == "ncu") return ProfilerChoice::kNcu;
  if (word == "perf") return ProfilerChoice::kPerf;
  if (word == "none") return ProfilerChoice::kNone;
  return ProfilerChoice::kAuto;
}

const char* profiler_choice_name(ProfilerChoice choice) {
  switch (choice) {
    case ProfilerChoice::kNcu:
      return "ncu";
    case ProfilerChoice::kPerf:
      return "perf";
    case ProfilerChoice::kNone:
      return "none";
    case ProfilerChoice::kAuto:
      break;
  }
  return "auto";
}

std::string profiler_choice_problem(ProfilerChoice choice, Language language) {
  if (choice == ProfilerChoice::kNcu && language != Language::kCuda)
    return "ncu (Nsight Compute) profiles CUDA kernels only, and this job's language is " +
           std::string(language_name(language));
  if (choice == ProfilerChoice::kPerf && language == Language::kCuda)
    return "perf counts the host CPU, and CUDA kernels run on the GPU";
  return "";
}

Result<ProfilerSetup> find_profiler(Language language, bool cpu_device, const std::string& path_env,
                                    ProfilerChoice choice,
                                    const std::filesystem::path& toolkit_ncu) {
  using R = Result<ProfilerSetup>;
  ProfilerSetup setup;
  if (choice == ProfilerChoice::kNone) return setup;
  if (std::string problem = profiler_choice_problem(choice, language); !problem.empty())
    return R::error(problem);
  auto on_path = [&](const char* name) -> std::filesystem::path {
    for (const std::string& dir : split(path_env, ':')) {
      if (dir.empty()) continue;
      std::filesystem::path p = std::filesystem::path(dir) / name;
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
    return {};
  };
  if (language == Language::kCuda) {
    setup.tool = on_path("ncu");
    if (setup.tool.empty() && ::access(toolkit_ncu.c_str(), X_OK) == 0) setup.tool = toolkit_ncu;
    if (!setup.tool.empty()) {
      setup.kind = ProfilerKind::kNcu;
      return setup;
    }
    setup.note =
        "profiling: Nsight Compute (ncu) is not on PATH nor in /usr/local/cuda/bin (it comes "
        "with the CUDA toolkit); CUDA kernels are not profiled (README: Profiling)";
    return setup;
  }
  if (!cpu_device) {
    if (choice == ProfilerChoice::kPerf)
      return R::error("perf counts the host CPU, and these " +
                      std::string(language_name(language)) +
                      " kernels run on a GPU (the device the reference ran on)");
    setup.note = "profiling: no profiler is built for this device (" +
                 std::string(language_name(language)) + " on a GPU); kernels are not profiled";
    return setup;
  }
  setup.tool = on_path("perf");
  if (!setup.tool.empty()) {
    setup.kind = ProfilerKind::kPerf;
    return setup;
  }
  setup.note =
      "profiling: perf is not installed (Debian/Ubuntu: apt-get install linux-perf); kernels "
      "on the CPU are not profiled (README: Profiling)";
  return setup;
}

}  // namespace kf
