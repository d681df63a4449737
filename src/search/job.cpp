// A job: compose the config, load the task, open the store, evaluate candidates, store and report.
#include "search/job.h"

#include "arch/host_bandwidth.h"

#include <csignal>
#include <cstdlib>
#include <ostream>

#include "config/api_keys.h"
#include "eval/profile.h"
#include "proc/sandbox.h"
#include "search/job_owner.h"
#include "search/reference_timing_store.h"
#include "search/seed_kernel.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/secrets.h"
#include "util/strings.h"

namespace kf {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) {
  g_interrupted = 1;
}

std::string task_arg(const std::vector<std::string>& args) {
  std::string task;
  for (const auto& a : args)
    if (starts_with(a, "task=")) task = a.substr(5);
  return task;
}

// Files are bytes; the record is JSON text. Text that is not valid UTF-8 is kept with each bad
// byte written `\xNN` (and "escaped": true); large data files are kept as path, size and hash.
nlohmann::json files_json(const TaskPackage& task) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : task.files) {
    nlohmann::json entry = {{"path", escape_invalid_utf8(f.path)}};
    if (f.large()) {
      entry["bytes"] = f.size;
      entry["sha256"] = f.sha256;
      entry["stored"] = "by hash";
    } else if (f.binary) {
      entry["binary"] = true;
      entry["bytes"] = f.content.size();
      entry["sha256"] = sha256_hex(f.content);
    } else if (is_valid_utf8(f.content)) {
      entry["content"] = f.content;
    } else {
      entry["content"] = escape_invalid_utf8(f.content);
      entry["escaped"] = true;
    }
    files.push_back(std::move(entry));
  }
  return files;
}

nlohmann::json blocks_json(const TaskPackage& task) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& b : task.blocks) {
    blocks.push_back({{"kind", block_kind_name(b.kind)},
                      {"file", escape_invalid_utf8(b.file)},
                      {"index", b.index},
                      {"start_line", b.start_line},
                      {"end_line", b.end_line}});
  }
  return blocks;
}

}  // namespace

TaskRecord task_record(const JobContext& job) {
  return TaskRecord{job.task.hash,
                    job.task_name,
                    std::string(language_name(job.language)),
                    files_json(job.task).dump(),
                    blocks_json(job.task).dump(),
                    ""};
}

std::string speedup_text(const std::optional<double>& s) {
  return s ? strprintf("%.3fx", *s) : "-";
}

std::string speedup_text(const std::optional<double>& speedup,
                         const std::optional<SpeedupInterval>& interval) {
  if (!speedup || !interval) return speedup_text(speedup);
  return speedup_text(speedup) + " " + interval_text(*interval);
}

bool beats_best(const EvalResult& candidate, const std::optional<double>& best_speedup,
                const std::optional<SpeedupInterval>& best_interval) {
  return candidate.verdict == kCorrect && candidate.speedup && !candidate.suspect() &&
         faster_than(candidate.speedup, candidate.speedup_interval, best_speedup, best_interval);
}

std::optional<KernelRecord::Interval> stored_interval(const std::optional<SpeedupInterval>& s) {
  if (!s) return std::nullopt;
  return KernelRecord::Interval{s->lo, s->hi, s->confidence, s->batches};
}

std::optional<SpeedupInterval> speedup_interval_of(const KernelRecord& k) {
  if (!k.speedup || !k.speedup_interval) return std::nullopt;
  SpeedupInterval s;
  s.speedup = *k.speedup;
  s.lo = k.speedup_interval->lo;
  s.hi = k.speedup_interval->hi;
  s.confidence = k.speedup_interval->confidence;
  s.batches = k.speedup_interval->batches;
  return s;
}

EvalOptions eval_options(const JobContext& job) {
  const Config& c = job.config;
  EvalOptions o;
  o.language = job.language;
  o.arch = job.arch;
  o.build_timeout_s = c.get_double("build_timeout", 200);
  o.test_timeout_s = c.get_double("test_timeout", 300);
  o.inactivity_timeout_s = c.get_double("eval_config.inactivity_timeout", 60);
  o.max_output_bytes = static_cast<size_t>(c.get_int("eval_config.max_output_bytes", 1 << 20));
  o.max_log_chars = static_cast<size_t>(c.get_int("prompt.max_log_chars", 6000));
  o.num_seeds = static_cast<int>(c.get_int("eval_config.num_seeds", 3));
  o.large_shape_mib = c.get_double("eval_config.large_shape_mib", 64);
  o.noise_target = c.get_double("eval_config.noise_target", 0.005);
  o.min_samples = static_cast<int>(c.get_int("eval_config.min_samples", 10));
  o.max_samples = static_cast<int>(c.get_int("eval_config.max_samples", 2000));
  o.time_budget_s = c.get_double("eval_config.time_budget", 2.0);
  o.warmup_min_time_s = c.get_double("eval_config.warmup_min_time", 0.05);
  o.warmup_min_iters = static_cast<int>(c.get_int("eval_config.warmup_min_iters", 3));
  o.cold_samples = c.get_bool("eval_config.cold_samples", true);
  o.max_plausible_speedup = c.get_double("eval_config.max_plausible_speedup", 100);
  o.check_wall_time = c.get_bool("eval_config.check_wall_time", true);
  o.hidden_shapes = c.get_bool("eval_config.hidden_shapes", true);
  o.fixed_shapes = c.get_bool("eval_config.fixed_shapes", false);
  if (auto mode = parse_sandbox_mode(c.get_string("eval_config.sandbox", "auto")))
    o.sandbox = *mode;  // the schema allows only the three names
  o.memory_limit_gib = c.get_double("eval_config.memory_limit_gib", 8);
  o.max_processes = static_cast<int>(c.get_int("eval_config.max_processes", 256));
  o.cpu_time_limit_s = c.get_double("eval_config.cpu_time_limit", 0);
  if (auto mode = parse_sanitizer_mode(c.get_string("eval_config.compute_sanitizer", "auto")))
    o.compute_sanitizer = *mode;  // the schema allows only the three names
  if (c.has("eval_config.sanitizer_tools")) {
    o.sanitizer_tools.clear();
    for (const std::string& t : c.get_list("eval_config.sanitizer_tools"))
      if (!trim(t).empty()) o.sanitizer_tools.push_back(to_lower(trim(t)));
  }
  o.sanitizer_timeout_s = c.get_double("eval_config.sanitizer_timeout", 300);
  o.profile_candidates = c.get_bool("eval_config.profile_custom_model", true);
  o.profile_reference = c.get_bool("eval_config.profile_original_model", false);
  o.profiler_kernel = parse_profiler_choice(c.get_string("eval_config.profiler_kernel", "auto"));
  o.profiler_reference =
      parse_profiler_choice(c.get_string("eval_config.profiler_reference", "auto"));
  o.reuse_reference_timing = c.get_bool("eval_config.reuse_reference_timing", true);
  o.reference_recheck_tolerance = c.get_double("eval_config.reference_recheck_tolerance", 0.03);
  o.job_name = job.job_name;
  o.cache_dir = c.get_string("paths.cache_dir", "runs/cache");
  o.work_root = job.run_dir / "work";
  if (job.tune) {
    o.tuning.max_combinations = kMaxTuneCombinations;
    o.tuning.budget = static_cast<size_t>(c.get_int("tune.budget", 0));
    o.tuning.seed = static_cast<uint64_t>(c.get_int("seed", 0));
    o.tuning.state_dir = job.run_dir;
    o.tuning.resume = c.get_bool("resume", false);
  }
  return o;
}

Status prepare_sanitizer(EvalOptions& options, const Toolchain& toolchain, std::ostream& out) {
  const char* path = std::getenv("PATH");
  auto setup = check_sanitizer(options.compute_sanitizer, options.language, options.sanitizer_tools,
                               find_compute_sanitizer(toolchain, path != nullptr ? path : ""));
  if (!setup) return setup.status();
  if (!setup->note.empty()) out << setup->note << "\n";
  options.sanitizer_path = setup->tool;
  return Status::ok();
}

namespace {

// arch_targets, parsed; the error names the key.
Result<std::vector<ArchTarget>> arch_targets(const Config& config) {
  using R = Result<std::vector<ArchTarget>>;
  const std::string targets_key =
      " (key 'arch_targets', from " + config.origin("arch_targets").describe() + ")";
  std::vector<ArchTarget> targets;
  for (const std::string& entry : config.get_list("arch_targets")) {
    if (trim(entry).empty()) continue;
    auto target = parse_arch_target(entry);
    if (!target) return R::error(target.message() + targets_key);
    for (const ArchTarget& t : targets)
      if (t.arch == target->arch)
        return R::error("arch_targets names '" + t.arch + "' twice" + targets_key);
    targets.push_back(std::move(*target));
  }
  return targets;
}

// The job's archs (gpu_arch) with their targets (arch_targets), checked before anything runs.
Result<std::vector<ArchLane>> arch_lanes(const Config& config, Language language,
                                         const std::vector<ArchTarget>& targets) {
  using R = Result<std::vector<ArchLane>>;
  const std::string gpu_arch_key =
      " (key 'gpu_arch', from " + config.origin("gpu_arch").describe() + ")";
  const std::string targets_key =
      " (key 'arch_targets', from " + config.origin("arch_targets").describe() + ")";
  std::vector<std::string> archs = normalize_gpu_archs(config);
  if (archs.size() > 1 && language == Language::kCpp)
    return R::error("gpu_arch lists " + std::to_string(archs.size()) + " archs (" +
                    join(archs, ",") +
                    "), but CPP kernels run on the host CPU only: set gpu_arch "
                    "to cpu or native" +
                    gpu_arch_key);
  std::vector<ArchLane> lanes;
  for (const std::string& name : archs) {
    ArchLane lane;
    lane.name = name;
    if (archs.size() > 1 && arch_profile_name(name) == "native")
      return R::error("gpu_arch lists " + join(archs, ",") +
                      ": 'native' cannot be one of several archs; name each arch (a profile "
                      "name, e.g. h100 or cpu, with a '/label' to tell two alike apart) and give "
                      "it a device in arch_targets" +
                      gpu_arch_key);
    auto profile = find_arch(arch_profile_name(name));
    if (!profile) return R::error(profile.message() + gpu_arch_key);
    lane.arch = *profile;
    for (const ArchTarget& t : targets) {
      if (t.arch != name) continue;
      lane.env = t.env;
      lane.target = t.spec;
    }
    if (archs.size() > 1 && lane.target.empty())
      return R::error("gpu_arch lists " + join(archs, ",") + ", but arch '" + name +
                      "' has no device here: with several archs each needs an arch_targets entry "
                      "(" +
                      name + "=cuda:N for CUDA device N, or " + name +
                      "=opencl:PLATFORM[:DEVICE] for an OpenCL platform whose name contains "
                      "PLATFORM, and its device number)" +
                      targets_key);
    if (!lane.target.empty() && language == Language::kCpp)
      return R::error("arch_targets gives arch '" + name + "' a device (" + lane.target +
                      "), but CPP kernels run on the host CPU: remove the entry" + targets_key);
    lanes.push_back(std::move(lane));
  }
  return lanes;
}

// reference_gpu_arch: the arch the reference runs on when it is not the candidates' (none when
// unset, or when it names the one gpu_arch).
Result<std::optional<ArchLane>> reference_lane(const Config& config, Language language,
                                               const std::vector<ArchLane>& lanes,
                                               const std::vector<ArchTarget>& targets) {
  using R = Result<std::optional<ArchLane>>;
  const std::string name =
      config.has("reference_gpu_arch") ? trim(config.get_string("reference_gpu_arch", "")) : "";
  if (name.empty()) return std::optional<ArchLane>();
  const std::string key =
      " (key 'reference_gpu_arch', from " + config.origin("reference_gpu_arch").describe() + ")";
  if (name.find(',') != std::string::npos)
    return R::error("reference_gpu_arch names one arch, not a list ('" + name +
                    "'): the reference runs on one device" + key);
  if (language == Language::kCpp)
    return R::error("reference_gpu_arch is '" + name +
                    "', but CPP kernels and their reference run on the host CPU: remove it" + key);
  if (arch_profile_name(name) == "native")
    return R::error(
        "reference_gpu_arch cannot be 'native': name the reference's arch (a "
        "profile name, e.g. h100 or cpu) and give it a device in arch_targets" +
        key);
  if (lanes.size() == 1 && lanes.front().name == name) return std::optional<ArchLane>();
  ArchLane lane;
  lane.name = name;
  auto profile = find_arch(arch_profile_name(name));
  if (!profile) return R::error(profile.message() + key);
  lane.arch = *profile;
  for (const ArchTarget& t : targets) {
    if (t.arch != name) continue;
    lane.env = t.env;
    lane.target = t.spec;
  }
  if (lane.target.empty())
    return R::error("reference_gpu_arch is '" + name +
                    "', but it has no device here: give it an arch_targets entry (" + name +
                    "=cuda:N for CUDA device N, or " + name +
                    "=opencl:PLATFORM[:DEVICE] for an OpenCL platform whose name contains "
                    "PLATFORM, and its device number)" +
                    key);
  return std::optional<ArchLane>(std::move(lane));
}

}  // namespace

Result<JobContext> open_job(const std::vector<std::string>& args) {
  std::string task_path = task_arg(args);
  if (task_path.empty())
    return Result<JobContext>::error(
        "no task given: pass task=<folder, .tar, .tar.gz or .zip of a task package>, e.g. "
        "task=examples/tasks/softmax_ocl");
  auto task = load_task(task_path, fs::temp_directory_path() / "kernelfoundry-tasks");
  if (!task) return Result<JobContext>::error(task.message());

  ComposeOptions compose_options;
  compose_options.config_dir = default_config_dir();
  compose_options.task_config = task->config_path();
  compose_options.task_overrides = task->overrides_path();
  compose_options.args = args;
  auto config = compose(compose_options);
  if (!config) return Result<JobContext>::error(config.message());
  // The values of the key variables it names are secrets from here on (util/secrets.h).
  register_env_secrets(api_key_variables(*config), fs::current_path());
  KF_RETURN_IF_ERROR(validate_for_run(*config));
  // A folder the job cannot write is found now, before any work, not after the reference ran.
  for (const char* key : {"paths.logdir", "paths.cache_dir", "paths.results_dir"}) {
    if (!config->has(key)) continue;
    KF_RETURN_IF_ERROR(check_writable_dir(config->get_string(key), key));
  }

  JobContext job{std::move(*config), std::move(*task)};
  // Large data files are kept once, by content, in the build cache rather than per candidate.
  LargeFileOptions large;
  large.large_bytes =
      static_cast<uint64_t>(job.config.get_int("task_files.large_file_bytes", 1 << 20));
  large.warn_bytes =
      static_cast<uint64_t>(job.config.get_int("task_files.warn_file_bytes", 64 << 20));
  large.store_dir = fs::path(job.config.get_string("paths.cache_dir", "runs/cache")) / "files";
  KF_RETURN_IF_ERROR(store_large_files(job.task, large));
  auto language = parse_language(job.config.get_string("language"));
  if (!language)
    return Result<JobContext>::error(language.message() + " (key 'language', from " +
                                     job.config.origin("language").describe() + ")");
  job.language = *language;
  for (std::string key : {"eval_config.profiler_kernel", "eval_config.profiler_reference"}) {
    std::string problem = profiler_choice_problem(
        parse_profiler_choice(job.config.get_string(key, "auto")), job.language);
    if (!problem.empty())
      return Result<JobContext>::error(key + " is " + job.config.get_string(key, "auto") +
                                       ", but " + problem + ": set it to auto or none (key '" +
                                       key + "', from " + job.config.origin(key).describe() + ")");
  }
  auto targets = arch_targets(job.config);
  if (!targets) return Result<JobContext>::error(targets.message());
  auto lanes = arch_lanes(job.config, job.language, *targets);
  if (!lanes) return Result<JobContext>::error(lanes.message());
  job.lanes = std::move(*lanes);
  auto reference = reference_lane(job.config, job.language, job.lanes, *targets);
  if (!reference) return Result<JobContext>::error(reference.message());
  job.reference_lane = std::move(*reference);
  std::vector<std::string> archs;
  for (ArchLane& lane : job.lanes) {
    archs.push_back(lane.name);
    // Kernels on the host CPU (CPP; OpenCL on the `cpu` arch, i.e. PoCL) get a roofline bound
    // from a copy bandwidth measured once per machine; the profiles name none for a CPU.
    if (job.language == Language::kCpp ||
        (job.language == Language::kOcl && lane.arch.name == "cpu")) {
      // A failed measurement leaves the bound off; the job goes on.
      (void)apply_host_bandwidth(lane.arch,
                                 fs::path(job.config.get_string("paths.cache_dir", "runs/cache")));
    }
  }
  if (job.reference_lane && job.language == Language::kOcl &&
      job.reference_lane->arch.name == "cpu")
    (void)apply_host_bandwidth(job.reference_lane->arch,
                               fs::path(job.config.get_string("paths.cache_dir", "runs/cache")));
  job.arch = job.lanes.front().arch;
  job.gpu_arch = join(archs, ",");
  job.job_name = job.config.get_string("job_name");
  job.task_name = job.config.get_string("task_name");
  job.run_dir = fs::path(job.config.get_string("paths.logdir", "runs")) / job.job_name;
  KF_RETURN_IF_ERROR(make_dirs(job.run_dir));

  auto store = Store::open(job.config.get_string("paths.kernels_db_path", "runs/kernels.sqlite3"),
                           static_cast<int>(job.config.get_int("database.busy_timeout_ms", 5000)));
  if (!store) return Result<JobContext>::error(store.message());
  job.store = std::move(*store);
  return job;
}

namespace {

// The device a harness result file says the run used.
FoundDevice found_device(const nlohmann::json& harness) {
  FoundDevice found;
  if (!harness.is_object()) return found;
  found.name = harness.value("device", "");
  found.backend = harness.value("backend", "");
  nlohmann::json info = harness.value("device_info", nlohmann::json::object());
  found.cpu =
      found.backend == "host" || (info.is_object() && info.value("device_type", "") == "cpu");
  if (info.is_object()) {
    // The harness writes every value as text.
    auto number = [&](const char* key) { return std::atof(info.value(key, "0").c_str()); };
    found.cuda_sm = info.value("arch", "");
    found.compute_units = int(number("compute_units"));
    found.max_threads_per_group = int(number("max_threads_per_group"));
    found.l2_bytes = number("l2_bytes");
    found.local_mem_bytes = number("local_mem_bytes");
  }
  return found;
}

// The harness result that says where a lane's candidates run: the reference's own run, or, when
// the reference runs elsewhere (reference_gpu_arch), its run on the candidates' device.
const nlohmann::json& candidate_device(const EvalResult& reference) {
  return reference.candidate_device.is_object() ? reference.candidate_device : reference.harness;
}

}  // namespace

Status prepare_profiler(ArchEvaluators& evaluators, const JobContext& job,
                        const EvalOptions& options, const std::vector<EvalResult>& references,
                        std::ostream& out) {
  if (!options.profile_candidates && !options.profile_reference) return Status::ok();
  const char* path = std::getenv("PATH");
  std::vector<std::string> notes;
  auto setup = [&](ProfilerChoice choice, const nlohmann::json& harness,
                   const char* key) -> Result<ProfilerSetup> {
    auto found =
        find_profiler(job.language, found_device(harness).cpu, path != nullptr ? path : "", choice);
    if (!found)
      return Result<ProfilerSetup>::error(std::string(key) + " is " + profiler_choice_name(choice) +
                                          ", but " + found.message() +
                                          ": set it to auto or none (key '" + key + "', from " +
                                          job.config.origin(key).describe() + ")");
    if (!found->note.empty() && std::find(notes.begin(), notes.end(), found->note) == notes.end()) {
      notes.push_back(found->note);
      out << found->note << "\n";
    }
    return found;
  };
  for (size_t i = 0; i < evaluators.size() && i < references.size(); ++i) {
    ProfilerSetup kernels, reference;
    if (options.profile_candidates) {
      auto s = setup(options.profiler_kernel, candidate_device(references[i]),
                     "eval_config.profiler_kernel");
      if (!s) return s.status();
      kernels = std::move(*s);
    }
    if (options.profile_reference) {
      // The reference's own device: another one than the candidates' with reference_gpu_arch.
      auto s = setup(options.profiler_reference, references[i].harness,
                     "eval_config.profiler_reference");
      if (!s) return s.status();
      reference = std::move(*s);
    }
    evaluators.lane(i).set_profiler(kernels, reference,
                                    i < job.lanes.size() ? job.lanes[i].arch : job.arch);
  }
  return Status::ok();
}

std::string reference_done_line(const std::vector<EvalResult>& references) {
  std::string line;
  for (size_t i = 0; i < references.size(); ++i) {
    const EvalResult& r = references[i];
    if (i > 0) line += "reference on " + r.arch + ":";
    line += strprintf(" ok (build %.2f s, tests %.2f s%s)", r.build_s, r.test_s,
                      r.timing_source_text.c_str());
    // reference_gpu_arch: timed on its own device, checked on the candidates' too.
    if (r.candidate_device.is_object())
      line += " timed on " + r.harness.value("device", std::string("its own device")) +
              ", candidates on " + r.candidate_device.value("device", std::string("theirs"));
    if (references.size() > 1 && i == 0) line += " on " + r.arch;
    line += "\n";
  }
  return line;
}

nlohmann::json reference_arch_json(const JobContext& job) {
  if (!job.reference_lane) return nullptr;
  return job.reference_lane->name;
}

nlohmann::json reference_runtimes(const std::vector<EvalResult>& references) {
  if (references.size() == 1) return references.front().runtimes_json();
  nlohmann::json out = nlohmann::json::object();
  for (const EvalResult& r : references) out[r.arch] = r.runtimes_json();
  return out;
}

namespace {

// One arch of several: the device its target selected must be the one the arch names.
Status settle_lane(const ArchLane& lane, const nlohmann::json& harness, const JobContext& job,
                   const std::string& key = "gpu_arch") {
  if (!harness.is_object()) return Status::ok();
  FoundDevice found = found_device(harness);
  if (found.name.empty() && !found.cpu) return Status::ok();
  std::string problem = arch_claim_problem(lane.arch, found);
  if (problem.empty()) return Status::ok();
  return Status::error(
      key + " '" + lane.name + "' (" +
      (lane.target.empty() ? "no arch_targets entry: the default device"
                           : "target " + lane.target) +
      "): " + problem +
      ". A kernel and its speedup are stored under the archs they ran on, so the job stops "
      "before any is: point the arch's arch_targets entry at its device, or name the arch after "
      "the device found (" +
      arch_name_of(found) + "). (keys '" + key + "' and 'arch_targets', from " +
      job.config.origin("arch_targets").describe() + ")");
}

}  // namespace

Status settle_arch(JobContext& job, const std::vector<EvalResult>& references) {
  // reference_gpu_arch is as much a claim: the device the reference was timed on.
  if (job.reference_lane)
    for (const EvalResult& r : references)
      if (r.candidate_device.is_object())
        KF_RETURN_IF_ERROR(settle_lane(*job.reference_lane, r.harness, job, "reference_gpu_arch"));
  if (job.lanes.size() > 1) {
    for (size_t i = 0; i < job.lanes.size() && i < references.size(); ++i)
      KF_RETURN_IF_ERROR(settle_lane(job.lanes[i], candidate_device(references[i]), job));
    return Status::ok();
  }
  if (job.reference_lane && !job.lanes.front().target.empty()) {
    // One arch with its own target: checked as one of several.
    if (!references.empty())
      KF_RETURN_IF_ERROR(settle_lane(job.lanes.front(), candidate_device(references.front()), job));
    return Status::ok();
  }
  if (references.empty()) return Status::ok();
  const nlohmann::json& harness = candidate_device(references.front());
  if (!harness.is_object()) return Status::ok();  // nothing said: nothing to check against
  FoundDevice found = found_device(harness);
  if (found.name.empty() && !found.cpu) return Status::ok();
  std::string problem = arch_claim_problem(job.arch, found);
  if (!problem.empty()) {
    return Status::error(
        problem + ". A kernel is stored under its gpu_arch as where it ran, so the job stops " +
        "before any is: set gpu_arch=" + arch_name_of(found) +
        " (or native, the device found); to use another device of this machine, pick it with " +
        "KF_OPENCL_PLATFORM=<part of a platform's name> (OpenCL) or CUDA_VISIBLE_DEVICES " +
        "(CUDA). (key 'gpu_arch', from " + job.config.origin("gpu_arch").describe() + ")");
  }
  if (job.arch.name != "native") return Status::ok();
  std::string name = arch_name_of(found);
  auto profile = find_arch(name);
  if (profile && !found.cpu) {
    job.arch = *profile;  // a known device: its figures for prompts and bounds
  } else {
    double dram_gbps = job.arch.dram_gbps;  // a CPU's measured copy bandwidth, when there is one
    job.arch = profile_of_found(found);
    job.arch.dram_gbps = dram_gbps;
    // Kernels on the host CPU get the copy bandwidth measured once per machine (as gpu_arch cpu
    // does at start); a failed measurement leaves it unknown.
    if (found.cpu && job.arch.dram_gbps <= 0)
      (void)apply_host_bandwidth(job.arch,
                                 fs::path(job.config.get_string("paths.cache_dir", "runs/cache")));
  }
  job.gpu_arch = name;
  if (!job.lanes.empty()) {
    job.lanes.front().name = name;
    job.lanes.front().arch = job.arch;
  }
  return Status::ok();
}

Result<JobSummary> run_candidates(JobContext& job, std::vector<Candidate> candidates,
                                  ProcessRunner& runner, std::ostream& out, bool seed_candidate) {
  if (seed_candidate) candidates.assign(1, Candidate{"the kernel iteration 0 starts from", {}});
  g_interrupted = 0;
  auto previous = std::signal(SIGINT, on_sigint);
  struct Restore {
    decltype(previous) handler;
    ~Restore() { std::signal(SIGINT, handler); }
  } restore{previous};

  JobRecord record;
  if (auto existing = job.store->job(job.job_name); existing && existing->has_value())
    record = **existing;
  record.job_name = job.job_name;
  record.task_name = job.task_name;
  record.task_hash = job.task.hash;
  record.language = std::string(language_name(job.language));
  record.gpu_arch = job.gpu_arch;
  record.status = "running";
  // Owned like a search job, so `jobs` tells this run from one whose process died.
  JobOwner owner = this_process();
  record.owner_pid = owner.pid;
  record.owner_host = owner.host;
  record.heartbeat_at = now_iso8601();
  record.config_json = job.config.tree().dump();
  record.progress_json =
      nlohmann::json{{"stage", "reference"}, {"evaluated", 0}, {"total", candidates.size()}}.dump();
  KF_RETURN_IF_ERROR(job.store->put_job(record));
  JobHeartbeat heartbeat(job.store->path(), job.job_name, owner);
  KF_RETURN_IF_ERROR(job.store->put_task(task_record(job)));

  auto fail_job = [&](const std::string& message) -> Status {
    record.status = "failed";
    // JSON holds only UTF-8: a candidate's file name or output may not be.
    record.progress_json =
        nlohmann::json{{"stage", "failed"}, {"error", escape_invalid_utf8(message)}}.dump();
    (void)job.store->put_job(record);
    return Status::error(message);
  };

  auto toolchain = find_toolchain();
  if (!toolchain) return fail_job(toolchain.message());
  EvalOptions options = eval_options(job);
  if (job.tune) {
    options.tuning.progress = [&out](const std::string& line) {
      out << line << "\n" << std::flush;
    };
    options.tuning.stop = [] { return g_interrupted != 0; };
  }
  auto sandbox = check_sandbox(options.sandbox);
  if (!sandbox) return fail_job(sandbox.message());
  if (!sandbox->warning.empty()) out << sandbox->warning << "\n";
  if (Status s = prepare_sanitizer(options, *toolchain, out); !s) return fail_job(s.message());
  StoreReferenceTimings kept_timings(*job.store);
  options.reference_timings = &kept_timings;
  ArchEvaluators evaluator(job.task, options, job.lanes, *toolchain, runner,
                           job.reference_lane ? &*job.reference_lane : nullptr);

  out << "job " << job.job_name << ": task " << job.task_name << " (" << record.language << ", "
      << job.gpu_arch << "), " << candidates.size() << " candidate(s)\n";
  out << "reference: building and timing ..." << std::flush;
  auto reference = evaluator.prepare_references();
  if (!reference) {
    out << " failed\n";
    return fail_job(reference.message());
  }
  out << reference_done_line(*reference);
  if (Status s = settle_arch(job, *reference); !s) return fail_job(s.message());
  if (record.gpu_arch != job.gpu_arch) {
    record.gpu_arch = job.gpu_arch;
    KF_RETURN_IF_ERROR(job.store->put_job(record));
  }
  if (Status s = prepare_profiler(evaluator, job, options, *reference, out); !s)
    return fail_job(s.message());
  if (seed_candidate) {  // looked up under the arch just settled
    auto seed = resolve_seed_kernel(job);
    if (!seed) return fail_job(seed.message());
    if (!seed->note.empty()) out << seed->note << "\n";
    candidates[0] = Candidate{seed->label, seed->codes, seed->source_uuid};
  }

  nlohmann::json results = {{"format", "kernelfoundry-results"},
                            {"version", 1},
                            {"job_name", job.job_name},
                            {"task_name", job.task_name},
                            {"task_hash", job.task.hash},
                            {"language", record.language},
                            {"gpu_arch", job.gpu_arch},
                            {"reference", reference_runtimes(*reference)},
                            {"reference_gpu_arch", reference_arch_json(job)},
                            {"reference_timing", reference->front().timing_source},
                            {"kernels", nlohmann::json::array()}};
  JobSummary summary;
  auto evolve_blocks = job.task.blocks_of(BlockKind::kEvolve);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (g_interrupted) break;
    const Candidate& cand = candidates[i];
    std::map<std::string, std::string> changed;
    std::vector<std::string> codes = cand.codes;
    if (!codes.empty()) {
      auto spliced = splice_evolve(job.task, codes);
      if (!spliced) return fail_job(cand.label + ": " + spliced.message());
      changed = std::move(*spliced);
    } else {
      for (const Block* b : evolve_blocks) codes.push_back(b->content);
    }
    KernelRecord k;
    k.uuid = new_uuid();
    k.job_name = job.job_name;
    k.task_hash = job.task.hash;
    k.task_name = job.task_name;
    k.parent_uuid = cand.parent_uuid;
    k.trial = 0;
    k.branch = static_cast<int>(i);
    k.language = record.language;
    k.gpu_arch = job.gpu_arch;
    k.code = join(codes, "\n");
    EvalResult r = evaluator.evaluate(strprintf("kernel-%03zu", i), changed);
    if (!r.environment_error.empty()) {
      // The machine failed, not the candidate: no verdict is stored for it.
      out << strprintf("[%zu/%zu] %s: not evaluated\n", i + 1, candidates.size(),
                       cand.label.c_str());
      if (g_interrupted && job.tune) {
        // Ctrl-C during a tune: what ran is kept for resume=true (the error says where).
        record.status = "interrupted";
        record.progress_json = nlohmann::json{{"stage", "interrupted"},
                                              {"error", escape_invalid_utf8(r.environment_error)}}
                                   .dump();
        (void)job.store->put_job(record);
        return Status::error(cand.label + ": " + r.environment_error);
      }
      std::string why = "environment error (not the candidate's fault): " + r.environment_error;
      return fail_job(cand.label + " could not be evaluated: " + why +
                      "\nNothing was stored for it; fix the cause and run the job again.");
    }
    // compute-sanitizer before a kernel is reported as the new best (CUDA, where the tool is).
    // "Best" by the intervals when both have one (eval/paired.h: faster_than).
    if (beats_best(r, summary.best_speedup, summary.best_interval)) evaluator.sanitize(r);
    evaluator.profile(r);
    k.verdict = r.verdict;
    k.reason = r.reason;
    k.runtimes_json = arch_runtimes_json(r, job.gpu_arch).dump();
    k.speedup = r.speedup;
    k.speedup_interval = stored_interval(r.speedup ? r.speedup_interval : std::nullopt);
    k.fitness = r.fitness;
    k.eval_log = r.eval_log;
    k.flags_json = r.flags.dump();
    if (!r.profile.is_null()) k.profile_json = r.profile.dump();
    k.template_results_json = r.template_results.is_null() ? "" : r.template_results.dump();
    if (Status s = job.store->put_kernel(k); !s) return fail_job(s.message());

    fs::path kdir = job.run_dir / "kernels" / strprintf("%03zu", i);
    // As in the database (store/statement.cpp): no registered secret in a file the job writes.
    (void)write_file(kdir / "code.txt", redact_secrets(k.code));
    (void)write_file(kdir / "eval_log.txt", redact_secrets(r.eval_log));
    if (!r.harness.is_null())
      (void)write_file(kdir / "result.json", redact_secrets(r.harness.dump(2)));

    ++summary.evaluated;
    summary.last_verdict = r.verdict;
    summary.last_template_results = r.template_results;
    if (r.verdict == kCorrect) ++summary.correct;
    if (beats_best(r, summary.best_speedup, summary.best_interval)) {
      summary.best_speedup = r.speedup;
      summary.best_interval = r.speedup_interval;
      summary.best_uuid = k.uuid;
    }
    out << strprintf(
        "[%zu/%zu] %-32s verdict %d (%s)  speedup %-8s best %-8s build %.2f s, tests %.2f s%s%s\n",
        i + 1, candidates.size(), cand.label.c_str(), r.verdict,
        std::string(verdict_name(r.verdict)).c_str(),
        speedup_text(r.speedup, r.speedup_interval).c_str(),
        speedup_text(summary.best_speedup).c_str(), r.build_s, r.test_s,
        r.sanitize_s > 0 ? strprintf(", sanitizer %.2f s", r.sanitize_s).c_str() : "",
        r.profile_s > 0 ? strprintf(", profile %.2f s", r.profile_s).c_str() : "");
    if (r.template_params.is_object())
      out << "        templated: " << r.template_results.size() << " combinations, "
          << (r.verdict == kCorrect ? "chosen " : "shown ") << r.template_params.dump() << "\n";
    if (r.verdict != kCorrect || r.suspect()) out << "        " << r.reason << "\n";
    results["kernels"].push_back(
        {{"uuid", k.uuid},
         {"label", escape_invalid_utf8(cand.label)},  // a file name need not be UTF-8
         {"verdict", r.verdict},
         {"reason", r.reason},
         {"speedup", r.speedup ? nlohmann::json(*r.speedup) : nlohmann::json()},
         {"speedup_interval",
          r.speedup && r.speedup_interval ? interval_json(*r.speedup_interval) : nlohmann::json()},
         {"fitness", r.fitness},
         {"flags", r.flags},
         {"runtimes", r.runtimes_json()},
         {"template_params", r.template_params},
         {"template_results", r.template_results},
         {"build_s", r.build_s},
         {"test_s", r.test_s},
         {"screen_s", r.screen_s},
         {"check_s", r.check_s},
         {"sanitize_s", r.sanitize_s},
         {"correctness_s", r.correctness_s},
         {"benchmark_s", r.benchmark_s}});
    record.progress_json = nlohmann::json{
        {"stage", "candidates"},
        {"evaluated", summary.evaluated},
        {"total",
         candidates.size()}}.dump();
    if (Status s = job.store->put_job(record); !s) return fail_job(s.message());
    if (Status s = write_file(job.run_dir / "results.json", redact_secrets(results.dump(2))); !s)
      return fail_job(s.message());
  }
  results["best_uuid"] = summary.best_uuid;
  results["best_speedup"] =
      summary.best_speedup ? nlohmann::json(*summary.best_speedup) : nlohmann::json();
  results["best_speedup_interval"] =
      summary.best_interval ? interval_json(*summary.best_interval) : nlohmann::json();
  KF_RETURN_IF_ERROR(write_file(job.run_dir / "results.json", redact_secrets(results.dump(2))));
  record.status = g_interrupted ? "interrupted" : "done";
  KF_RETURN_IF_ERROR(job.store->put_job(record));
  out << strprintf("done: %d evaluated, %d correct, best speedup %s; files in %s\n",
                   summary.evaluated, summary.correct,
                   speedup_text(summary.best_speedup, summary.best_interval).c_str(),
                   job.run_dir.string().c_str());
  if (g_interrupted) out << "interrupted by Ctrl-C: the job is marked 'interrupted'\n";
  return summary;
}

}  // namespace kf
