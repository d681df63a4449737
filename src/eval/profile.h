// Profiling a correct kernel (eval_config.profile_custom_model; the reference too with
// profile_original_model): which profiler this machine has for the job's device, how its output
// is read, and its figures condensed into a few lines of bottleneck text for the eval log (which
// the next prompt shows). For kernels on a CPU (CPP; OpenCL on a CPU device) the profiler is
// `perf stat`, counting only the timed calls of one benchmark shape (harness --perf-control); for
// CUDA it is Nsight Compute on one call of that shape (eval/ncu.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lang/lang.h"
#include "util/status.h"

namespace kf {

// One line of `perf stat -x,` output.
struct PerfCount {
  std::string event;       // "task-clock", "instructions", ... (perf's ":u" suffix dropped)
  bool user_only = false;  // counted in user space only (":u": an unprivileged perf)
  double value = 0;        // as counted (task-clock in msec)
  std::string unit;        // "msec" or ""
  bool counted = true;     // false: "<not supported>" or "<not counted>"
};

// The counts in `perf stat -x, -o FILE` output; comment and blank lines skipped.
std::vector<PerfCount> parse_perf_stat(const std::string& text);

// The events the profiling run asks perf for: software ones every Linux has, and the hardware
// ones a machine with a PMU counts (perf says "<not supported>" where it has none).
const std::vector<std::string>& perf_events();

// What was counted, per timed call, as JSON (stored as the kernel's profile_json) and as a few
// lines for the eval log: CPU time against wall time (cores busy), context switches, migrations
// and page faults per call; IPC, cache and branch miss rates where the hardware counted them;
// then the bottleneck hints the figures support.
struct ProfileSummary {
  nlohmann::json metrics = nlohmann::json::object();
  std::vector<std::string> lines;
};
ProfileSummary summarise_perf(const std::vector<PerfCount>& counts, const std::string& shape,
                              long calls, double wall_ms_per_call, int cores);

// The profiler for a job: Nsight Compute (`ncu` on PATH, else in /usr/local/cuda/bin) for CUDA,
// `perf` on PATH for a kernel on a CPU; else none, with the one-line note the job prints (never
// an error: profiling is advice, not a verdict).
enum class ProfilerKind { kNone, kPerf, kNcu };
struct ProfilerSetup {
  std::filesystem::path tool;  // empty: no profiling
  ProfilerKind kind = ProfilerKind::kNone;
  std::string note;  // one line for the job's output, when there is something to say
};

// eval_config.profiler_kernel / profiler_reference: `auto` (the one above), `ncu`, `perf` or
// `none`. The schema admits only these words.
enum class ProfilerChoice { kAuto, kNcu, kPerf, kNone };
ProfilerChoice parse_profiler_choice(const std::string& word);
const char* profiler_choice_name(ProfilerChoice choice);

// A choice that cannot profile this job's kernels, known from the language alone: `ncu` for a
// language other than CUDA, `perf` for CUDA (it counts the host CPU, not the GPU). "" = none;
// else the reason, for an error at job start.
std::string profiler_choice_problem(ProfilerChoice choice, Language language);

// The profiler `choice` names for a kernel of `language` on a device (`cpu_device`: the kernel
// runs on the host CPU). `none` = no profiler, no note. `perf` for a kernel on a GPU is an error
// (the job stops: the key asked for what cannot be done); a chosen tool that is not installed is
// a note, as under `auto`.
Result<ProfilerSetup> find_profiler(
    Language language, bool cpu_device, const std::string& path_env,
    ProfilerChoice choice = ProfilerChoice::kAuto,
    const std::filesystem::path& toolkit_ncu = "/usr/local/cuda/bin/ncu");

}  // namespace kf
