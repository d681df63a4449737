// A job: compose the config, load the task, open the store, evaluate candidates, store and report.
// This job evaluates given candidates (the EVOLVE block as it stands, or replacement
// files); the LLM-driven search loop builds on it.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "config/config.h"
#include "eval/eval.h"
#include "eval/multi_arch.h"
#include "lang/lang.h"
#include "proc/process.h"
#include "store/store.h"
#include "task/task.h"
#include "util/status.h"

namespace kf {

// Everything a job needs, resolved and validated before any candidate runs.
struct JobContext {
  Config config;
  TaskPackage task;
  Language language = Language::kCpp;
  ArchProfile arch{};      // the first arch's profile (prompts show every lane's)
  std::string gpu_arch{};  // as configured: one name, or several joined by ','
  // One per gpu_arch entry, with the device its arch_targets entry selects (eval/multi_arch.h).
  std::vector<ArchLane> lanes{};
  // reference_gpu_arch, when the reference runs on another arch's device than the candidates
  // (its arch_targets entry); unset: each lane's reference runs on the lane's device.
  std::optional<ArchLane> reference_lane{};
  std::string job_name{}, task_name{};
  std::filesystem::path run_dir{};  // <logdir>/<job_name>
  std::unique_ptr<Store> store{};
  // kernelfoundry tune: a templated kernel's space is searched as the `tune` keys say, with
  // progress per combination and a state kept for resume (EvalOptions::TemplateTuning).
  bool tune = false;
};

// After the reference runs (one per lane, in lane order): each arch the job claims, checked
// against the device its reference ran on (an error when it is another device: kernels are
// stored under their gpu_arch as where they ran), and `native` resolved to that device's profile
// name (arch_name_of), with the profile's figures where the device is a known one.
Status settle_arch(JobContext& job, const std::vector<EvalResult>& references);

// After the reference runs: the profilers for each lane (eval/profile.h: the candidates' device's
// and the reference's, as eval_config.profiler_kernel / profiler_reference choose) given to its
// evaluator, when eval_config.profile_custom_model or profile_original_model is on; a missing
// one is a one-line note on `out`. An error when a chosen profiler cannot profile the device
// found (perf for a kernel on a GPU).
Status prepare_profiler(ArchEvaluators& evaluators, const JobContext& job,
                        const EvalOptions& options, const std::vector<EvalResult>& references,
                        std::ostream& out);

// The reference's progress line after "reference: building and timing ...": " ok (build B s,
// tests T s...)", then a line per further arch.
std::string reference_done_line(const std::vector<EvalResult>& references);

// results.json's reference_gpu_arch: the arch the reference ran on when not the candidates'
// (null otherwise).
nlohmann::json reference_arch_json(const JobContext& job);

// The reference's runtimes for results.json: its shapes' for one arch, {arch: shapes} for more.
nlohmann::json reference_runtimes(const std::vector<EvalResult>& references);

// Reads task=<package> from `args`, loads it, composes the config (shipped → task config.yaml →
// overrides.yaml → args), validates it for a run and opens the kernel database.
Result<JobContext> open_job(const std::vector<std::string>& args);

// One candidate: new contents for the EVOLVE block(s), or none to take the block as it stands.
struct Candidate {
  std::string label;  // shown in progress lines ("EVOLVE block as written", a file name)
  std::vector<std::string> codes;  // one per EVOLVE block; empty = unchanged
  std::string parent_uuid{};       // the stored kernel it was taken from, if any
};

struct JobSummary {
  int evaluated = 0;
  int correct = 0;
  std::optional<double> best_speedup;
  std::optional<SpeedupInterval> best_interval;  // the best's, when it was timed side by side
  std::string best_uuid;
  int last_verdict = -1;
  nlohmann::json last_template_results;  // the last kernel's combinations, when it is templated
};

// Builds the reference once, evaluates each candidate in order (a failing candidate is a verdict,
// and the job goes on), stores every kernel and writes runs/<job_name>/. Progress goes to `out`.
// `seed_candidate`: the one candidate is the kernel iteration 0 would start from
// (resolve_seed_kernel), looked up once the reference has settled the arch (gpu_arch native).
Result<JobSummary> run_candidates(JobContext& job, std::vector<Candidate> candidates,
                                  ProcessRunner& runner, std::ostream& out,
                                  bool seed_candidate = false);

// The task as the database keeps it: every file (text files with their content) and the blocks.
TaskRecord task_record(const JobContext& job);

// A speedup as progress lines and tables show it: "1.234x", or "-" when there is none; with its
// interval when it has one: "1.234x [1.20-1.26]".
std::string speedup_text(const std::optional<double>& speedup);
std::string speedup_text(const std::optional<double>& speedup,
                         const std::optional<SpeedupInterval>& interval);

// Whether an evaluated candidate becomes the job's new best: correct, measured, not suspect, and
// faster than the best so far: by the intervals when both have one (eval/paired.h:
// faster_than), by the point estimates otherwise. Equal or unclear keeps the best.
bool beats_best(const EvalResult& candidate, const std::optional<double>& best_speedup,
                const std::optional<SpeedupInterval>& best_interval);

// The speedup interval between its two forms: as the evaluator measured it and as the kernel
// database keeps it (KernelRecord::speedup_interval, whose speedup is KernelRecord::speedup).
std::optional<KernelRecord::Interval> stored_interval(const std::optional<SpeedupInterval>& s);
std::optional<SpeedupInterval> speedup_interval_of(const KernelRecord& k);

// Evaluation settings from the composed config.
EvalOptions eval_options(const JobContext& job);

// For a job's start: resolves options.compute_sanitizer to the tool the best-kernel pass runs
// (options.sanitizer_path; empty = none). Mode auto without the tool writes one note line to
// `out`; mode on without it, or an unknown tool name, is the error.
Status prepare_sanitizer(EvalOptions& options, const Toolchain& toolchain, std::ostream& out);

}  // namespace kf
