// The evaluation pipeline: splice → build (child) → tests and timing (child) → verdict, speedup,
// integrity checks and the eval log. Candidate code only ever runs in children.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <sstream>

#include "eval/environment.h"
#include "eval/eval.h"
#include "eval/eval_log.h"
#include "eval/hidden_shapes.h"
#include "eval/interpret.h"
#include "eval/isolation.h"
#include "eval/log_clean.h"
#include "eval/paced.h"
#include "eval/reference_timing.h"
#include "eval/screen.h"
#include "proc/sandbox.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

// A templated kernel's first pass (RunExtras::short_timing): a twentieth of the shape budget
// (20-100 ms) and few samples, enough to rank combinations, not to report one.
std::vector<std::string> short_timing_args(const EvalOptions& o) {
  double budget = std::min(o.time_budget_s, std::clamp(0.05 * o.time_budget_s, 0.02, 0.1));
  int max_samples = std::max(3, std::min(o.max_samples, 50));
  return {"--time-budget", strprintf("%g", budget),    "--min-samples", "3",
          "--max-samples", std::to_string(max_samples)};
}

// Far above any real result (samples of every shape); the file is written by the candidate's
// process, so its size is not trusted.
constexpr uintmax_t kMaxResultFileBytes = 64u << 20;

// The CPU pressure (share of the benchmark's wall time with some task waiting for a CPU) from
// which a side-by-side speedup is said to be measured on a busy machine: an idle machine shows
// a few percent at most (the job's own helper threads), one CPU hog on as many threads as cores
// shows most of the time.
constexpr double kBusyCpuPressure = 0.10;

// The harness's timing and checking switches (KF_HARNESS_*) are never passed to a candidate's
// child (the sandbox's environment has none): one the candidate's process reports was set there
// by its own code before main (an environment string rewritten in place, e.g. to take CUPTI's
// concurrent records or drop the guard bytes). Suspect: the run's figures are not the harness's.
void flag_env_switches(EvalResult& result, const nlohmann::json& harness_result) {
  if (!harness_result.is_object()) return;
  auto it = harness_result.find("env_switches");
  if (it == harness_result.end() || !it->is_array() || it->empty()) return;
  std::string names;
  for (const auto& v : *it)
    if (v.is_string()) names += (names.empty() ? "" : ", ") + v.get<std::string>().substr(0, 80);
  add_flag(result, "harness_switch_set",
           "the candidate's process had " + names +
               " in its environment, which the evaluator never passes to a candidate: code in "
               "the process set it before main",
           true);
}

// Marks `r` as not evaluated for a fault of the machine (see EvalResult::environment_error).
EvalResult& not_evaluated(EvalResult& r, const std::string& cause) {
  r.environment_error = cause;
  r.verdict = kNoCode;
  r.reason = "not evaluated (environment error): " + cause;
  r.speedup.reset();
  r.fitness = 0;
  return r;
}

// A child's reported timed samples must fit in the wall time measured around it (2% and 10 ms of
// slack). When they do not: the flag's detail, naming the child as `who`.
std::optional<std::string> samples_past_wall_time(double sampled_s, double wall_s,
                                                  const char* who) {
  if (sampled_s <= wall_s * 1.02 + 0.01) return std::nullopt;
  return strprintf("%s reported %.3f s of timed samples but ran for only %.3f s", who, sampled_s,
                   wall_s);
}

std::string fmt_num(double v) {
  return strprintf("%g", v);
}

// What the evaluator returns is stored as text and JSON and put into prompts: a reason that quotes
// candidate output or a path with bytes that are not UTF-8 shows them as `\xNN`.
EvalResult text_safe(EvalResult r) {
  r.reason = escape_invalid_utf8(r.reason);
  r.eval_log = escape_invalid_utf8(r.eval_log);
  r.environment_error = escape_invalid_utf8(r.environment_error);
  return r;
}

}  // namespace

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxResultFileBytes) return nullptr;
  auto text = read_file(path);
  if (!text) return nullptr;
  try {
    return nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

bool flags_suspect(const nlohmann::json& flags) {
  if (!flags.is_array()) return false;
  for (const auto& f : flags)
    if (f.is_object() && f.value("suspect", false)) return true;
  return false;
}

bool EvalResult::suspect() const {
  return flags_suspect(flags);
}

double eval_fitness(const EvalResult& r) {
  return r.verdict + ((r.verdict == kCorrect && r.speedup && !r.suspect()) ? *r.speedup : 0.0);
}

nlohmann::json EvalResult::runtimes_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [shape, t] : timings) {
    out[shape] = {{"median_ms", t.median_ms},
                  {"mean_ms", t.mean_ms},
                  {"min_ms", t.min_ms},
                  {"std_ms", t.std_ms},
                  {"n", t.n},
                  {"samples_ms", t.samples_ms}};
  }
  // Side by side: each shape's batch pairs, the candidate's and the reference's samples.
  nlohmann::json paired = pairs_json(pairs);
  for (const ShapePairs& s : pairs)
    if (paired.contains(s.shape)) out[s.shape]["pairs"] = paired[s.shape];
  return out;
}

Evaluator::Evaluator(const TaskPackage& task, EvalOptions options, Toolchain toolchain,
                     ProcessRunner& runner)
    : task_(task), options_(std::move(options)), toolchain_(std::move(toolchain)), runner_(runner) {
  // Build and run steps start in their own work directories, so every path they see is absolute.
  options_.work_root = fs::absolute(options_.work_root).lexically_normal();
  options_.cache_dir = fs::absolute(options_.cache_dir).lexically_normal();
  judge_pocl_cache_ = options_.work_root / "judge-pocl-cache";
  std::error_code ec;
  fs::create_directories(judge_pocl_cache_, ec);  // a failure shows as the driver's own
}

ProcessResult Evaluator::run_harness(const fs::path& binary, const fs::path& src_dir,
                                     const fs::path& work_dir, bool reference_impl,
                                     const std::string& phase, const fs::path& out_file,
                                     std::vector<std::string> extra_args,
                                     const std::vector<fs::path>& read_only) {
  return runner_.run(harness_spec(binary, src_dir, work_dir, reference_impl, phase, out_file,
                                  std::move(extra_args), read_only));
}

ProcessSpec Evaluator::harness_spec(const fs::path& binary, const fs::path& src_dir,
                                    const fs::path& work_dir, bool reference_impl,
                                    const std::string& phase, const fs::path& out_file,
                                    std::vector<std::string> extra_args,
                                    const std::vector<fs::path>& read_only, bool candidate_device) {
  const bool reference_device = on_reference_device(reference_impl, candidate_device);
  const ArchProfile& arch = reference_device ? options_.reference_arch : options_.arch;
  ProcessSpec spec;
  spec.argv = {binary.string(),
               "--phase",
               phase,
               "--out",
               out_file.string(),
               "--kernel-dir",
               src_dir.string(),
               "--seeds",
               std::to_string(options_.num_seeds),
               "--large-shape-mib",
               fmt_num(options_.large_shape_mib),
               "--noise",
               fmt_num(options_.noise_target),
               "--min-samples",
               std::to_string(options_.min_samples),
               "--max-samples",
               std::to_string(options_.max_samples),
               "--time-budget",
               fmt_num(options_.time_budget_s),
               "--warmup-time",
               fmt_num(options_.warmup_min_time_s),
               "--warmup-iters",
               std::to_string(options_.warmup_min_iters)};
  if (reference_impl) spec.argv.push_back("--ref");
  spec.argv.insert(spec.argv.end(), extra_args.begin(), extra_args.end());
  if (!options_.cold_samples) spec.argv.push_back("--warm");
  // The bound is DRAM's: warm samples of a shape that fits in the caches may beat it honestly.
  if (arch.dram_gbps > 0 && options_.cold_samples) {
    spec.argv.push_back("--peak-gbps");
    spec.argv.push_back(fmt_num(arch.dram_gbps));
  }
  spec.work_dir = work_dir;
  spec.timeout_s = options_.test_timeout_s;
  spec.inactivity_timeout_s = options_.inactivity_timeout_s;
  spec.output_cap = options_.max_output_bytes;
  // PoCL's kernel cache lives in the child's own directory: a cache shared across candidates
  // would be a channel between them (a memo, or a replaced binary run by the next one). The
  // reference's kernels are compiled only by the reference and checker children.
  // The reference binary (reference and checker children, no candidate code) keeps one cache for
  // the job, so the reference kernel is compiled once, not once per candidate.
  fs::path pocl_cache = work_dir / "pocl-cache";
  SandboxOptions sandbox = run_sandbox(options_, src_dir, binary, read_only);
  if (reference_device) sandbox.env = options_.reference_device_env;
  if (!judge_pocl_cache_.empty() && reference_impl && !candidate_device) {
    pocl_cache = judge_pocl_cache_;
    sandbox.writable_paths.push_back(pocl_cache);
  }
  spec.env.push_back({"POCL_CACHE_DIR", pocl_cache.string()});
  // Idle OpenMP workers sleep instead of spinning, in every harness child alike (the candidate's
  // and the judge's sides of a side-by-side pair). A spinning worker burns CPU time between
  // calls, and the scheduler (CFS's vruntime, EEVDF's lag) then makes it wait behind any other
  // process when the next call wakes it: with one CPU hog on a 2-core machine a 0.3 ms call read
  // 3-10 ms in most samples, more often on the side whose workers had spun more (the candidate
  // child's after its correctness phase). A worker that slept owes the scheduler nothing and
  // gets a CPU at once. A call's own cost is the same either way (its workers are woken at its
  // start); only the debt is gone.
  spec.env.push_back({"OMP_WAIT_POLICY", "PASSIVE"});
  return sandboxed(std::move(spec), sandbox);
}

bool Evaluator::on_reference_device(bool reference_impl, bool candidate_device) const {
  // By role, never by path: an OpenCL candidate's binary is the reference's (its kernels are
  // read at run time), and its runs are the candidate's all the same.
  return reference_impl && !options_.reference_arch_name.empty() && !candidate_device;
}

Status Evaluator::probe_candidate_device(EvalResult& ref) {
  fs::path dir = ref.dir / "candidate-device";
  if (Status s = make_dirs(dir / "tmp"); !s) return s;
  fs::path out_file = dir / "result.json";
  std::unique_lock<std::mutex> device;
  if (options_.device_lock) device = std::unique_lock<std::mutex>(*options_.device_lock);
  ProcessResult proc = runner_.run(harness_spec(judge_binary_, judge_src_dir_, dir, true,
                                                "correctness", out_file, {}, {}, true));
  if (device) device.unlock();
  ref.test_s += proc.wall_s;
  nlohmann::json harness_result = read_json_file(out_file);
  EvalResult run;
  interpret_test_run(proc, harness_result, run);
  if (std::string env = test_run_environment_fault(proc, harness_result, fs::path()); !env.empty())
    run.reason = "environment error (the machine, not the task): " + env;
  else if (run.verdict == kCorrect)
    run.reason.clear();
  if (!run.reason.empty() || run.verdict != kCorrect)
    return Status::error("the reference runs on " + options_.reference_arch_name +
                         " (reference_gpu_arch), but it also has to run on the candidates' "
                         "device, and failed there (verdict " +
                         std::to_string(run.verdict) + ", " +
                         std::string(verdict_name(run.verdict)) + "): " + run.reason +
                         "\nfiles: " + dir.string());
  ref.candidate_device = harness_result;
  return Status::ok();
}

Result<std::string> Evaluator::judge_request(const std::string& verb, std::string* output,
                                             const std::vector<std::string>& fields) {
  // A fresh nonce per request: no line a check prints can pass for the end of its answer.
  std::random_device entropy;
  std::string nonce = strprintf("%08x%08x", entropy(), entropy());
  std::string line = verb + "\t" + nonce;
  for (const std::string& f : fields) line += "\t" + f;
  return judge_->request(line, "kf-judge-done " + nonce + " ", options_.test_timeout_s, output);
}

bool Evaluator::start_judge() {
  fs::path dir = options_.work_root / "judge";
  if (!make_dirs(dir / "tmp")) return false;
  std::vector<std::string> extra = {"--serve", "--expected", expected_dir_.string()};
  if (!extra_shapes_json_.empty())
    extra.insert(extra.end(), {"--extra-shapes", extra_shapes_json_});
  // Every candidate's outputs are under work_root; the judge holds no candidate code.
  ProcessSpec spec = harness_spec(judge_binary_, judge_src_dir_, dir, true, "all",
                                  dir / "serve.json", extra, {options_.work_root});
  // Alive for the whole job: its CPU time adds up over many checks (each has its own timeout).
  spec.cpu_limit_s = 0;
  spec.timeout_s = 0;
  spec.inactivity_timeout_s = 0;
  auto judge = runner_.start_service(spec);
  if (!judge) return false;
  judge_ = std::move(*judge);
  // Filled now (the reference's outputs and inputs), so no candidate's check pays for it.
  auto warm = judge_request("warm", nullptr);
  if (!warm || *warm != "0") {
    judge_.reset();
    return false;
  }
  return true;
}

bool Evaluator::judge_started() {
  if ((judge_ && judge_->running()) || start_judge()) return true;
  ++judge_failures_;
  return false;
}

void Evaluator::judge_lost() {
  judge_.reset();
  ++judge_failures_;
}

bool Evaluator::check_with_judge(const fs::path& dump_dir, const fs::path& out_file,
                                 const std::string& phase, ProcessResult* proc) {
  std::lock_guard<std::mutex> lock(judge_mutex_);
  if (judge_failures_ >= 3 || judge_binary_.empty()) return false;
  fs::path answer =
      options_.work_root / "judge" /
      (out_file.parent_path().filename().string() + "-" + out_file.filename().string());
  for (const std::string& field : {dump_dir.string(), answer.string()})
    if (field.find_first_of("\t\n") != std::string::npos) return false;
  if (!judge_started()) return false;
  auto start = std::chrono::steady_clock::now();
  std::string output;
  auto code = judge_request("check", &output, {phase, dump_dir.string(), answer.string()});
  std::error_code ec;
  if (code) {
    fs::rename(answer, out_file, ec);
    if (ec) fs::copy_file(answer, out_file, fs::copy_options::overwrite_existing, ec);
  }
  if (!code || ec || !std::isdigit(static_cast<unsigned char>(code->empty() ? 'x' : (*code)[0]))) {
    judge_lost();
    return false;
  }
  proc->started = true;
  proc->exit_code = std::atoi(code->c_str());
  proc->output = std::move(output);
  proc->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return true;
}

Result<std::vector<double>> Evaluator::time_reference(const std::string& shape, long calls) {
  using R = Result<std::vector<double>>;
  std::lock_guard<std::mutex> lock(judge_mutex_);
  if (judge_failures_ >= 3 || judge_binary_.empty()) return R::error("the job has no judge");
  if (!judge_started()) return R::error("the judge could not be started");
  std::string output;
  auto code = judge_request("time", &output, {shape, std::to_string(calls)});
  if (!code) {
    judge_lost();
    return R::error(code.message());
  }
  std::vector<double> samples;
  std::string reason;
  for (const std::string& line : split_lines(output)) {
    if (line.rfind("kf-samples", 0) == 0) {
      std::istringstream in(line.substr(10));
      for (double ms; in >> ms;) samples.push_back(ms);
    } else if (!trim(line).empty()) {
      reason = trim(line);
    }
  }
  if (*code != "0" || long(samples.size()) != calls)
    return R::error("the judge could not time the reference (exit " + *code + ")" +
                    (reason.empty() ? "" : ": " + reason));
  return R(std::move(samples));
}

std::vector<std::string> Evaluator::reference_files() const {
  std::vector<std::string> files;
  for (const Block* b : task_.blocks_of(BlockKind::kReference)) {
    bool evolve = false;
    for (const Block* e : task_.blocks_of(BlockKind::kEvolve))
      evolve = evolve || e->file == b->file;
    if (!evolve && std::find(files.begin(), files.end(), b->file) == files.end())
      files.push_back(b->file);
  }
  return files;
}

std::string Evaluator::hidden_shapes_for(const fs::path& binary, const fs::path& work_dir) {
  ProcessSpec spec;
  spec.argv = {binary.string(), "--list"};
  spec.work_dir = work_dir;
  spec.timeout_s = 30;
  ProcessResult r =
      runner_.run(sandboxed(std::move(spec), run_sandbox(options_, work_dir, binary)));
  if (!r.success()) return "";
  auto listed = parse_shape_list(r.output);
  if (!listed) return "";
  // A secret per job (never the config's seed): a candidate cannot know them in advance.
  std::random_device entropy;
  std::uint64_t seed = (std::uint64_t(entropy()) << 32) ^ entropy();
  return hidden_shapes_json(hidden_shapes(*listed, seed));
}

std::vector<fs::path> Evaluator::objects_of(const BuildPlan& plan,
                                            const std::vector<std::string>& files) const {
  std::vector<fs::path> objects;
  for (const BuildStep& step : plan.compiles) {
    for (const std::string& f : files) {
      if (step.label == "compile " + f)
        objects.push_back(options_.cache_dir / "obj" / (step.cache_key + ".o"));
    }
  }
  return objects;
}

ScreenResult Evaluator::screen_build(const BuildPlan& plan, const fs::path& src_dir,
                                     const fs::path& build_dir) {
  std::vector<std::string> evolve_files;
  for (const Block* b : task_.blocks_of(BlockKind::kEvolve)) {
    if (std::find(evolve_files.begin(), evolve_files.end(), b->file) == evolve_files.end())
      evolve_files.push_back(b->file);
  }
  ScreenRequest request;
  request.language = options_.language;
  request.candidate_objects = objects_of(plan, evolve_files);
  for (const BuildStep& step : plan.compiles) {
    fs::path object = options_.cache_dir / "obj" / (step.cache_key + ".o");
    if (std::find(request.candidate_objects.begin(), request.candidate_objects.end(), object) ==
        request.candidate_objects.end())
      request.task_objects.push_back(object);
  }
  request.reference_objects = reference_objects_;
  request.library_files = libraries_;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(src_dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    std::string rel = it->path().lexically_relative(src_dir).generic_string();
    request.package_files.push_back(rel);
    bool evolve = std::find(evolve_files.begin(), evolve_files.end(), rel) != evolve_files.end();
    if (!evolve) continue;
    // In an OCL task every EVOLVE file not compiled as host code is OpenCL C (a header a .cl
    // includes as well as the .cl itself).
    bool ocl = options_.language == Language::kOcl;
    bool host = std::any_of(plan.compiles.begin(), plan.compiles.end(),
                            [&](const BuildStep& step) { return step.label == "compile " + rel; });
    bool opencl = to_lower(it->path().extension().string()) == ".cl" || (ocl && !host);
    if (!opencl && !ocl) continue;
    auto text = read_file(it->path());
    if (text)
      (opencl ? request.opencl_sources : request.host_evolve_sources).emplace_back(rel, *text);
  }
  request.work_dir = build_dir;
  return screen_candidate(request, runner_);
}

std::vector<std::string> Evaluator::reference_symbols(const BuildPlan& plan) {
  std::vector<std::string> files = reference_files();
  std::vector<std::string> symbols;
  for (const BuildStep& step : plan.compiles) {
    bool reference = false;
    for (const std::string& f : files) reference = reference || step.label == "compile " + f;
    if (!reference) continue;
    ProcessSpec spec;
    spec.argv = {"nm", "-P", "-g", "--defined-only",
                 (options_.cache_dir / "obj" / (step.cache_key + ".o")).string()};
    spec.timeout_s = 30;
    ProcessResult r = runner_.run(sandboxed(std::move(spec)));
    if (!r.success()) continue;
    for (const std::string& line : split(r.output, '\n')) {
      std::vector<std::string> cols = split(line, ' ');
      if (cols.size() < 2 || cols[1] != "T") continue;
      const std::string& name = cols[0];
      bool plain = !name.empty() && name.size() < 512;
      for (char c : name)
        plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (plain) symbols.push_back(name);
    }
  }
  return symbols;
}

namespace {

// A source linked into candidate binaries in place of the reference's objects: each of the
// reference's functions jumps to one that throws, so a candidate calling the reference fails
// with a reason instead of getting the reference's speed.
std::string trap_source(const std::vector<std::string>& symbols) {
  std::string out =
      "// Generated by KernelFoundry: the task's reference is not linked into candidate "
      "binaries.\n#include <stdexcept>\n"
      "extern \"C\" void kf_reference_unavailable() {\n"
      "  throw std::runtime_error(\"the candidate called a function of the task's reference, "
      "which is not linked into candidate binaries (the reference runs in its own process, as "
      "the judge): compute the result in your own code\");\n}\n";
  for (const std::string& s : symbols)
    out += "asm(\".globl " + s + "\\n.type " + s + ", @function\\n" + s +
           ":\\n  jmp kf_reference_unavailable\\n\");\n";
  return out;
}

constexpr const char* kTrapFile = "kf_reference_traps.cpp";

}  // namespace

EvalResult Evaluator::build_and_run(const std::string& id,
                                    const std::map<std::string, std::string>& changed, Role role,
                                    bool reference_impl, const RunExtras& extras) {
  EvalResult result;
  result.dir = options_.work_root / id;
  fs::path src_dir = result.dir / "src";
  fs::path build_dir = result.dir / "build";
  fs::path run_dir = result.dir / "run";
  std::error_code ec;
  fs::remove_all(result.dir, ec);
  // Nothing here depends on the code: a failure is the machine's (disk full, read-only path).
  for (const auto& d : {src_dir, build_dir, run_dir / "tmp"}) {
    if (Status s = make_dirs(d); !s)
      return not_evaluated(result, "cannot create the work directory: " + s.message());
  }
  if (Status s = materialize(task_, changed, src_dir); !s)
    return not_evaluated(result, "cannot write the sources to build: " + s.message());
  // A templated kernel's entry point is generated for the build that needs it (eval/templated.h):
  // the package's own EVOLVE blocks, when templated, get one running their first combination
  // (the reference's and test builds) unless the package holds one (a saved best kernel's, with
  // the chosen combination); one the package holds is dropped when other code is built.
  std::map<std::string, std::string> generated = extras.files;
  std::string kept;
  if (generated.empty()) {
    auto templated = find_templated(task_, changed, options_.tuning.max_combinations);
    if (templated && templated->has_value()) {
      std::string path = templated_entry_path(**templated, options_.language);
      if (task_.file(path) != nullptr)
        kept = path;
      else
        generated[path] =
            templated_entry_source((*templated)->kernel, (*templated)->kernel.combinations.front());
    }
  }
  for (const TaskFile& f : task_.files)
    if (is_templated_entry_file(f.path) && generated.count(f.path) == 0 && f.path != kept)
      fs::remove(src_dir / f.path, ec);
  for (const auto& [path, text] : generated) {
    if (Status s = write_file(src_dir / path, text); !s)
      return not_evaluated(result, "cannot write the sources to build: " + s.message());
  }
  if (role == Role::kCandidate) {
    // The candidate's build sees neither the reference's sources nor its code.
    for (const std::string& f : reference_files()) fs::remove(src_dir / f, ec);
    if (!trap_symbols_.empty()) {
      if (Status s = write_file(src_dir / kTrapFile, trap_source(trap_symbols_)); !s)
        return not_evaluated(result, "cannot write the sources to build: " + s.message());
    }
  }

  // Build.
  BuildRequest request{options_.language, src_dir, build_dir, options_.arch.cuda_sm};
  auto plan = plan_build(request, toolchain_);
  if (!plan) {
    // A missing compiler or harness library, or sources that cannot be read: the same for every
    // candidate, so never a verdict on one.
    not_evaluated(result, "cannot plan the build: " + plan.message());
    result.eval_log = format_eval_log({&result, nullptr, "", "", options_.max_log_chars});
    return result;
  }
  BuildLimits limits;
  limits.timeout_s = options_.build_timeout_s;
  limits.inactivity_timeout_s = options_.inactivity_timeout_s;
  limits.output_cap = options_.max_output_bytes;
  limits.parallel = options_.build_parallel;
  limits.sandbox = build_sandbox(options_, toolchain_, src_dir);
  limits.pause_group = options_.build_pause;
  BuildOutcome build = run_build(*plan, options_.cache_dir, limits, runner_);
  result.build_s = build.seconds;
  result.build_steps_run = build.steps_run;
  result.build_steps_cached = build.steps_cached;
  LogCleanOptions clean;
  clean.strip_prefixes = {src_dir.string(), build_dir.string(), toolchain_.include_dir.string()};
  for (const auto& f : task_.files) clean.own_files.push_back(f.path);
  clean.max_chars = options_.max_log_chars;
  std::string build_log = clean_compiler_output(build.output, clean);
  if (!build.ok && !build.environment_error.empty()) {
    not_evaluated(result, "cannot build: " + build.environment_error);
    result.eval_log = format_eval_log({&result, nullptr, build_log, "", options_.max_log_chars});
    return result;
  }
  if (!build.ok) {
    result.verdict = kCompileError;
    result.reason = build.timed_out ? strprintf("build timed out after %.0f s (build_timeout)",
                                                options_.build_timeout_s)
                                    : "did not compile: " + build.error;
    result.eval_log = format_eval_log({&result, nullptr, build_log, "", options_.max_log_chars});
    return result;
  }
  result.binary = build.binary;  // in the cache: for a later compute-sanitizer pass
  // A clean build says so in one line; warnings on the candidate's files are kept for the model.
  if (trim(build_log).empty() || build.steps_run == 0)
    build_log = strprintf("ok (%d steps run, %d from cache, %.2f s)\n", build.steps_run,
                          build.steps_cached, build.seconds);

  if (role == Role::kCandidate && !extras.screened) {
    ScreenResult screen = screen_build(*plan, src_dir, build_dir);
    result.screen_s = screen.seconds;
    if (!screen.ok) {
      if (!screen.environment_error.empty()) {
        not_evaluated(result, "cannot screen the build: " + screen.environment_error);
      } else {
        result.verdict = kCompileError;
        result.reason = screen.reason;
      }
      result.eval_log = format_eval_log(
          {&result, nullptr, build_log + "\n" + screen.log, "", options_.max_log_chars});
      return result;
    }
  }
  if (role == Role::kReference) {
    reference_build_key_ = plan->link.cache_key;
    reference_objects_ = objects_of(*plan, reference_files());
    // Once, before candidates are evaluated (from several threads): what task binaries link.
    libraries_ = link_libraries(options_.language, runner_, toolchain_.cxx);
    const char* flavour = options_.language == Language::kOcl    ? "kf_harness_opencl"
                          : options_.language == Language::kCuda ? "kf_harness_cuda"
                                                                 : "kf_harness_host";
    libraries_.push_back(toolchain_.lib_dir / ("lib" + std::string(flavour) + ".a"));
    extra_shapes_json_ = options_.hidden_shapes && !options_.fixed_shapes
                             ? hidden_shapes_for(build.binary, run_dir)
                             : "";
  }

  // Tests and timing in one child, alone on the device.
  std::unique_lock<std::mutex> device;
  if (options_.device_lock) device = std::unique_lock<std::mutex>(*options_.device_lock);
  if (!extras.sweep.empty() && extras.swept != nullptr) {
    run_sweep_child(build.binary, src_dir, run_dir, extras, result);
    if (device) device.unlock();
    result.eval_log = format_eval_log({&result, nullptr, build_log, "", options_.max_log_chars});
    fs::remove_all(build_dir, ec);
    return result;
  }
  fs::path out_file = run_dir / "result.json";
  std::vector<std::string> extra;
  fs::path dump_dir = run_dir / "outputs";
  // Inside the reference child's work dir: the only place it may write.
  if (role == Role::kReference) extra = {"--expected-out", (run_dir / "expected").string()};
  // A kept timing is to be re-checked: a short benchmark (the job's settings come first, these
  // override them).
  if (role == Role::kReference && reference_recheck_run_)
    for (std::string& a : recheck_harness_args(options_)) extra.push_back(std::move(a));
  if (role == Role::kCandidate) extra = {"--dump-dir", dump_dir.string()};
  if (role != Role::kTest && !extra_shapes_json_.empty())
    extra.insert(extra.end(), {"--extra-shapes", extra_shapes_json_});
  extra.insert(extra.end(), extras.args.begin(), extras.args.end());
  if (extras.short_timing)
    for (std::string& a : short_timing_args(options_)) extra.push_back(std::move(a));
  const double budget_s = options_.time_budget_s * extras.budget_share;
  if (!extras.short_timing && extras.budget_share != 1)
    extra.insert(extra.end(), {"--time-budget", fmt_num(budget_s)});
  // The candidate's timed calls in batches, each next to a batch of the reference's timed by the
  // judge (a speedup measured side by side): where the job has a judge.
  std::unique_ptr<PacedTiming> paced;
  if (role == Role::kCandidate && !extras.short_timing)
    paced = start_paced(run_dir, budget_s, extra);
  ProcessResult proc =
      run_harness(build.binary, src_dir, run_dir, reference_impl, "all", out_file, extra);
  if (paced) paced->finish();
  result.test_s = proc.wall_s;
  nlohmann::json harness_result = read_json_file(out_file);
  interpret_test_run(proc, harness_result, result);
  if (role == Role::kCandidate) flag_env_switches(result, harness_result);
  if (std::string env = test_run_environment_fault(proc, harness_result,
                                                   role == Role::kCandidate ? run_dir : fs::path());
      !env.empty()) {
    if (device) device.unlock();
    not_evaluated(result, env);
    result.eval_log =
        format_eval_log({&result, nullptr, build_log, clean_compiler_output(proc.output, clean),
                         options_.max_log_chars});
    return result;
  }
  if (result.verdict == kCompileError) {
    // Run-time compiled kernels (OpenCL): the driver's log is the compiler output.
    clean.strip_prefixes.push_back(run_dir.string());
  }
  // The child's reported sample times must fit in the wall time we measured around it.
  if (options_.check_wall_time && result.harness.is_object())
    if (auto past = samples_past_wall_time(json_number(result.harness, "sampled_ms_total") / 1000.0,
                                           proc.wall_s, "the test child"))
      add_flag(result, "reported_time_exceeds_wall_time", *past, true);
  if (paced && result.verdict == kCorrect) take_pairs(result, *paced);
  if (role == Role::kCandidate && result.verdict == kCorrect)
    check_outputs(result, dump_dir, run_dir, "all");
  if (role == Role::kReference && result.verdict == kCorrect) {
    judge_binary_ = build.binary;
    judge_src_dir_ = src_dir;
    expected_dir_ = run_dir / "expected";
    trap_symbols_ = reference_symbols(*plan);
    std::lock_guard<std::mutex> lock(judge_mutex_);
    if (!start_judge()) ++judge_failures_;
  }
  if (result.verdict == kCorrect && !reference_impl) {
    score(result);
    remeasure_if_suspect(result, build.binary, src_dir, run_dir, extras.args);
  }
  if (device) device.unlock();
  if (!extras.busy_first_run.empty())
    add_flag(result, "confirmed_on_busy_machine", extras.busy_first_run, false);
  score(result);
  std::string test_output = clean_compiler_output(proc.output, clean);
  result.eval_log = format_eval_log({&result, reference(), build_log, test_output,
                                     options_.max_log_chars, options_.cold_samples});
  // Binaries live in the cache; the candidate's directory keeps sources, result and log.
  fs::remove_all(build_dir, ec);
  return result;
}

void Evaluator::run_sweep_child(const fs::path& binary, const fs::path& src_dir,
                                const fs::path& run_dir, const RunExtras& extras,
                                EvalResult& result) {
  std::vector<EvalResult>& out = *extras.swept;
  out.clear();
  nlohmann::json list = nlohmann::json::array();
  std::vector<fs::path> dirs;
  for (size_t i = 0; i < extras.sweep.size(); ++i) {
    fs::path dir = run_dir / strprintf("sweep-%03zu", i);
    if (Status s = make_dirs(dir); !s) {
      not_evaluated(result, "cannot create the work directory: " + s.message());
      return;
    }
    dirs.push_back(dir);
    list.push_back({{"template_params", extras.sweep[i]},
                    {"out", (dir / "result.json").string()},
                    {"dump_dir", (dir / "outputs").string()}});
  }
  fs::path sweep_file = run_dir / "sweep.json";
  if (Status s = write_file(sweep_file, list.dump()); !s) {
    not_evaluated(result, "cannot write the sweep's list: " + s.message());
    return;
  }
  std::vector<std::string> extra = {"--sweep", sweep_file.string()};
  if (!extra_shapes_json_.empty())
    extra.insert(extra.end(), {"--extra-shapes", extra_shapes_json_});
  extra.insert(extra.end(), extras.args.begin(), extras.args.end());
  for (std::string& a : short_timing_args(options_)) extra.push_back(std::move(a));
  ProcessSpec spec = harness_spec(binary, src_dir, run_dir, false, "all",
                                  run_dir / "sweep_result.json", std::move(extra));
  // The test time limit is each combination's; a hang is caught by the inactivity limit (every
  // combination prints as it goes).
  spec.timeout_s = options_.test_timeout_s * double(extras.sweep.size());
  ProcessResult proc = runner_.run(std::move(spec));
  result.test_s = proc.wall_s;
  // A finished combination's run, as a child of its own that exited with its status would be.
  auto as_exited = [&](const nlohmann::json& r) {
    ProcessResult p;
    p.started = true;
    std::string status = json_text(r, "status");
    p.exit_code = status == "pass" ? 0 : status == "error" ? 2 : 1;
    return p;
  };
  double sampled_s = 0;
  for (size_t i = 0; i < dirs.size(); ++i) {
    nlohmann::json r = read_json_file(dirs[i] / "result.json");
    bool finished = r.is_object() && r.contains("finished") && r["finished"].is_boolean() &&
                    r["finished"].get<bool>();
    // Not begun: the child ended after the one before (the rest are for another child), unless
    // it ended before the first (a crash at start: that one's verdict).
    if (!finished && !r.is_object() && i > 0) break;
    ProcessResult own = finished ? as_exited(r) : proc;
    if (std::string env = test_run_environment_fault(own, r, dirs[i]); !env.empty()) {
      not_evaluated(result, env);
      out.clear();
      return;
    }
    EvalResult e;
    e.dir = dirs[i];
    interpret_test_run(own, r, e);
    flag_env_switches(e, r);
    sampled_s += json_number(r, "sampled_ms_total") / 1000.0;
    if (e.verdict == kCorrect) check_outputs(e, dirs[i] / "outputs", dirs[i], "all");
    if (!e.environment_error.empty()) {
      not_evaluated(result, e.environment_error);
      out.clear();
      return;
    }
    score(e);
    e.eval_log =
        format_eval_log({&e, reference(), "", "", options_.max_log_chars, options_.cold_samples});
    out.push_back(std::move(e));
    if (!finished) break;
  }
  // The samples every combination reported must fit in the child's wall time together.
  if (options_.check_wall_time)
    if (auto past = samples_past_wall_time(sampled_s, proc.wall_s, "the sweep's child"))
      for (EvalResult& e : out) {
        add_flag(e, "reported_time_exceeds_wall_time", *past, true);
        score(e);
      }
  result.verdict = out.empty() ? kRuntimeError : kCorrect;
  result.reason = strprintf("sweep: %zu of %zu combination(s) run in one child", out.size(),
                            extras.sweep.size());
}

void Evaluator::score(EvalResult& r) const {
  r.speedup.reset();
  r.speedup_interval.reset();
  if (r.verdict == kCorrect && !r.pairs.empty()) {
    // Measured side by side: the paired batches, with their interval.
    SpeedupInterval paired = paired_speedup(r.pairs);
    if (paired.batches > 0) {
      r.speedup = paired.speedup;
      r.speedup_interval = paired;
    }
  }
  if (!r.speedup && r.verdict == kCorrect && reference_ && !r.timings.empty())
    r.speedup = geomean_speedup(reference_->timings, r.timings);
  if (r.speedup && *r.speedup > options_.max_plausible_speedup)
    add_flag(r, "implausible_speedup",
             strprintf("speedup %.1fx is above max_plausible_speedup (%.0fx)", *r.speedup,
                       options_.max_plausible_speedup),
             true);
  r.fitness = eval_fitness(r);
  if (r.verdict == kCorrect && r.suspect() &&
      r.reason.find("not counted as a win") == std::string::npos)
    r.reason += "; flagged by the integrity checks, not counted as a win";
}

std::unique_ptr<PacedTiming> Evaluator::start_paced(const fs::path& run_dir, double budget_s,
                                                    std::vector<std::string>& harness_args) {
  if (!options_.paired_timing || !has_judge()) return nullptr;
  PacedTiming::Options po;
  po.shape_budget_s = budget_s;
  // The least a shape takes is the probe and three pairs (seven batches): batches sized so that
  // fits the shape's budget where the budget is short (tests, quick jobs), 100 ms of wall time
  // and 25 ms of device time at most.
  double fit_ms = std::max(budget_s * 1e3 / 8, 2.0);
  po.batch_wall_ms = std::min(po.batch_wall_ms, fit_ms);
  po.batch_target_ms = std::min(po.batch_target_ms, fit_ms);
  po.rel_halfwidth = 2 * options_.noise_target;
  po.answer_timeout_s = options_.test_timeout_s;
  po.pause = options_.build_pause;
  auto started = PacedTiming::start(run_dir, po, [this](const std::string& shape, long calls) {
    return time_reference(shape, calls);
  });
  if (!started) return nullptr;
  std::vector<std::string> args = (*started)->harness_args();
  harness_args.insert(harness_args.end(), args.begin(), args.end());
  return std::move(*started);
}

void Evaluator::take_pairs(EvalResult& result, const PacedTiming& paced) const {
  for (const std::string& s : paced.suspicions())
    add_flag(result, "batch_time_exceeds_wall_time", s, true);
  if (!paced.complete()) {
    add_flag(result, "not_side_by_side",
             "the speedup is against the reference's timing at job start: " +
                 (paced.problem().empty() ? std::string("the paced benchmark did not finish")
                                          : paced.problem()),
             false);
    return;
  }
  result.pairs = paced.pairs();
  std::map<std::string, std::vector<double>> reported;
  for (const auto& [shape, t] : result.timings) reported[shape] = t.samples_ms;
  if (std::string differs = compare_reported_samples(result.pairs, reported); !differs.empty())
    add_flag(result, "reported_samples_differ_from_batches", differs, true);
  // Said, not hidden: on a contended machine both sides' calls wait for the scheduler, so the
  // pairs are noisier (a wider interval) though still side by side.
  if (paced.cpu_pressure() >= kBusyCpuPressure)
    add_flag(result, "machine_busy",
             strprintf("during the side-by-side benchmark some task waited for a CPU %.0f%% "
                       "of the time (/proc/pressure/cpu): other processes competed with the "
                       "timed calls, so both sides' samples carry the scheduler's delays and "
                       "the interval is wider; for a tighter figure evaluate on an idle "
                       "machine",
                       100 * paced.cpu_pressure()),
             false);
}

void Evaluator::remeasure_if_suspect(EvalResult& r, const fs::path& binary, const fs::path& src_dir,
                                     const fs::path& work_dir,
                                     const std::vector<std::string>& run_args) {
  bool timing_suspect = false;
  for (const auto& f : r.flags) {
    std::string name = f.value("flag", "");
    if (name == "faster_than_roofline" || name == "implausible_speedup") timing_suspect = true;
  }
  if (!timing_suspect) return;
  fs::path out_file = work_dir / "remeasure.json";
  fs::path dump_dir = work_dir / "remeasure-outputs";
  std::vector<std::string> extra;
  if (!judge_binary_.empty()) extra = {"--dump-dir", dump_dir.string()};
  extra.insert(extra.end(), run_args.begin(), run_args.end());
  // Side by side like the first measurement: alone, against the reference's timing at job start,
  // a busy machine's drift would be the figure (0.90x and 1.09x for the reference's own code
  // under one CPU hog on the 2-core VM, where the paired runs read within 2%).
  std::unique_ptr<PacedTiming> paced = start_paced(work_dir, options_.time_budget_s, extra);
  ProcessResult proc = run_harness(binary, src_dir, work_dir, false, "benchmark", out_file, extra);
  if (paced) paced->finish();
  EvalResult again;
  nlohmann::json harness_result = read_json_file(out_file);
  interpret_test_run(proc, harness_result, again);
  flag_env_switches(again, harness_result);
  if (paced && again.verdict == kCorrect) take_pairs(again, *paced);
  if (!judge_binary_.empty() && again.verdict == kCorrect)
    check_outputs(again, dump_dir, work_dir, "benchmark");
  if (std::string env = test_run_environment_fault(proc, harness_result, work_dir); !env.empty()) {
    not_evaluated(r, "while re-measuring: " + env);
    return;
  }
  score(again);
  std::string detail = again.speedup ? strprintf("re-measured: speedup %.2fx", *again.speedup)
                                     : "re-measurement failed: " + again.reason;
  if (again.verdict == kCorrect && !again.suspect()) {
    // The first measurement was a fluke: keep the clean one, note what happened.
    r.timings = again.timings;
    r.pairs = again.pairs;
    r.flags = again.flags;  // informative ones only (machine_busy, not_side_by_side)
    add_flag(r, "remeasured", "the first measurement was flagged; " + detail, false);
  } else {
    add_flag(r, "remeasured", "still flagged after a second measurement; " + detail, true);
  }
}

void Evaluator::check_outputs(EvalResult& result, const fs::path& dump_dir,
                              const fs::path& work_dir, const std::string& phase) {
  fs::path check_dir = work_dir / ("check-" + phase);
  std::error_code ec;
  fs::remove_all(check_dir, ec);
  if (Status s = make_dirs(check_dir / "tmp"); !s) {
    not_evaluated(result, "cannot create the checker's directory: " + s.message());
    return;
  }
  fs::path out_file = check_dir / "check.json";
  ProcessResult proc;
  if (!check_with_judge(dump_dir, out_file, phase, &proc)) {
    std::vector<std::string> args = {"--check", dump_dir.string(), "--expected",
                                     expected_dir_.string()};
    if (!extra_shapes_json_.empty())
      args.insert(args.end(), {"--extra-shapes", extra_shapes_json_});
    proc = run_harness(judge_binary_, judge_src_dir_, check_dir, true, phase, out_file, args,
                       {dump_dir, expected_dir_});
  }
  result.test_s += proc.wall_s;
  result.check_s += proc.wall_s;
  nlohmann::json verdict = read_json_file(out_file);
  EvalResult judged;
  interpret_test_run(proc, verdict, judged);
  for (const auto& f : judged.flags)
    add_flag(result, f.value("flag", ""), f.value("detail", ""), f.value("suspect", false));
  if (judged.verdict == kCorrect) {
    // The judge's count of checks, then the candidate child's own account of its timing.
    std::string timing;
    if (size_t at = result.reason.find("; "); at != std::string::npos)
      timing = result.reason.substr(at);
    result.reason = judged.reason + timing;
    return;
  }
  if (json_text(verdict, "error_kind") == "judge" || !verdict.is_object()) {
    // The checker itself failed (the reference on the timed inputs, or the process): the
    // outputs are unconfirmed, so the candidate is not counted; said as the judge's failure.
    result.verdict = kRuntimeError;
    result.reason = "the checker could not confirm the outputs: " +
                    (verdict.is_object() ? json_text(verdict, "reason") : proc.describe());
    return;
  }
  result.verdict = judged.verdict;
  result.reason = judged.reason;
  if (result.harness.is_object()) result.harness["check"] = verdict;
}

Result<EvalResult> Evaluator::prepare_reference() {
  // Kept timings of the same task and settings: if there are any, the reference's run measures
  // short, to re-check one of them (its device and build are known only after the run).
  ReferenceTimingKey setup = reference_timing_setup(task_.hash, options_);
  std::vector<ReferenceTimingEntry> kept;
  std::vector<std::string> notes;
  if (options_.reference_timings && options_.reuse_reference_timing) {
    auto entries = options_.reference_timings->entries(task_.hash);
    if (!entries) {
      notes.push_back("kept timings not read: " + entries.message());
    } else {
      for (ReferenceTimingEntry& e : *entries)
        if (e.key.same_setup(setup)) kept.push_back(std::move(e));
    }
  }
  reference_recheck_run_ = !kept.empty();
  EvalResult ref = text_safe(build_and_run("reference", {}, Role::kReference, true));
  reference_recheck_run_ = false;
  reference_environment_error_ = ref.environment_error;
  if (!ref.environment_error.empty())
    return Result<EvalResult>::error(
        "cannot evaluate the task's reference: environment error (the machine, not the task): " +
        ref.environment_error + "\nFix that and run the job again.");
  if (ref.verdict != kCorrect)
    return Result<EvalResult>::error(
        "the task's reference failed its own check (verdict " + std::to_string(ref.verdict) + ", " +
        std::string(verdict_name(ref.verdict)) + "): " + ref.reason + "\n" + ref.eval_log);
  if (options_.reference_timings) {
    if (Status s = settle_reference_timing(ref, setup, kept, std::move(notes)); !s) {
      if (!ref.environment_error.empty()) reference_environment_error_ = ref.environment_error;
      return Result<EvalResult>::error(s.message());
    }
    ref.eval_log = escape_invalid_utf8(ref.eval_log);
    // The reference's eval log is the record of where its timing came from.
    (void)write_file(ref.dir / "eval_log.txt", ref.eval_log);
  }
  // The candidates run elsewhere: the reference once on their device too, which says what that
  // device is (the arch check) and that the task runs there at all.
  if (!options_.reference_arch_name.empty()) KF_RETURN_IF_ERROR(probe_candidate_device(ref));
  reference_ = std::move(ref);
  return *reference_;
}

Status Evaluator::settle_reference_timing(EvalResult& ref, const ReferenceTimingKey& setup,
                                          const std::vector<ReferenceTimingEntry>& kept,
                                          std::vector<std::string> notes) {
  ReferenceTimingKey key = reference_timing_key(setup, ref.harness, reference_build_key_);
  ReferenceTimingOutcome outcome;
  outcome.digest = key.digest();
  outcome.source = options_.reuse_reference_timing ? ReferenceTimingOutcome::Source::kTimed
                                                   : ReferenceTimingOutcome::Source::kFresh;
  bool measured_short = !kept.empty();
  if (measured_short) {
    const ReferenceTimingEntry* match = nullptr;
    for (const ReferenceTimingEntry& e : kept)
      if (e.key.digest() == outcome.digest) match = &e;
    if (match != nullptr) {
      outcome.from_job = match->job_name;
      outcome.timed_at = match->created_at;
      outcome.recheck =
          recheck_timings(match->timings, ref.timings, options_.reference_recheck_tolerance);
      outcome.recheck_timings = ref.timings;
      outcome.source = outcome.recheck.agree ? ReferenceTimingOutcome::Source::kReused
                                             : ReferenceTimingOutcome::Source::kRetimed;
      if (outcome.recheck.agree) ref.timings = match->timings;
    } else {
      // The newest kept timing of the same setup says why none fits.
      notes.insert(notes.begin(), "the kept timing is of another " +
                                      key.run_differences(kept.front().key) + ": timed in full");
    }
  }
  if (measured_short && outcome.source != ReferenceTimingOutcome::Source::kReused) {
    KF_RETURN_IF_ERROR(retime_reference(ref));
  }
  if (outcome.source != ReferenceTimingOutcome::Source::kReused) {
    ReferenceTimingEntry entry;
    entry.key = key;
    entry.timings = ref.timings;
    entry.job_name = options_.job_name;
    if (Status s = options_.reference_timings->save(entry); !s)
      notes.push_back("timing not kept for later jobs: " + s.message());
  }
  outcome.notes = std::move(notes);
  ref.timing_source_text = escape_invalid_utf8(outcome.progress_text());
  ref.timing_source = outcome.to_json();
  ref.eval_log += "\n== reference timing\n" + outcome.log_text();
  return Status::ok();
}

Status Evaluator::retime_reference(EvalResult& ref) {
  fs::path dir = ref.dir / "retime";
  if (Status s = make_dirs(dir / "tmp"); !s) {
    ref.environment_error = "cannot create the directory to re-time the reference: " + s.message();
    return Status::error(
        "cannot evaluate the task's reference: environment error (the machine, "
        "not the task): " +
        ref.environment_error + "\nFix that and run the job again.");
  }
  fs::path out_file = dir / "result.json";
  std::unique_lock<std::mutex> device;
  if (options_.device_lock) device = std::unique_lock<std::mutex>(*options_.device_lock);
  ProcessResult proc = run_harness(judge_binary_, judge_src_dir_, dir, true, "benchmark", out_file);
  if (device) device.unlock();
  ref.test_s += proc.wall_s;
  nlohmann::json harness_result = read_json_file(out_file);
  EvalResult again;
  interpret_test_run(proc, harness_result, again);
  if (std::string env = test_run_environment_fault(proc, harness_result, fs::path());
      !env.empty()) {
    ref.environment_error = env;
    return Status::error(
        "cannot time the task's reference: environment error (the machine, not the task): " + env +
        "\nFix that and run the job again.");
  }
  if (again.verdict != kCorrect || again.timings.empty())
    return Status::error(
        "the task's reference passed its check but failed when timed in full "
        "(verdict " +
        std::to_string(again.verdict) + ", " + std::string(verdict_name(again.verdict)) +
        "): " + again.reason + "\nfiles: " + dir.string());
  ref.timings = std::move(again.timings);
  ref.benchmark_s = again.benchmark_s;
  if (ref.harness.is_object() && harness_result.is_object()) {
    ref.harness["timings"] = harness_result.value("timings", nlohmann::json::object());
    ref.harness["stats"] = harness_result.value("stats", nlohmann::json::object());
  }
  return Status::ok();
}

EvalResult Evaluator::evaluate(const std::string& candidate_id,
                               const std::map<std::string, std::string>& changed) {
  // Without a prepared reference (no judge yet) the package runs as one binary, as a test run.
  Role role = judge_binary_.empty() ? Role::kTest : Role::kCandidate;
  auto templated = find_templated(task_, changed, options_.tuning.max_combinations);
  if (!templated) {
    // A dispatcher that cannot be read is the code's fault, like one that does not compile.
    EvalResult result;
    result.dir = options_.work_root / candidate_id;
    result.verdict = kCompileError;
    result.reason = templated.message();
    result.eval_log = format_eval_log({&result, nullptr, "", "", options_.max_log_chars});
    return text_safe(std::move(result));
  }
  EvalResult result = templated->has_value()
                          ? evaluate_templated(candidate_id, changed, role, **templated)
                          : build_and_run(candidate_id, changed, role, false);
  // Faster by its interval, but measured while other processes competed for the CPUs: measured
  // once more, side by side in a fresh child (the build is the cache's), and that run is the
  // result. Two runs each favoured by the scheduler are far rarer than one. (A templated
  // kernel's result is already such a confirming run.)
  if (!templated->has_value() && role == Role::kCandidate && faster_on_a_busy_machine(result)) {
    const SpeedupInterval first = *result.speedup_interval;
    RunExtras confirm;
    confirm.busy_first_run = strprintf(
        "the first side-by-side measurement read %.3fx [%.3f-%.3f] while the machine "
        "was busy; this result is a second one, in a fresh child",
        first.speedup, first.lo, first.hi);
    EvalResult again = build_and_run(candidate_id + "/busy-confirm", changed, role, false, confirm);
    if (!again.environment_error.empty()) {
      result = std::move(again);  // the machine failed: no figure, as for any run
    } else {
      again.build_s += result.build_s;
      again.test_s += result.test_s;
      again.screen_s += result.screen_s;
      again.check_s += result.check_s;
      score(again);
      result = std::move(again);
    }
  }
  // reference_gpu_arch: the speedup is a ratio across two devices; the log says which.
  if (!options_.reference_arch_name.empty() && result.speedup) {
    if (!ends_with(result.eval_log, "\n")) result.eval_log += "\n";
    result.eval_log += "speedup against the reference on " + options_.reference_arch_name +
                       " (reference_gpu_arch); this kernel ran on " + options_.arch.name + "\n";
  }
  return text_safe(std::move(result));
}

EvalResult Evaluator::run_tests_once(bool reference_impl) {
  return text_safe(
      build_and_run(reference_impl ? "test-reference" : "test", {}, Role::kTest, reference_impl));
}

}  // namespace kf
