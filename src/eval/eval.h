// The evaluation pipeline: build a candidate, check it against the reference, time both, and turn
// the evidence into a verdict, a speedup, integrity flags and the eval log the next prompt sees.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "arch/arch.h"
#include "eval/paired.h"
#include "eval/profile.h"
#include "eval/sanitizer.h"
#include "eval/templated.h"
#include "eval/verdict.h"
#include "lang/lang.h"
#include "proc/process.h"
#include "proc/sandbox.h"
#include "task/task.h"
#include "util/status.h"

namespace kf {

struct ScreenResult;         // eval/screen.h
class ReferenceTimingCache;  // eval/reference_timing.h
struct ReferenceTimingKey;
struct ReferenceTimingEntry;
class PacedTiming;  // eval/paced.h

struct EvalOptions {
  Language language = Language::kCpp;
  ArchProfile arch;
  double build_timeout_s = 200;
  double test_timeout_s = 300;
  double inactivity_timeout_s = 60;
  size_t max_output_bytes = 1 << 20;
  size_t max_log_chars = 6000;
  int num_seeds = 3;
  double large_shape_mib = 64;  // shapes over this get one correctness seed (0 = all seeds)
  double noise_target = 0.005;
  int min_samples = 10;
  int max_samples = 2000;
  double time_budget_s = 2.0;  // per benchmark shape
  double warmup_min_time_s = 0.05;
  int warmup_min_iters = 3;
  bool cold_samples = true;
  double max_plausible_speedup = 100;
  bool check_wall_time = true;
  // Candidates are timed side by side with the reference where the job has a judge (the paced
  // benchmark, eval/paced.h); false: against the reference's timing at job start.
  bool paired_timing = true;
  // Hidden correctness shapes near the listed ones (eval/hidden_shapes.h), unless the task marks
  // its shapes fixed.
  bool hidden_shapes = true;
  bool fixed_shapes = false;
  // The sandbox and limits of every build step and run (eval/isolation.h, proc/sandbox.h).
  SandboxMode sandbox = SandboxMode::kAuto;  // eval_config.sandbox
  double memory_limit_gib = 8;               // eval_config.memory_limit_gib (0 = none)
  int max_processes = 256;                   // eval_config.max_processes (0 = none)
  double cpu_time_limit_s = 0;  // eval_config.cpu_time_limit; 0 = 4 x the step's timeout
  int build_parallel = 2;
  // compute-sanitizer on a job's best CUDA kernel (eval/sanitizer.h, Evaluator::sanitize).
  SanitizerMode compute_sanitizer = SanitizerMode::kAuto;  // eval_config.compute_sanitizer
  std::vector<std::string> sanitizer_tools = {"memcheck", "racecheck"};  // ...sanitizer_tools
  double sanitizer_timeout_s = 300;  // per tool; eval_config.sanitizer_timeout
  // The tool, resolved at job start by check_sanitizer(); empty = no pass.
  std::filesystem::path sanitizer_path;
  // Profiling (eval/profile.h, Evaluator::profile): eval_config.profile_custom_model and
  // profile_original_model; the profiler is set once the reference has shown the device
  // (Evaluator::set_profiler).
  bool profile_candidates = true;
  bool profile_reference = false;
  // eval_config.profiler_kernel / profiler_reference: which profiler, for each (eval/profile.h).
  ProfilerChoice profiler_kernel = ProfilerChoice::kAuto;
  ProfilerChoice profiler_reference = ProfilerChoice::kAuto;
  // Set in every run's environment (not the builds'): the device of this arch's target
  // (eval/multi_arch.h); empty = the device our own environment selects.
  std::vector<std::pair<std::string, std::string>> device_env;
  // reference_gpu_arch: the reference (its runs, the judge that checks and times it beside each
  // candidate, its profile) on another arch's device than the candidates': that arch's name,
  // profile and device environment. An empty name: the reference runs where the candidates do.
  std::string reference_arch_name;
  ArchProfile reference_arch;
  std::vector<std::pair<std::string, std::string>> reference_device_env;
  std::filesystem::path cache_dir;  // build cache
  std::filesystem::path work_root;  // candidates' directories are made under here
  // Held around every test run when candidates are evaluated from several threads: builds go in
  // parallel, runs on the one device are serialised. nullptr = no locking.
  std::mutex* device_lock = nullptr;
  // The job's timing gate (proc/pause_group.h): every build step runs in it, and a timing window
  // pauses it, so timing never overlaps the job's own builds. nullptr = builds never pause.
  PauseGroup* build_pause = nullptr;
  // Reference timings kept across jobs (eval/reference_timing.h): where they are (nullptr = none
  // kept, none reused), whether a kept one may be reused after a short re-check
  // (eval_config.reuse_reference_timing; false still keeps the fresh timing for later jobs), and
  // the job that makes new ones.
  ReferenceTimingCache* reference_timings = nullptr;
  bool reuse_reference_timing = true;
  double reference_recheck_tolerance = 0.03;  // eval_config.reference_recheck_tolerance
  std::string job_name;
  // kernelfoundry tune (docs/templating.md, "Tuning without an LLM"): how a templated kernel's
  // space is searched; the defaults are an LLM job's (every combination, at most
  // kMaxTemplateCombinations).
  struct TemplateTuning {
    size_t max_combinations = kMaxTemplateCombinations;
    // tune.budget: at most this many combinations are run, drawn at random with `seed` (the same
    // draw on every run); 0 = all.
    size_t budget = 0;
    uint64_t seed = 0;
    // Each combination's first-pass entry is written as it finishes to
    // <state_dir>/tune_state_<arch>.json, so an interrupted tune loses nothing; with `resume` the
    // entries already there (of the same kernel and settings) are taken instead of running those
    // combinations again. Empty = none.
    std::filesystem::path state_dir;
    bool resume = false;
    std::function<void(const std::string&)> progress;  // one line per combination run
    std::function<bool()> stop;                        // true: stop (Ctrl-C), keep the state
  };
  TemplateTuning tuning;
};

// Timing of one implementation on one benchmark shape.
struct ShapeTiming {
  double median_ms = 0, mean_ms = 0, min_ms = 0, std_ms = 0;
  int n = 0;
  std::vector<double> samples_ms;
};

struct EvalResult {
  int verdict = kNoCode;
  std::string reason;
  // Non-empty: the evaluation could not be done and the code is not to blame. The machine failed
  // (a full disk, a read-only path, a file size limit, a missing compiler, a device that cannot
  // be opened, a work dir or build cache that cannot be written); this says which, and where.
  // verdict and reason are then no judgement of the code: do not store them as one.
  std::string environment_error;
  std::optional<double> speedup;  // geometric mean over benchmark shapes, when correct
  // Set when the candidate was timed side by side with the reference (eval/paired.h); then
  // speedup == speedup_interval->speedup. Unset for the reference itself and older jobs.
  std::optional<SpeedupInterval> speedup_interval;
  std::vector<ShapePairs> pairs;  // the raw batch pairs behind speedup_interval, for the record
  double fitness = 0;
  std::map<std::string, ShapeTiming> timings;      // by benchmark shape id
  nlohmann::json flags = nlohmann::json::array();  // [{flag, detail, suspect}]
  nlohmann::json harness;                          // the harness's result file, as written
  std::string eval_log;
  double build_s = 0, test_s = 0;             // wall time of the build and of the test child
  double screen_s = 0;                        // static screening of the candidate's objects
  double check_s = 0;                         // the checker child (also counted in test_s)
  double sanitize_s = 0;                      // compute-sanitizer passes (Evaluator::sanitize)
  double profile_s = 0;                       // the profiling run (Evaluator::profile)
  nlohmann::json profile;                     // its figures (eval/profile.h); null = none
  double correctness_s = 0, benchmark_s = 0;  // phases as the harness measured them
  int build_steps_run = 0, build_steps_cached = 0;
  std::filesystem::path dir;     // the candidate's directory (sources, result file, eval log)
  std::filesystem::path binary;  // its task binary in the build cache (when it was built)
  // The reference only (prepare_reference): how its timing was got, as the progress line says it
  // ("; timing reused from job J of ..., re-checked within 0.6%"; "" = nothing to say) and as
  // results.json keeps it ("reference_timing"; null = nothing). eval/reference_timing.h.
  std::string timing_source_text;
  nlohmann::json timing_source;
  // The reference only, when it runs on another arch's device (EvalOptions::reference_arch_name):
  // the harness result of its correctness run on the candidates' device, which says what that
  // device is (the reference's own `harness` says where it was timed). null otherwise.
  nlohmann::json candidate_device;
  // A templated kernel (eval/templated.h, evaluator_templated.cpp): every combination's result,
  // [{label, params, instantiation, verdict, reason, speedup, median_ms, suspect, chosen}], and
  // the chosen combination's parameters (whose run this result is); null for other kernels.
  nlohmann::json template_results;
  nlohmann::json template_params;
  // Several archs (eval/multi_arch.h): the arch a result is of, and a merged result's parts.
  std::string arch;
  std::vector<EvalResult> per_arch;

  bool suspect() const;
  nlohmann::json runtimes_json()
      const;  // {shape: {median_ms, mean_ms, min_ms, std_ms, n, samples}}
};

// Whether integrity flags (a JSON array of {flag, detail, suspect}) hold a suspect one.
bool flags_suspect(const nlohmann::json& flags);

// The search's score of a result: its verdict, plus its speedup when it is correct and not
// suspect.
double eval_fitness(const EvalResult& result);

// What one of the Evaluator's builds and runs adds to the package: generated sources
// (package-relative path -> text) and arguments of the test child.
struct RunExtras {
  std::map<std::string, std::string> files;
  std::vector<std::string> args;
  // The same sources already passed static screening in this evaluation (a templated kernel's
  // later combinations): the objects are the cached ones screened then.
  bool screened = false;
  // A templated kernel's first pass over its combinations: every check as usual, but a short
  // timing against the reference's job-start timing, not side by side (it only ranks them).
  bool short_timing = false;
  // A share of eval_config.time_budget per shape for a side-by-side timing (a templated kernel's
  // finalists, which only rank the fastest few of its first pass: half); 1 otherwise.
  double budget_share = 1;
  // A second measurement of a candidate called faster on a busy machine: the first run's figure,
  // said by the result's informative flag confirmed_on_busy_machine (and so in its eval log).
  std::string busy_first_run;
  // The first pass in one child (the harness's --sweep, with short timing): each combination's
  // template parameters, run in turn. `swept` receives a result per combination run, in order;
  // fewer than asked when the child stopped early (an error or a crash ends it after that
  // combination's result), the rest being for another child.
  std::vector<nlohmann::json> sweep;
  std::vector<EvalResult>* swept = nullptr;
};

class Evaluator {
 public:
  Evaluator(const TaskPackage& task, EvalOptions options, Toolchain toolchain,
            ProcessRunner& runner);

  // Builds, checks and times the reference (once per job and arch). A reference that does not
  // build or pass its own check means the task is broken: that is an error, not a verdict. When
  // the machine is at fault (EvalResult::environment_error) the error says so instead.
  // With options.reference_timings, a timing kept by an earlier job of the same key is reused
  // when a short re-measurement agrees with it, and re-timed in full when not
  // (eval/reference_timing.h); the result's timing_source says which.
  Result<EvalResult> prepare_reference();
  const EvalResult* reference() const { return reference_ ? &*reference_ : nullptr; }
  // After prepare_reference failed: the machine's fault behind it ("" when the task is at fault),
  // so a job can stop for resume instead of recording the task as broken.
  const std::string& reference_environment_error() const { return reference_environment_error_; }

  // Evaluates the package with `changed` files applied (empty: the EVOLVE block as it stands).
  EvalResult evaluate(const std::string& candidate_id,
                      const std::map<std::string, std::string>& changed);

  // Runs the task's tests once, as a task author would (`kernelfoundry test`).
  EvalResult run_tests_once(bool reference_impl);

  // The compute-sanitizer pass (evaluator_sanitize.cpp) on a correct CUDA candidate about to be
  // reported as the job's best: each of options.sanitizer_tools around its binary, in its run
  // sandbox. Findings become a suspect flag (the kernel is then not counted as a win), the
  // reason, fitness and eval log are updated and sanitize_s is set. Once per binary: a kernel
  // seen before gets the earlier outcome. Does nothing without options.sanitizer_path.
  void sanitize(EvalResult& result);

  // The profilers (eval/profile.h), once the reference has shown which device this is: the
  // candidates' (eval_config.profiler_kernel) and the reference's (profiler_reference); an empty
  // tool = none. With options.profile_reference the reference is profiled now, once for the job.
  // `arch` is the job's settled profile: the roofline of the ncu summary is drawn against it.
  void set_profiler(const ProfilerSetup& kernels, const ProfilerSetup& reference,
                    const ArchProfile& arch);
  // Profiles a correct kernel (evaluator_profile.cpp): its binary run again on one benchmark
  // shape (the one the reference spends longest on) in its run sandbox under the profiler,
  // counting the timed calls only. The figures go to result.profile and a section of the eval log
  // (with the reference's beside them when it was profiled); profile_s is set. A profiler that
  // fails is a line in that section, never a verdict. Does nothing without a profiler or with
  // options.profile_candidates off.
  void profile(EvalResult& result);

 private:
  // kTest: the package as one binary, as its author runs it. kReference: the whole package, run
  // with --ref, writing the expected outputs of the job. kCandidate: the package without the
  // reference's files (its functions linked as traps), run with no reference in the process; its
  // outputs are then judged by the checker (the reference binary).
  enum class Role { kTest, kReference, kCandidate };
  EvalResult build_and_run(const std::string& id, const std::map<std::string, std::string>& changed,
                           Role role, bool reference_impl, const RunExtras& extras = {});
  // A templated kernel (evaluator_templated.cpp): built once with a generated entry point, each
  // combination run as its own test child; the best correct combination is the result.
  EvalResult evaluate_templated(const std::string& id,
                                const std::map<std::string, std::string>& changed, Role role,
                                const TemplatedSource& source,
                                const std::map<size_t, std::string>& skipped = {});
  // The sweep child of build_and_run (RunExtras::sweep): one harness child runs the
  // combinations in turn; each one's result read, checked by the judge and scored into
  // *extras.swept. `result` gets the child's time, or the machine's fault.
  void run_sweep_child(const std::filesystem::path& binary, const std::filesystem::path& src_dir,
                       const std::filesystem::path& run_dir, const RunExtras& extras,
                       EvalResult& result);
  // The candidate child's outputs in `dump_dir` compared by the checker; a failure replaces the
  // verdict. `phase` as given to the candidate child.
  void check_outputs(EvalResult& result, const std::filesystem::path& dump_dir,
                     const std::filesystem::path& work_dir, const std::string& phase);
  // Files holding a REFERENCE block and no EVOLVE block: left out of a candidate's sources.
  std::vector<std::string> reference_files() const;
  // The global functions the reference's objects define (nm), for the candidate's trap file.
  std::vector<std::string> reference_symbols(const BuildPlan& plan);
  // Hidden correctness shapes for the job (--extra-shapes JSON), from the task's listed ones.
  std::string hidden_shapes_for(const std::filesystem::path& binary,
                                const std::filesystem::path& work_dir);
  // The cached objects compiled from `files` (package-relative paths).
  std::vector<std::filesystem::path> objects_of(const BuildPlan& plan,
                                                const std::vector<std::string>& files) const;
  // Static screening of a candidate's objects and OpenCL sources (eval/screen.h).
  ScreenResult screen_build(const BuildPlan& plan, const std::filesystem::path& src_dir,
                            const std::filesystem::path& build_dir);
  void score(EvalResult& result) const;
  // prepare_reference()'s use of the kept timings, after the reference's run (measured short
  // when `kept` holds entries of the same setup): reuses one that the re-check confirms, else
  // times the reference in full and keeps that. An error when the full timing fails.
  Status settle_reference_timing(EvalResult& ref, const ReferenceTimingKey& setup,
                                 const std::vector<ReferenceTimingEntry>& kept,
                                 std::vector<std::string> notes);
  // The reference binary's benchmark phase with the job's settings, its timings into `ref`.
  Status retime_reference(EvalResult& ref);
  // A candidate run's side-by-side timing (eval/paced.h), its harness options appended to
  // `harness_args`: null where the job times unpaired (paired_timing off, no judge) or the FIFOs
  // cannot be made (the run then reads against the reference's timing at job start).
  std::unique_ptr<PacedTiming> start_paced(const std::filesystem::path& run_dir, double budget_s,
                                           std::vector<std::string>& harness_args);
  // After a correct candidate run with `paced` finished: its pairs into `result` with the flags
  // they raise (batches past the wall time, reported samples that differ from the batches, a busy
  // machine) or, where the paced benchmark did not finish, not_side_by_side.
  void take_pairs(EvalResult& result, const PacedTiming& paced) const;
  // `run_args`: the run's own arguments (a templated kernel's --template-params).
  void remeasure_if_suspect(EvalResult& result, const std::filesystem::path& binary,
                            const std::filesystem::path& src_dir,
                            const std::filesystem::path& work_dir,
                            const std::vector<std::string>& run_args);
  // The job's judge (the reference binary with --serve) checks `dump_dir`, writing its report to
  // `out_file`; false when it cannot (not started, failed: the caller then runs a one-shot
  // checker child). Started after the reference passed and kept for the job.
  bool check_with_judge(const std::filesystem::path& dump_dir,
                        const std::filesystem::path& out_file, const std::string& phase,
                        ProcessResult* proc);
  bool start_judge();
  // One request to the running judge ("warm", or "check" with its fields); the rest of its
  // "kf-judge-done NONCE" line (the exit code), the lines before it in *output.
  Result<std::string> judge_request(const std::string& verb, std::string* output,
                                    const std::vector<std::string>& fields = {});
  // The spec of a run of a task binary (sandboxed), as run_harness runs it.
  ProcessSpec harness_spec(const std::filesystem::path& binary,
                           const std::filesystem::path& src_dir,
                           const std::filesystem::path& work_dir, bool reference_impl,
                           const std::string& phase, const std::filesystem::path& out_file,
                           std::vector<std::string> extra_args = {},
                           const std::vector<std::filesystem::path>& read_only = {},
                           bool candidate_device = false);
  // Whether a run is on the reference's arch's device (and profile): the reference's runs (with
  // --ref: its own, the judge's, the checker's) when it has its own arch, unless
  // `candidate_device` asks for the candidates'.
  bool on_reference_device(bool reference_impl, bool candidate_device) const;
  // With a reference on another device: the reference's correctness run on the candidates'
  // device, its harness result into ref.candidate_device. An error when it fails there.
  Status probe_candidate_device(EvalResult& ref);
  ProcessResult run_harness(const std::filesystem::path& binary,
                            const std::filesystem::path& src_dir,
                            const std::filesystem::path& work_dir, bool reference_impl,
                            const std::string& phase, const std::filesystem::path& out_file,
                            std::vector<std::string> extra_args = {},
                            const std::vector<std::filesystem::path>& read_only = {});

  const TaskPackage& task_;
  EvalOptions options_;
  Toolchain toolchain_;
  ProcessRunner& runner_;
  std::optional<EvalResult> reference_;
  std::string reference_environment_error_;
  // The judge, kept from prepare_reference(): the reference binary, its sources and the expected
  // outputs it wrote; the trap symbols for candidate builds.
  std::filesystem::path judge_binary_, judge_src_dir_, expected_dir_;
  std::vector<std::string> trap_symbols_;
  std::vector<std::filesystem::path> reference_objects_;
  // What task binaries link, for screening; set by prepare_reference().
  std::vector<std::filesystem::path> libraries_;
  std::string extra_shapes_json_;           // hidden correctness shapes, "" = none
  std::filesystem::path judge_pocl_cache_;  // PoCL's kernel cache of the reference binary's runs
  // prepare_reference(): the reference's run measures short (a kept timing is to be re-checked);
  // the reference binary's build key (the link step's cache key), part of its timing's key.
  bool reference_recheck_run_ = false;
  std::string reference_build_key_;
  // The running judge (check_with_judge); after 3 failures the job uses one-shot checkers.
  std::mutex judge_mutex_;
  std::unique_ptr<ServiceProcess> judge_;
  int judge_failures_ = 0;
  // The paced benchmark's reference batches (eval/paced.h): `calls` timed calls of the reference
  // on benchmark shape `shape`, by the judge.
  Result<std::vector<double>> time_reference(const std::string& shape, long calls);
  // With judge_mutex_ held: the judge is running, started now if it was not (a failed start
  // counts as a failure); judge_lost() drops one that failed a request.
  bool judge_started();
  void judge_lost();
  bool has_judge() {
    std::lock_guard<std::mutex> lock(judge_mutex_);
    return !judge_binary_.empty() && judge_failures_ < 3 && judge_ != nullptr;
  }
  // sanitize(): the flags and log lines found per binary (cache file name), so a kernel is
  // checked once.
  struct SanitizeOutcome {
    nlohmann::json flags = nlohmann::json::array();
    std::vector<std::string> log_lines;
  };
  ProfilerSetup profiler_, reference_profiler_;
  ArchProfile profiler_arch_;
  nlohmann::json reference_profile_;  // the reference's figures, when profiled
  std::vector<std::string> reference_profile_lines_;
  // Runs `profiler` on `binary` (the reference's with `reference_impl`); fills `out`.
  void profile_binary(const ProfilerSetup& profiler, const std::filesystem::path& binary,
                      const std::filesystem::path& src_dir, const std::filesystem::path& work_dir,
                      bool reference_impl, EvalResult& out, std::vector<std::string>* lines);
  std::mutex sanitize_mutex_;
  std::map<std::string, SanitizeOutcome> sanitized_;
};

}  // namespace kf
