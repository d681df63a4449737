// Evaluator::profile: a correct kernel's binary run once more on one benchmark shape under the
// profiler, in its run sandbox, with the figures condensed into the eval log (eval/profile.h).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "eval/eval.h"
#include "eval/interpret.h"
#include "eval/isolation.h"
#include "eval/ncu.h"
#include "eval/profile.h"
#include "proc/sandbox.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

// The shape the reference spends longest on (the one a speedup there matters most for); the
// first benchmark shape when there is no reference timing.
std::string profiled_shape(const EvalResult* reference, const EvalResult& result) {
  const auto& timings =
      reference != nullptr && !reference->timings.empty() ? reference->timings : result.timings;
  std::string best;
  double longest = -1;
  for (const auto& [shape, t] : timings) {
    if (t.median_ms > longest) {
      longest = t.median_ms;
      best = shape;
    }
  }
  return best;
}

}  // namespace

void Evaluator::set_profiler(const ProfilerSetup& kernels, const ProfilerSetup& reference,
                             const ArchProfile& arch) {
  profiler_ = kernels;
  reference_profiler_ = reference;
  profiler_arch_ = arch;
  if (reference_profiler_.tool.empty() || !options_.profile_reference || !reference_) return;
  if (reference_->binary.empty()) return;
  EvalResult ref;
  ref.timings = reference_->timings;
  profile_binary(reference_profiler_, reference_->binary, reference_->dir / "src",
                 reference_->dir / "profile", true, ref, &reference_profile_lines_);
  reference_profile_ = ref.profile;
}

void Evaluator::profile(EvalResult& r) {
  if (profiler_.tool.empty() || !options_.profile_candidates) return;
  if (r.verdict != kCorrect || r.binary.empty() || !r.environment_error.empty()) return;
  std::vector<std::string> lines;
  profile_binary(profiler_, r.binary, r.dir / "src", r.dir / "profile", false, r, &lines);
  if (!ends_with(r.eval_log, "\n")) r.eval_log += "\n";
  r.eval_log += strprintf("\n== profile (%.1f s, not part of the evaluation time)\n", r.profile_s);
  for (const std::string& line : lines) r.eval_log += "- " + line + "\n";
  if (!reference_profile_lines_.empty()) {
    r.eval_log += "reference, the baseline to beat, on the same shape" +
                  (options_.reference_arch_name.empty()
                       ? std::string()
                       : " (on " + options_.reference_arch_name + ", reference_gpu_arch)") +
                  ":\n";
    for (const std::string& line : reference_profile_lines_) r.eval_log += "- " + line + "\n";
    if (r.profile.is_object()) r.profile["reference"] = reference_profile_;
  }
  r.eval_log = escape_invalid_utf8(r.eval_log);
}

void Evaluator::profile_binary(const ProfilerSetup& profiler, const fs::path& binary,
                               const fs::path& src_dir, const fs::path& work_dir,
                               bool reference_impl, EvalResult& out,
                               std::vector<std::string>* lines) {
  auto start = std::chrono::steady_clock::now();
  auto done = [&](const std::string& line) {
    lines->push_back(line);
    out.profile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const bool ncu = profiler.kind == ProfilerKind::kNcu;
  std::string shape = profiled_shape(reference_ ? &*reference_ : nullptr, out);
  if (shape.empty()) return done("not profiled: no benchmark shape was timed");
  std::error_code ec;
  fs::remove_all(work_dir, ec);
  if (Status s = make_dirs(work_dir / "tmp"); !s) return done("not profiled: " + s.message());
  fs::path ctl = work_dir / "perf.ctl", ack = work_dir / "perf.ack";
  fs::path csv = work_dir / (ncu ? "ncu.csv" : "perf.csv");
  // Warm calls (no cache flush between them, so perf counts the kernel, not the flush), a short
  // budget: the figures are ratios, not a timing. Under ncu one call is profiled (the harness
  // opens the CUDA profiler's range around the first timed call only; ncu flushes the caches
  // before each replay itself).
  std::vector<std::string> extra = {"--shape", shape, "--warm", "--time-budget", "0.3"};
  if (ncu) {
    extra.insert(extra.end(), {"--profile-one-call", "--min-samples", "1", "--max-samples", "3"});
  } else {
    if (::mkfifo(ctl.c_str(), 0600) != 0 || ::mkfifo(ack.c_str(), 0600) != 0)
      return done("not profiled: cannot make perf's control FIFOs in " + work_dir.string());
    extra.insert(extra.end(), {"--perf-control", ctl.string() + "," + ack.string()});
  }
  if (!reference_impl) {
    extra.push_back("--dump-dir");
    extra.push_back((work_dir / "outputs").string());
  }
  // A templated kernel: the combination that was chosen (eval/templated.h).
  if (out.template_params.is_object()) {
    extra.push_back("--template-params");
    extra.push_back(out.template_params.dump());
  }
  ProcessSpec spec = harness_spec(binary, src_dir, work_dir, reference_impl, "benchmark",
                                  work_dir / "result.json", extra, {});
  // The profiler goes inside the sandbox, in front of the harness binary (bwrap's argv ends with
  // it): it runs as whoever runs the job, never through sudo.
  std::vector<std::string> tool = {profiler.tool.string()};
  if (ncu) {
    std::vector<std::string> a = ncu_arguments(csv);
    tool.insert(tool.end(), a.begin(), a.end());
  } else {
    tool.insert(tool.end(), {"stat", "-x,", "-o", csv.string(), "-D", "-1", "--control",
                             "fifo:" + ctl.string() + "," + ack.string(), "-e",
                             join(perf_events(), ","), "--"});
  }
  // The command itself: the binary followed by its own first option (the sandbox's argv names
  // the binary earlier too, in its bind mounts).
  auto at = spec.argv.begin();
  for (; at != spec.argv.end(); ++at)
    if (*at == binary.string() && at + 1 != spec.argv.end() && at[1] == "--phase") break;
  if (at == spec.argv.end()) return done("not profiled: the harness command was not as expected");
  spec.argv.insert(at, tool.begin(), tool.end());
  if (ncu) {
    // Each kernel is replayed about twenty times: more time than the harness alone is given.
    spec.timeout_s = std::max(spec.timeout_s, 300.0);
    if (spec.inactivity_timeout_s > 0)
      spec.inactivity_timeout_s = std::max(spec.inactivity_timeout_s, 120.0);
  }
  ProcessResult proc;
  {
    std::unique_lock<std::mutex> device;
    if (options_.device_lock) device = std::unique_lock<std::mutex>(*options_.device_lock);
    proc = runner_.run(spec);
  }
  fs::remove_all(work_dir / "outputs", ec);
  auto text = read_file(csv);
  std::string output = trim(proc.output);
  if (output.size() > 400) output = output.substr(output.size() - 400);
  if (ncu) {
    std::string why;
    std::vector<NcuKernel> kernels;
    if (text) kernels = parse_ncu_csv(*text, &why);
    if (!text || !why.empty()) {
      if (output.find("ERR_NVGPUCTRPERM") != std::string::npos)
        return done(
            "not profiled: this user may not read the GPU's performance counters "
            "(ERR_NVGPUCTRPERM: the driver's RmProfilingAdminOnly is 1); see README, "
            "Profiling");
      return done("not profiled: the ncu run " + proc.describe() +
                  (why.empty() ? "" : " (" + why + ")") + (output.empty() ? "" : ": " + output));
    }
    // The roofline of the device the run was on.
    const bool elsewhere = on_reference_device(reference_impl, false);
    ProfileSummary summary =
        summarise_ncu(kernels, shape, elsewhere ? options_.reference_arch : profiler_arch_);
    out.profile = summary.metrics;
    for (std::size_t i = 0; i + 1 < summary.lines.size(); ++i) lines->push_back(summary.lines[i]);
    return done(summary.lines.back());
  }
  nlohmann::json result = read_json_file(work_dir / "result.json");
  long calls = 0;
  double wall_ms = 0;
  if (result.is_object() && result.contains("stats") && result["stats"].contains(shape)) {
    calls = result["stats"][shape].value("n", 0L);
    wall_ms = result["stats"][shape].value("mean_ms", 0.0);  // CPU time over the calls: the mean
  }
  if (!text || calls <= 0) {
    if (output.find("perf_event_paranoid") != std::string::npos ||
        output.find("ermission") != std::string::npos) {
      auto level = read_file("/proc/sys/kernel/perf_event_paranoid");
      return done("not profiled: perf may not count here (kernel.perf_event_paranoid = " +
                  (level ? trim(*level) : std::string("?")) +
                  "; 2 or lower lets a user profile their own processes): see README, Profiling");
    }
    return done("not profiled: the perf run " + proc.describe() +
                (output.empty() ? "" : ": " + output));
  }
  ProfileSummary summary = summarise_perf(parse_perf_stat(*text), shape, calls, wall_ms,
                                          int(std::max(1u, std::thread::hardware_concurrency())));
  out.profile = summary.metrics;
  for (std::size_t i = 0; i + 1 < summary.lines.size(); ++i) lines->push_back(summary.lines[i]);
  done(summary.lines.empty() ? "perf stat said nothing" : summary.lines.back());
}

}  // namespace kf
