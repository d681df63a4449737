// The optimisation loop: plan each iteration's branches from the archive, ask the LLMs
// concurrently, evaluate (builds in parallel, runs one at a time), store every candidate the
// moment it is known, and continue a stopped job from the database.
#include "search/optimize.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <random>
#include <thread>

#include "eval/templated.h"
#include "proc/pause_group.h"
#include "proc/sandbox.h"
#include "prompt/prompt.h"
#include "search/archive.h"
#include "search/attempts.h"
#include "search/descriptors.h"
#include "search/extract.h"
#include "search/job_owner.h"
#include "search/meta_prompt.h"
#include "search/reference_timing_store.h"
#include "search/sampler.h"
#include "search/seed_kernel.h"
#include "util/fs.h"
#include "util/secrets.h"
#include "util/strings.h"

namespace kf {
namespace {

std::atomic<bool> g_stop{false};
// First Ctrl-C (or SIGTERM): stop starting work, abort the LLM calls in flight, stop the builds
// and test runs in flight (their branches run again on resume, their paid answers reused), keep
// what is stored, record the job as interrupted and exit cleanly. A second one ends the process
// at once (the default action); the job then reads as interrupted through its dead owner.
void on_stop_signal(int sig) {
  g_stop = true;
  cancel_llm_calls();
  cancel_processes();
  std::signal(sig, SIG_DFL);
}

// The loop's keys, read once.
struct Settings {
  int max_iters = 3, branches = 2;
  bool stop_once_correct = false, save_best = true, improve_only_correct = false;
  std::optional<int> max_failures;
  bool resume = false, use_feedback = false;
  int rate_limit = 4;
  int workers = 1;  // branch threads: LLM calls up to rate_limit, plus room for builds and runs
  uint64_t seed = 0;
  size_t num_inspirations = 2, max_log_chars = 6000, max_prompt_chars = 200000;
  size_t max_attempts = 4, max_attempts_chars = 8000;
  size_t feedback_min_log_chars = 2000;  // feedback_llm_config.min_log_chars
  bool include_reference = true, allow_templated = false, parametrize_best = false;
  ArchiveOptions archive;
  SamplingOptions sampling;
  MetaPromptOptions meta;
};

Settings read_settings(const Config& c) {
  Settings s;
  s.max_iters = static_cast<int>(c.get_int("max_iters", 3));
  s.branches = std::max(1, static_cast<int>(c.get_int("branches_per_iteration", 2)));
  s.stop_once_correct = c.get_bool("stop_once_correct");
  s.save_best = c.get_bool("save_best_kernel", true);
  s.improve_only_correct = c.get_bool("improve_only_correct");
  if (c.has("max_failures")) s.max_failures = static_cast<int>(c.get_int("max_failures"));
  s.resume = c.get_bool("resume");
  s.use_feedback = c.get_bool("use_feedback_llm");
  s.rate_limit = std::max(1, static_cast<int>(c.get_int("llm_rate_limit", 4)));
  s.workers = std::min(s.branches, s.rate_limit + 2);
  s.seed = static_cast<uint64_t>(c.get_int("seed", 0));
  s.num_inspirations = static_cast<size_t>(c.get_int("prompt.num_inspirations", 2));
  s.max_log_chars = static_cast<size_t>(c.get_int("prompt.max_log_chars", 6000));
  s.max_prompt_chars = static_cast<size_t>(c.get_int("prompt.max_chars", 200000));
  s.max_attempts = static_cast<size_t>(c.get_int("prompt.max_attempts", 4));
  s.max_attempts_chars = static_cast<size_t>(c.get_int("prompt.max_attempts_chars", 8000));
  s.feedback_min_log_chars =
      static_cast<size_t>(c.get_int("feedback_llm_config.min_log_chars", 2000));
  s.include_reference = c.get_bool("prompt.include_reference", true);
  s.allow_templated = c.get_bool("prompt.allow_templated");
  s.parametrize_best = c.get_bool("prompt.parametrize_best", false);
  // One branch refines the best kernel: one island is all it needs.
  s.archive.num_islands = s.branches > 1 ? static_cast<int>(c.get_int("search.num_islands", 2)) : 1;
  s.archive.migration_interval = static_cast<int>(c.get_int("search.migration_interval", 3));
  s.sampling.exploit = c.get_double("search.exploit", 0.7);
  s.sampling.explore = c.get_double("search.explore", 0.2);
  s.sampling.temperature = c.get_double("search.temperature", 1.0);
  s.sampling.improve_only_correct = s.improve_only_correct;
  s.meta = read_meta_prompt_options(c);
  return s;
}

// A stored branch whose LLM call failed after its retries: no answer, so nothing was paid, and a
// resumed job asks again.
bool never_answered(const KernelRecord& k) {
  return k.trial > 0 && k.answer.empty() && k.verdict == kNoCode &&
         k.reason.rfind("no answer from the LLM", 0) == 0;
}

std::string tokens_text(int64_t n) {
  return n >= 10000 ? strprintf("%.1fk", double(n) / 1000) : std::to_string(n);
}

// What one branch works from, fixed before any branch of the iteration starts.
struct BranchPlan {
  int trial = 0, branch = 0, island = 0;
  std::string uuid;  // the stored record this branch replaces (a resumed, never-answered branch)
  std::optional<Elite> parent, best;
  std::vector<Elite> inspirations;
  int variant = 0;  // the meta-prompt variant its prompt uses (0: meta-prompting off)
};

bool suspect(const KernelRecord& k) {
  return flags_suspect(
      nlohmann::json::parse(k.flags_json.empty() ? "[]" : k.flags_json, nullptr, false));
}

Elite elite_of(const KernelRecord& k, Language language, size_t num_blocks) {
  Elite e;
  e.uuid = k.uuid;
  e.codes = decode_codes(k.code, num_blocks);
  e.verdict = k.verdict;
  e.speedup = k.speedup;
  e.interval = speedup_interval_of(k);
  e.fitness = k.fitness;
  e.descriptor = describe_code(k.code, language);
  e.island = k.island;
  e.trial = k.trial;
  e.suspect = suspect(k);
  return e;
}

// A templated kernel's combinations as stored (eval/templated.h); null for other kernels.
nlohmann::json template_results_of(const KernelRecord& k) {
  if (k.template_results_json.empty()) return nullptr;
  return nlohmann::json::parse(k.template_results_json, nullptr, false);
}

// The chosen combination's parameters ("chunk=4096, unroll=8"); "" for other kernels.
std::string chosen_template(const KernelRecord& k) {
  nlohmann::json results = template_results_of(k);
  if (!results.is_array()) return "";
  for (const auto& r : results)
    if (r.is_object() && r.value("chosen", false)) return r.value("label", std::string());
  return "";
}

PromptKernel prompt_kernel(const KernelRecord& k, size_t num_blocks) {
  PromptKernel p;
  p.codes = decode_codes(k.code, num_blocks);
  p.verdict = k.verdict;
  p.reason = k.reason;
  p.speedup = k.speedup;
  p.eval_log = k.eval_log;
  p.feedback = k.feedback;
  p.cell = k.archive_cell;
  p.model = k.model;
  p.templates = template_results_text(template_results_of(k));
  return p;
}

// Medians only: results.json stays small however many samples were taken.
nlohmann::json runtime_medians(const std::string& runtimes_json, const std::string& arch) {
  nlohmann::json out = nlohmann::json::object();
  auto all = nlohmann::json::parse(runtimes_json.empty() ? "{}" : runtimes_json, nullptr, false);
  if (!all.is_object() || !all.contains(arch)) return out;
  for (const auto& [shape, t] : all[arch].items())
    if (t.is_object()) out[shape] = t.value("median_ms", 0.0);
  return out;
}

class Search {
 public:
  Search(JobContext& job, ProcessRunner& runner, std::ostream& out, const SearchHooks& hooks)
      : job_(job),
        runner_(runner),
        out_(out),
        hooks_(hooks),
        s_(read_settings(job.config)),
        archive_(s_.archive) {
    num_blocks_ = job.task.blocks_of(BlockKind::kEvolve).size();
    language_ = std::string(language_name(job.language));
  }

  Result<SearchSummary> run();

 private:
  Status open_job_record();
  Status claim_job_record();  // inside open_job_record's transaction
  Status set_up_llms();       // configs and templates: no writes, so a mistake costs no job name
  Status create_broker();     // the clients (API keys), once the job's name is final
  Status seed_iteration();
  BranchPlan plan_branch(int trial, int branch);
  KernelRecord run_branch(const BranchPlan& plan);
  void evaluate_into(KernelRecord& k, const std::vector<std::string>& codes,
                     const std::string& work_id, EvalResult* eval);
  std::string feedback_for(KernelRecord& kernel);
  // The earlier attempts this branch's prompt shows (search/attempts.h), summarised by the
  // feedback LLM where their logs are long.
  std::vector<PromptAttempt> attempts_for(const BranchPlan& plan);
  // What every prompt of this job shares: the task, its language and hardware, the log cap.
  PromptInputs prompt_inputs() const {
    PromptInputs in;
    in.task = &job_.task;
    in.language = job_.language;
    in.archs.clear();
    for (const ArchLane& lane : job_.lanes) in.archs.push_back(lane.arch);
    if (in.archs.empty()) in.archs = {job_.arch};
    in.max_log_chars = s_.max_log_chars;
    in.max_chars = s_.max_prompt_chars;
    in.max_attempts_chars = s_.max_attempts_chars;
    return in;
  }
  Status finish_kernel(KernelRecord& k, const EvalResult* eval, const std::string& server,
                       bool reused, double llm_s);
  void absorb(const KernelRecord& k);
  // Meta-prompt evolution (search/meta_prompt.h): the variants loaded or the shipped guidance
  // stored as variant 1; after an iteration, a new variant when one is due; the variants'
  // scores saved to the database and to runs/<job>/<output_subdir>/.
  Status set_up_meta_prompts();
  void evolve_meta_prompt(int trial);
  Status save_meta_prompts();
  Status write_results();
  Status save_best();
  fs::path kernel_dir(int trial, int branch) const {
    return job_.run_dir / "kernels" / strprintf("t%02d_b%02d", trial, branch);
  }

  JobContext& job_;
  ProcessRunner& runner_;
  std::ostream& out_;
  const SearchHooks& hooks_;
  Settings s_;
  size_t num_blocks_ = 1;
  std::string language_;
  JobRecord record_;
  // Kept reference timings (the job's store), for evaluator_'s prepare_reference.
  std::unique_ptr<StoreReferenceTimings> kept_timings_;
  std::unique_ptr<ArchEvaluators> evaluator_;
  std::unique_ptr<LlmBroker> broker_;
  std::optional<PromptTemplates> templates_;
  std::mutex device_lock_;
  // The builds of this job's candidates, paused while a candidate is timed (issue 9).
  PauseGroup build_pause_;
  std::mutex mutex_;  // summary_, results_, out_, record_ across branch threads
  std::map<std::string, std::unique_ptr<std::mutex>> feedback_locks_;
  std::map<std::pair<int, int>, KernelRecord> stored_;  // a resumed job's kernels not yet absorbed
  Archive archive_;
  SearchSummary summary_;
  nlohmann::json results_;                   // results.json without its kernels
  std::vector<std::string> kernel_entries_;  // the kernels' entries, serialised
  // When this run started, and per kernel the [start, end] seconds of its LLM call, build and
  // test run: results.json's "timeline", from which bench/ derives the orchestrator's overhead.
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::map<std::string, nlohmann::json> timeline_;
  // The best speedup so far (and its interval), set on the first progress line.
  struct BestSoFar {
    std::optional<double> speedup;
    std::optional<SpeedupInterval> interval;
  };
  std::optional<BestSoFar> live_best_;
  std::optional<MetaPrompts> meta_;                        // when prompt.meta_prompting.enabled
  std::map<std::string, std::optional<double>> speedups_;  // of absorbed kernels, by uuid
  std::optional<SeedKernel> seed_;                         // resolved before the job record is made
  std::optional<Ensemble> ensemble_;
  std::optional<ServerConfig> feedback_server_;
  JobOwner owner_ = this_process();
  std::optional<JobHeartbeat> heartbeat_;  // while this process owns the job
  bool created_job_ = false;               // this run made the job row (not a resume)
  std::atomic<int> stored_this_run_{0};    // kernels this run put into the database
  std::atomic<bool> env_stop_{false};      // an environment fault stops the job
  std::string env_error_;                  // the first one (under mutex_)
  double now_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void note_span(const std::string& uuid, const char* what, double begin, double end) {
    std::lock_guard<std::mutex> lock(mutex_);
    timeline_[uuid][what] = {begin, end};
  }
};

Status Search::open_job_record() {
  // One transaction (BEGIN IMMEDIATE): two processes starting or resuming the same job at once
  // cannot both take it.
  return job_.store->transaction([this] { return claim_job_record(); });
}

Status Search::claim_job_record() {
  auto existing = job_.store->job(job_.job_name);
  if (!existing) return existing.status();
  auto kernels =
      job_.store->kernels({.job_name = job_.job_name, .order = KernelOrder::kTrialOrder});
  if (!kernels) return kernels.status();
  if (s_.resume) {
    if (!existing->has_value())
      return Status::error("resume=true: there is no job '" + job_.job_name + "' in " +
                           job_.store->path().string() +
                           " to continue; list the jobs with `kernelfoundry jobs`, or drop "
                           "resume=true to start it");
    record_ = **existing;
    if (job_owner_alive(record_))
      return Status::error(
          "resume=true: job '" + job_.job_name + "' is still running (" + describe_owner(record_) +
          "); two processes must not write one job. Wait for it to finish, "
          "or stop it first (Ctrl-C in its terminal, or kill " +
          std::to_string(record_.owner_pid) + " on " + record_.owner_host + "), then resume");
    if (!record_.task_hash.empty() && record_.task_hash != job_.task.hash)
      return Status::error("resume=true: job '" + job_.job_name +
                           "' ran on another version of the task package (hash " +
                           record_.task_hash.substr(0, 12) + ", now " +
                           job_.task.hash.substr(0, 12) +
                           "); its kernels were checked against that one. Start a new job (drop "
                           "resume=true), or restore the package as it was");
    for (KernelRecord& k : *kernels) stored_[{k.trial, k.branch}] = std::move(k);
  } else if (existing->has_value()) {
    // A new job never writes into an old one: it takes the next free name, and the old job
    // stays as it was (resume=true continues it instead).
    std::string base = job_.job_name;
    for (int n = 2;; ++n) {
      std::string name = strprintf("%s_%d", base.c_str(), n);
      auto taken = job_.store->job(name);
      if (!taken) return taken.status();
      if (taken->has_value()) continue;
      out_ << "job '" << base << "' already exists in " << job_.store->path().string()
           << "; this run is job '" << name << "' (resume=true job_name=" << base
           << " continues the old one)\n";
      job_.job_name = name;
      job_.run_dir = job_.run_dir.parent_path() / name;
      KF_RETURN_IF_ERROR(make_dirs(job_.run_dir));
      break;
    }
  }
  record_.job_name = job_.job_name;
  record_.task_name = job_.task_name;
  record_.task_hash = job_.task.hash;
  record_.language = language_;
  record_.gpu_arch = job_.gpu_arch;
  created_job_ = !s_.resume;
  record_.status = "running";
  record_.owner_pid = owner_.pid;
  record_.owner_host = owner_.host;
  record_.heartbeat_at = now_iso8601();
  record_.config_json = job_.config.tree().dump();
  record_.progress_json = nlohmann::json{{"stage", "reference"}}.dump();
  KF_RETURN_IF_ERROR(job_.store->put_job(record_));
  return job_.store->put_task(task_record(job_));
}

Status Search::set_up_llms() {
  auto ensemble = Ensemble::from_config(job_.config.at("inference"));
  if (!ensemble) return ensemble.status();
  ensemble_ = std::move(*ensemble);
  if (s_.use_feedback) {
    // min_log_chars is the loop's, not the server's.
    nlohmann::json map = job_.config.at("feedback_llm_config");
    if (map.is_object()) map.erase("min_log_chars");
    auto parsed = parse_server(map, "feedback_llm_config");
    if (!parsed) return parsed.status();
    feedback_server_ = *parsed;
  }
  // A missing API key stops the job here, before it is recorded (the clients look again).
  if (!hooks_.client_factory) {
    std::vector<ServerConfig> servers = ensemble_->servers();
    if (feedback_server_) servers.push_back(*feedback_server_);
    for (const ServerConfig& server : servers) {
      auto key = find_api_key(server, fs::current_path());
      if (!key) return key.status();
    }
  }
  fs::path override_dir;
  if (job_.config.has("prompt.template_dir"))
    override_dir = job_.config.get_string("prompt.template_dir");
  auto templates = PromptTemplates::load(shipped_prompt_dir(), override_dir);
  if (!templates) return templates.status();
  templates_ = std::move(*templates);
  return Status::ok();
}

Status Search::create_broker() {
  LlmBroker::ClientFactory factory = hooks_.client_factory;
  if (!factory) {
    ClientOptions options;
    options.store = job_.store.get();
    options.dotenv_dir = fs::current_path();
    factory = [options](const ServerConfig& server) { return make_client(server, options); };
  }
  auto broker = LlmBroker::create(*job_.store, job_.job_name, std::move(*ensemble_),
                                  feedback_server_ ? &*feedback_server_ : nullptr, s_.seed,
                                  s_.rate_limit, factory, s_.branches);
  if (!broker) return broker.status();
  broker_ = std::move(*broker);
  return Status::ok();
}

void Search::absorb(const KernelRecord& k) {
  Elite e = elite_of(k, job_.language, num_blocks_);
  if (k.trial == 0) {
    // The starting kernel seeds every island.
    for (int i = 0; i < archive_.num_islands(); ++i) {
      e.island = i;
      archive_.add(e);
    }
  } else {
    archive_.add(e);
  }
  speedups_[k.uuid] = k.verdict == kCorrect ? k.speedup : std::nullopt;
  // A child the model answered counts for the variant its prompt used.
  if (meta_ && k.trial > 0 && k.prompt_variant && !k.answer.empty()) {
    VariantOutcome o;
    o.variant_id = *k.prompt_variant;
    o.trial = k.trial;
    o.branch = k.branch;
    o.verdict = k.verdict;
    o.speedup = k.speedup;
    if (auto it = speedups_.find(k.parent_uuid); it != speedups_.end())
      o.parent_speedup = it->second;
    o.reason = k.reason;
    meta_->record(o);
  }
  ++summary_.evaluated;
  if (k.verdict == kCorrect) ++summary_.correct;
  if (k.trial > 0 && k.verdict != kCorrect) ++summary_.failures;
  // A new best only when its interval says so (eval/paired.h: faster_than); point estimates
  // where either has none.
  if (k.verdict == kCorrect && k.speedup && !e.suspect &&
      faster_than(k.speedup, e.interval, summary_.best_speedup, summary_.best_interval)) {
    summary_.best_speedup = k.speedup;
    summary_.best_interval = e.interval;
    summary_.best_uuid = k.uuid;
    summary_.best_template = chosen_template(k);
    summary_.best_model = k.model;
    summary_.best_trial = k.trial;
    summary_.best_branch = k.branch;
  }
  nlohmann::json entry = {
      {"uuid", k.uuid},
      {"trial", k.trial},
      {"branch", k.branch},
      {"island", k.island},
      {"parent_uuid", k.parent_uuid},
      {"model", k.model},
      {"verdict", k.verdict},
      {"reason", k.reason},
      {"speedup", k.speedup ? nlohmann::json(*k.speedup) : nlohmann::json()},
      {"speedup_interval", e.interval ? interval_json(*e.interval) : nlohmann::json()},
      {"fitness", k.fitness},
      {"archive_cell", k.archive_cell},
      {"flags", nlohmann::json::parse(k.flags_json.empty() ? "[]" : k.flags_json, nullptr, false)},
      {"median_ms", runtime_medians(k.runtimes_json, job_.gpu_arch)},
      {"template_results", template_results_of(k)},
      {"prompt_tokens", k.prompt_tokens},
      {"completion_tokens", k.completion_tokens},
      {"cost", k.cost},
      {"timeline", timeline_.count(k.uuid) ? timeline_[k.uuid] : nlohmann::json()}};
  timeline_.erase(k.uuid);
  // Kept as text: a few hundred bytes per kernel instead of a tree of JSON nodes.
  kernel_entries_.push_back(
      "    " + replace_all(entry.dump(2, ' ', false, nlohmann::json::error_handler_t::replace),
                           "\n", "\n    "));
}

void Search::evaluate_into(KernelRecord& k, const std::vector<std::string>& codes,
                           const std::string& work_id, EvalResult* eval) {
  std::map<std::string, std::string> changed;
  if (!codes.empty()) {
    auto spliced = splice_evolve(job_.task, codes);
    if (!spliced) {
      k.verdict = kNoCode;
      k.reason = "the code could not be placed in the EVOLVE block: " + spliced.message();
      return;
    }
    changed = std::move(*spliced);
  }
  double begin = now_s();
  *eval = evaluator_->evaluate(work_id, changed);
  double end = now_s();
  // The build comes first; the test run ends the evaluation (a wait for the device lies between).
  note_span(k.uuid, "build", begin, std::min(end, begin + eval->build_s));
  note_span(k.uuid, "test", std::max(begin, end - eval->test_s), end);
  // compute-sanitizer on a kernel about to be reported as the new best (CUDA, where the tool is),
  // before its row is stored: findings make it suspect, so it does not become the best.
  {
    bool new_best = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      BestSoFar best =
          live_best_ ? *live_best_ : BestSoFar{summary_.best_speedup, summary_.best_interval};
      new_best = beats_best(*eval, best.speedup, best.interval);
    }
    if (new_best) {
      double sanitize_begin = now_s();
      evaluator_->sanitize(*eval);
      if (eval->sanitize_s > 0) note_span(k.uuid, "sanitize", sanitize_begin, now_s());
    }
  }
  if (eval->verdict == kCorrect) {
    double profile_begin = now_s();
    evaluator_->profile(*eval);
    if (eval->profile_s > 0) note_span(k.uuid, "profile", profile_begin, now_s());
  }
  k.verdict = eval->verdict;
  k.reason = eval->reason;
  k.runtimes_json = arch_runtimes_json(*eval, job_.gpu_arch).dump();
  k.speedup = eval->speedup;
  k.speedup_interval = stored_interval(eval->speedup ? eval->speedup_interval : std::nullopt);
  k.fitness = eval->fitness;
  k.eval_log = eval->eval_log;
  k.flags_json = eval->flags.dump();
  if (!eval->profile.is_null()) k.profile_json = eval->profile.dump();
  k.template_results_json = eval->template_results.is_null() ? "" : eval->template_results.dump();
}

Status Search::finish_kernel(KernelRecord& k, const EvalResult* eval, const std::string& server,
                             bool reused, double llm_s) {
  k.archive_cell = describe_code(k.code, job_.language).cell();
  if (k.fitness == 0) k.fitness = k.verdict;
  KF_RETURN_IF_ERROR(job_.store->put_kernel(k));
  ++stored_this_run_;
  fs::path dir = kernel_dir(k.trial, k.branch);
  // Run files are scrubbed of key values like every stored row (util/secrets.h).
  if (!k.prompt.empty()) (void)write_file(dir / "prompt.md", redact_secrets(k.prompt));
  if (!k.answer.empty()) (void)write_file(dir / "answer.md", redact_secrets(k.answer));
  (void)write_file(dir / "code.txt", redact_secrets(k.code));
  (void)write_file(dir / "eval_log.txt",
                   redact_secrets(k.eval_log.empty() ? k.reason + "\n" : k.eval_log));
  if (eval && !eval->harness.is_null())
    (void)write_file(dir / "result.json",
                     redact_secrets(eval->harness.dump(2, ' ', false,
                                                       nlohmann::json::error_handler_t::replace)));

  std::lock_guard<std::mutex> lock(mutex_);
  std::string who = k.trial == 0       ? "start"
                    : !k.model.empty() ? k.model
                    : server.empty()   ? "-"
                                       : server;
  // Best so far across every branch finished up to now (the archive catches up at the end of
  // the iteration).
  if (!live_best_) live_best_ = BestSoFar{summary_.best_speedup, summary_.best_interval};
  bool flagged = suspect(k);
  std::optional<SpeedupInterval> interval = speedup_interval_of(k);
  if (k.verdict == kCorrect && k.speedup && !flagged &&
      faster_than(k.speedup, interval, live_best_->speedup, live_best_->interval))
    *live_best_ = BestSoFar{k.speedup, interval};
  std::optional<double> best = live_best_->speedup;
  std::string where = k.trial == 0
                          ? std::string("[iter 0]         ")
                          : strprintf("[iter %d/%d br %d] ", k.trial, s_.max_iters, k.branch);
  std::vector<std::string> timing_parts;
  if (k.trial > 0)
    timing_parts.push_back(reused ? "llm: recorded answer" : strprintf("llm %.1f s", llm_s));
  if (eval)
    timing_parts.push_back(strprintf("build %.2f s, tests %.2f s", eval->build_s, eval->test_s));
  if (eval && eval->sanitize_s > 0)
    timing_parts.push_back(strprintf("sanitizer %.2f s", eval->sanitize_s));
  if (eval && eval->profile_s > 0)
    timing_parts.push_back(strprintf("profile %.2f s", eval->profile_s));
  std::string timing = join(timing_parts, ", ");
  if (std::string chosen = chosen_template(k); !chosen.empty())
    timing += strprintf(" [%zu combinations, %s %s]", template_results_of(k).size(),
                        k.verdict == kCorrect ? "chosen" : "shown", chosen.c_str());
  out_ << where
       << strprintf("%-30s verdict %d %-16s speedup %-8s best %-8s %s\n", who.c_str(), k.verdict,
                    ("(" + std::string(verdict_name(k.verdict)) + ")").c_str(),
                    speedup_text(k.speedup, interval).c_str(), speedup_text(best).c_str(),
                    timing.c_str());
  if (k.verdict != kCorrect || flagged) out_ << "        " << k.reason << "\n";
  out_.flush();
  return Status::ok();
}

Status Search::seed_iteration() {
  if (auto it = stored_.find({0, 0}); it != stored_.end()) {
    absorb(it->second);
    out_ << "[iter 0]         start: kernel " << it->second.uuid << " (stored), verdict "
         << it->second.verdict << ", speedup "
         << speedup_text(it->second.speedup, speedup_interval_of(it->second)) << "\n";
    stored_.erase(it);
    return Status::ok();
  }
  auto seed = seed_ ? Result<SeedKernel>(*seed_) : resolve_seed_kernel(job_);
  if (!seed) return seed.status();
  if (!seed->note.empty()) out_ << seed->note << "\n";
  out_ << "[iter 0]         start: " << seed->label << "\n";
  KernelRecord k;
  k.uuid = new_uuid();
  k.parent_uuid = seed->source_uuid;
  k.job_name = job_.job_name;
  k.task_hash = job_.task.hash;
  k.task_name = job_.task_name;
  k.language = language_;
  k.gpu_arch = job_.gpu_arch;
  std::vector<std::string> codes = seed->codes;
  if (codes.empty())
    for (const Block* b : job_.task.blocks_of(BlockKind::kEvolve)) codes.push_back(b->content);
  k.code = encode_codes(codes);
  EvalResult eval;
  evaluate_into(k, seed->codes, "t00_b00", &eval);
  if (!eval.environment_error.empty()) {
    env_error_ =
        "the starting kernel could not be evaluated: environment error (not the "
        "kernel's fault): " +
        eval.environment_error;
    env_stop_ = true;
    return Status::error(env_error_);
  }
  if (g_stop) return Status::ok();  // stopped mid-evaluation: evaluated again on resume
  KF_RETURN_IF_ERROR(finish_kernel(k, &eval, "", false, 0));
  std::lock_guard<std::mutex> lock(mutex_);
  absorb(k);
  return Status::ok();
}

Status Search::set_up_meta_prompts() {
  if (!s_.meta.enabled) return Status::ok();
  // The files stay inside the job's run folder.
  fs::path subdir(s_.meta.output_subdir);
  bool climbs = false;
  for (const fs::path& part : subdir) climbs = climbs || part == "..";
  if (subdir.empty() || subdir.is_absolute() || climbs)
    return Status::error(
        "prompt.meta_prompting.output_subdir must be a folder name inside "
        "runs/<job_name>/, got '" +
        s_.meta.output_subdir + "'; use e.g. prompt_evolution");
  meta_.emplace(s_.meta);
  auto stored = job_.store->prompt_variants(job_.job_name);
  if (!stored) return stored.status();
  for (PromptVariantRecord& v : *stored) meta_->add(std::move(v));
  if (meta_->find(1) == nullptr) {
    auto shipped = render_guidance(*templates_, prompt_inputs());
    if (!shipped) return shipped.status();
    PromptVariantRecord first;
    first.job_name = job_.job_name;
    first.variant_id = 1;
    first.text = *shipped;
    meta_->add(first);
  }
  out_ << strprintf("meta-prompting: %zu guidance variant(s)%s; a new one every %d iteration(s)\n",
                    meta_->variants().size(), stored->empty() ? "" : " (stored)",
                    s_.meta.evolution_interval);
  return save_meta_prompts();
}

void Search::evolve_meta_prompt(int trial) {
  // A resumed job already wrote this iteration's variant: it is loaded, not asked for again.
  for (const PromptVariantRecord& v : meta_->variants())
    if (v.created_trial == trial && v.variant_id != 1) return;
  MetaPromptRequest request;
  request.variants = meta_->variants_text();
  request.outcomes = meta_->outcomes_text();
  request.max_chars = s_.meta.max_chars;
  PromptInputs inputs = prompt_inputs();
  inputs.trial = trial;
  inputs.max_iters = s_.max_iters;
  auto prompt = build_meta_prompt(*templates_, inputs, request);
  Result<BrokerAnswer> answer = prompt ? broker_->meta_prompt(trial, prompt->system, prompt->user)
                                       : Result<BrokerAnswer>::error(prompt.message());
  std::string text = answer ? extract_guidance(answer->answer.text, s_.meta.max_chars) : "";
  if (!answer || text.empty()) {
    out_ << strprintf(
        "[iter %d/%d] meta-prompting: no new guidance variant (%s); the variants "
        "stay as they are\n",
        trial, s_.max_iters, answer ? "the answer held no text" : answer.message().c_str());
    return;
  }
  PromptVariantRecord v;
  v.job_name = job_.job_name;
  v.variant_id = meta_->next_id();
  v.parent_id = meta_->best_id();
  v.text = text;
  v.created_trial = trial;
  meta_->add(v);
  std::vector<int> dropped = meta_->prune(v.variant_id);
  std::vector<std::string> dropped_text;
  for (int id : dropped) dropped_text.push_back(std::to_string(id));
  out_ << strprintf(
      "[iter %d/%d] meta-prompting: new guidance variant %d (from variant %d, %zu "
      "characters)%s\n",
      trial, s_.max_iters, v.variant_id, v.parent_id.value_or(0), text.size(),
      dropped.empty()
          ? ""
          : ("; dropped variant(s) " + join(dropped_text, ", ") + " (max_prompts)").c_str());
}

Status Search::save_meta_prompts() {
  fs::path dir = job_.run_dir / s_.meta.output_subdir;
  KF_RETURN_IF_ERROR(make_dirs(dir));
  nlohmann::json index = {{"format", "kernelfoundry-prompt-evolution"},
                          {"version", 1},
                          {"job_name", job_.job_name},
                          {"mode", "holistic"},
                          {"variants", nlohmann::json::array()}};
  for (const PromptVariantRecord& v : meta_->variants()) {
    KF_RETURN_IF_ERROR(job_.store->put_prompt_variant(v));
    std::string file = strprintf("variant_%d.md", v.variant_id);
    KF_RETURN_IF_ERROR(write_file(dir / file, redact_secrets(trim(v.text) + "\n")));
    index["variants"].push_back(
        {{"id", v.variant_id},
         {"parent_id", v.parent_id ? nlohmann::json(*v.parent_id) : nlohmann::json()},
         {"created_trial", v.created_trial},
         {"score", v.score ? nlohmann::json(*v.score) : nlohmann::json()},
         {"uses", v.uses},
         {"dropped", v.dropped},
         {"file", file}});
  }
  return write_file(dir / "index.json", index.dump(2) + "\n");
}

BranchPlan Search::plan_branch(int trial, int branch) {
  BranchPlan plan;
  plan.trial = trial;
  plan.branch = branch;
  plan.island = branch % archive_.num_islands();
  std::seed_seq seq{s_.seed, uint64_t(trial), uint64_t(branch), uint64_t(0x70617265)};
  std::mt19937_64 rng(seq);
  const Elite* parent = nullptr;
  if (s_.branches == 1) {
    // Refine the best so far.
    parent = archive_.best();
    if (parent && s_.improve_only_correct && parent->verdict != kCorrect) parent = nullptr;
  } else {
    parent = sample_parent(archive_, plan.island, rng, s_.sampling);
  }
  if (parent) plan.parent = *parent;
  if (const Elite* best = archive_.best(); best && (!parent || best->uuid != parent->uuid))
    plan.best = *best;
  for (const Elite* e : sample_inspirations(archive_, parent, s_.num_inspirations, rng)) {
    if (plan.best && e->uuid == plan.best->uuid) continue;
    plan.inspirations.push_back(*e);
  }
  if (meta_) {
    // A generator of its own: the variant is the same on resume, and turning meta-prompting on
    // leaves the parents and inspirations of a seed as they were.
    std::seed_seq meta_seq{s_.seed, uint64_t(trial), uint64_t(branch), uint64_t(0x6d657461)};
    std::mt19937_64 meta_rng(meta_seq);
    plan.variant = meta_->sample(meta_rng, trial);
  }
  return plan;
}

std::string Search::feedback_for(KernelRecord& kernel) {
  // Only a failure's long log is worth a second model's call (issue 10): a short log goes into
  // the prompt as it is, and a correct kernel's log is its timing table.
  if (!s_.use_feedback || kernel.verdict == kCorrect ||
      trim(kernel.eval_log).size() <= s_.feedback_min_log_chars)
    return kernel.feedback;
  std::mutex* lock_for_kernel;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = feedback_locks_[kernel.uuid];
    if (!slot) slot = std::make_unique<std::mutex>();
    lock_for_kernel = slot.get();
  }
  std::lock_guard<std::mutex> once(*lock_for_kernel);
  // Another branch may have summarised this kernel meanwhile.
  if (auto fresh = job_.store->kernel(kernel.uuid); fresh && fresh->has_value())
    kernel.feedback = (*fresh)->feedback;
  if (!kernel.feedback.empty()) return kernel.feedback;
  PromptInputs inputs = prompt_inputs();
  auto prompt = build_feedback_prompt(*templates_, inputs, prompt_kernel(kernel, num_blocks_));
  if (!prompt) return "";
  auto answer = broker_->feedback(kernel.uuid, prompt->system, prompt->user);
  if (!answer) {
    std::lock_guard<std::mutex> lock(mutex_);
    out_ << "        feedback LLM failed for kernel " << kernel.uuid
         << " (the raw eval log is used): " << answer.message() << "\n";
    return "";
  }
  kernel.feedback = trim(answer->answer.text);
  (void)job_.store->put_kernel(kernel);
  (void)write_file(kernel_dir(kernel.trial, kernel.branch) / "feedback.md",
                   redact_secrets(kernel.feedback + "\n"));
  return kernel.feedback;
}

std::vector<PromptAttempt> Search::attempts_for(const BranchPlan& plan) {
  std::vector<PromptAttempt> out;
  if (s_.max_attempts == 0) return out;
  AttemptQuery q;
  q.job_name = job_.job_name;
  q.parent_uuid = plan.parent ? plan.parent->uuid : "";
  q.before_trial = plan.trial;
  q.max_attempts = s_.max_attempts;
  auto attempts = recent_attempts(*job_.store, q);
  if (!attempts) {
    std::lock_guard<std::mutex> lock(mutex_);
    out_ << "        could not read the earlier attempts (the prompt goes without them): "
         << attempts.message() << "\n";
    return out;
  }
  for (Attempt& a : *attempts) {
    feedback_for(a.kernel);
    PromptAttempt p;
    p.kernel = prompt_kernel(a.kernel, num_blocks_);
    if (!a.started_from.uuid.empty()) {
      p.parent_codes = decode_codes(a.started_from.code, num_blocks_);
      p.parent_speedup = a.started_from.speedup;
    } else {
      for (const Block* b : job_.task.blocks_of(BlockKind::kEvolve))
        p.parent_codes.push_back(b->content);
    }
    p.summary = answer_summary(a.kernel.answer);
    p.trial = a.kernel.trial;
    p.from_parent = a.depth == 0;
    out.push_back(std::move(p));
  }
  return out;
}

KernelRecord Search::run_branch(const BranchPlan& plan) {
  KernelRecord k;
  k.uuid = plan.uuid.empty() ? new_uuid() : plan.uuid;
  k.job_name = job_.job_name;
  k.task_hash = job_.task.hash;
  k.task_name = job_.task_name;
  k.trial = plan.trial;
  k.branch = plan.branch;
  k.island = plan.island;
  k.language = language_;
  k.gpu_arch = job_.gpu_arch;
  k.verdict = kNoCode;

  PromptInputs inputs = prompt_inputs();
  inputs.include_reference = s_.include_reference;
  inputs.allow_templated = s_.allow_templated;
  inputs.parametrize_best = s_.parametrize_best;
  inputs.trial = plan.trial;
  inputs.max_iters = s_.max_iters;
  if (plan.parent) {
    k.parent_uuid = plan.parent->uuid;
    auto parent = job_.store->kernel(plan.parent->uuid);
    if (parent && parent->has_value()) {
      KernelRecord& p = **parent;
      feedback_for(p);
      inputs.parent = prompt_kernel(p, num_blocks_);
    }
  }
  auto lookup = [&](const Elite& e) -> std::optional<PromptKernel> {
    auto r = job_.store->kernel(e.uuid);
    if (!r || !r->has_value()) return std::nullopt;
    return prompt_kernel(**r, num_blocks_);
  };
  if (plan.best) inputs.best = lookup(*plan.best);
  for (const Elite& e : plan.inspirations)
    if (auto p = lookup(e)) inputs.inspirations.push_back(std::move(*p));
  inputs.attempts = attempts_for(plan);
  if (meta_ && plan.variant > 0) {
    if (const PromptVariantRecord* v = meta_->find(plan.variant)) {
      inputs.guidance = v->text;
      k.prompt_variant = plan.variant;
    }
  }

  auto prompt = build_prompt(*templates_, inputs);
  if (!prompt) {
    k.reason = "the prompt could not be built: " + prompt.message();
    (void)finish_kernel(k, nullptr, "", false, 0);
    return k;
  }
  k.prompt = "# system\n\n" + prompt->system + "\n\n# user\n\n" + prompt->user;
  if (g_stop) return KernelRecord{};
  double llm_begin = now_s();
  auto answer = broker_->generate(plan.trial, plan.branch, k.parent_uuid, prompt->system,
                                  prompt->user, prompt->static_user_chars);
  double llm_s = now_s() - llm_begin;
  note_span(k.uuid, "llm", llm_begin, llm_begin + llm_s);
  if (!answer && g_stop) return KernelRecord{};  // cancelled: the branch runs again on resume
  if (!answer) {
    k.reason = "no answer from the LLM: " + answer.message();
    (void)finish_kernel(k, nullptr, "", false, llm_s);
    return k;
  }
  const LlmAnswer& a = answer->answer;
  k.model = a.model;
  k.answer = a.text;
  k.finish_reason = a.finish_reason;
  k.prompt_tokens = a.prompt_tokens;
  k.completion_tokens = a.completion_tokens;
  k.cost = a.cost;
  if (g_stop || env_stop_) return KernelRecord{};
  EvalResult eval;
  bool evaluated = false;
  if (a.truncated) {
    k.reason = strprintf(
        "the answer was truncated: %s stopped at max_tokens (finish reason '%s', %lld completion "
        "tokens) before the code was complete; raise max_tokens of that server or ask for "
        "shorter code",
        answer->server.c_str(), a.finish_reason.c_str(),
        static_cast<long long>(a.completion_tokens));
  } else if (stop_refused(a.finish_reason)) {
    k.reason = refusal_reason(answer->server, a.finish_reason);
  } else if (auto code = extract_code(a.text, job_.language, num_blocks_); !code) {
    k.reason = code.message();
  } else {
    k.code = encode_codes(code->codes);
    evaluate_into(k, code->codes, strprintf("t%02d_b%02d", plan.trial, plan.branch), &eval);
    evaluated = true;
    if (!eval.environment_error.empty()) {
      // The machine failed, not the candidate: nothing is stored, the job stops, and on resume
      // the branch runs again with its paid answer.
      std::lock_guard<std::mutex> lock(mutex_);
      if (env_error_.empty()) env_error_ = eval.environment_error;
      env_stop_ = true;
      return KernelRecord{};
    }
    // Stopped mid-evaluation: nothing is stored, the branch runs again on resume and reuses
    // its paid answer.
    if (g_stop) return KernelRecord{};
  }
  (void)finish_kernel(k, evaluated ? &eval : nullptr, answer->server, answer->reused, llm_s);
  return k;
}

Status Search::write_results() {
  LlmUsage usage = broker_ ? broker_->usage() : LlmUsage{};
  results_["best_uuid"] = summary_.best_uuid;
  results_["best_speedup"] =
      summary_.best_speedup ? nlohmann::json(*summary_.best_speedup) : nlohmann::json();
  results_["best_speedup_interval"] =
      summary_.best_interval ? interval_json(*summary_.best_interval) : nlohmann::json();
  results_["llm_this_run"] = {{"calls", usage.calls},
                              {"reused", usage.reused},
                              {"seconds", usage.seconds},
                              {"prompt_tokens", usage.prompt_tokens},
                              {"completion_tokens", usage.completion_tokens},
                              {"cost", usage.cost}};
  if (auto totals = job_.store->llm_totals(job_.job_name); totals)
    results_["llm_job_total"] = {{"calls", totals->calls},
                                 {"prompt_tokens", totals->prompt_tokens},
                                 {"completion_tokens", totals->completion_tokens},
                                 {"cached_tokens", totals->cached_tokens},
                                 {"cache_write_tokens", totals->cache_write_tokens},
                                 {"reasoning_tokens", totals->reasoning_tokens},
                                 {"cost", totals->cost}};
  results_["wall_s"] = now_s();
  results_["kernels"] = "@kernels@";
  std::string text = replace_all(
      results_.dump(2, ' ', false, nlohmann::json::error_handler_t::replace), "\"@kernels@\"",
      kernel_entries_.empty() ? std::string("[]") : "[\n" + join(kernel_entries_, ",\n") + "\n  ]");
  return write_file(job_.run_dir / "results.json", redact_secrets(text));
}

Status Search::save_best() {
  if (summary_.best_uuid.empty()) return Status::ok();
  auto best = job_.store->kernel(summary_.best_uuid);
  if (!best) return best.status();
  if (!best->has_value()) return Status::ok();
  const KernelRecord& k = **best;
  auto spliced = splice_evolve(job_.task, decode_codes(k.code, num_blocks_));
  if (!spliced) return spliced.status();
  fs::path dir = fs::path(job_.config.get_string("paths.results_dir", "results")) / job_.job_name /
                 job_.task_name;
  KF_RETURN_IF_ERROR(materialize(job_.task, *spliced, dir));
  // A templated kernel: its generated entry point, running the chosen combination by default.
  nlohmann::json template_params;
  if (auto templated = find_templated(job_.task, *spliced); templated && templated->has_value()) {
    const TemplatedSource& source = **templated;
    std::string chosen = chosen_template(k);
    const TemplateCombination* pick = &source.kernel.combinations.front();
    for (const TemplateCombination& c : source.kernel.combinations)
      if (combination_label(source.kernel, c) == chosen) pick = &c;
    KF_RETURN_IF_ERROR(write_file(dir / templated_entry_path(source, job_.language),
                                  templated_entry_source(source.kernel, *pick)));
    template_params = combination_params(source.kernel, *pick);
  } else {
    // One the package held (it was a saved templated kernel) belongs to other code.
    std::error_code ec;
    for (const TaskFile& f : job_.task.files)
      if (is_templated_entry_file(f.path)) fs::remove(dir / f.path, ec);
  }
  std::optional<SpeedupInterval> interval = speedup_interval_of(k);
  nlohmann::json about = {
      {"format", "kernelfoundry-best-kernel"},
      {"version", 1},
      {"uuid", k.uuid},
      {"job_name", k.job_name},
      {"task_name", k.task_name},
      {"gpu_arch", k.gpu_arch},
      {"language", k.language},
      {"model", k.model},
      {"trial", k.trial},
      {"branch", k.branch},
      {"speedup", k.speedup ? nlohmann::json(*k.speedup) : nlohmann::json()},
      {"speedup_interval", interval ? interval_json(*interval) : nlohmann::json()},
      {"median_ms", runtime_medians(k.runtimes_json, job_.gpu_arch)},
      {"template_params", template_params},
      {"template_results", template_results_of(k)}};
  KF_RETURN_IF_ERROR(write_file(dir / "kernelfoundry_best.json", about.dump(2) + "\n"));
  summary_.best_package_dir = dir.string();
  return Status::ok();
}

Result<SearchSummary> Search::run() {
  // Everything that can be checked without writing comes first.
  KF_RETURN_IF_ERROR(set_up_llms());
  // With gpu_arch native the stored kernels are looked up once the reference has named the
  // device (seed_iteration).
  if (!s_.resume && job_.arch.name != "native") {
    auto seed = resolve_seed_kernel(job_);
    if (!seed) return seed.status();
    seed_ = std::move(*seed);
  }
  KF_RETURN_IF_ERROR(open_job_record());
  heartbeat_.emplace(job_.store->path(), job_.job_name, owner_);
  // How a run that cannot go on leaves the job. A start that stored nothing gives its job name
  // back (a new job); otherwise the job keeps `status` with the reason in its progress.
  auto stop_job = [&](const std::string& status, const std::string& stage,
                      const std::string& message, const std::string& hint) -> Status {
    heartbeat_.reset();
    if (stored_this_run_ == 0 && created_job_) {
      (void)job_.store->delete_job(job_.job_name);
      return Status::error(message + "\n(nothing was stored; the job name '" + job_.job_name +
                           "' is free again)");
    }
    record_.status = status;
    record_.progress_json =
        nlohmann::json{{"stage", stage}, {"error", escape_invalid_utf8(message)}}.dump();
    (void)job_.store->put_job(record_);
    return Status::error(message + hint);
  };
  // A resumed job that stored nothing is left as it was, resumable.
  auto fail = [&](const std::string& message) -> Status {
    return stop_job(stored_this_run_ == 0 ? "interrupted" : "failed", "failed", message, "");
  };
  // The machine failed (disk full, read-only path, device gone): the job stops as interrupted,
  // resumable once the cause is fixed; the candidate that hit it is not blamed or stored.
  auto environment_stop = [&](const std::string& message) -> Status {
    return stop_job("interrupted", "environment_error", message,
                    "\nFix the cause and continue with resume=true job_name=" + job_.job_name);
  };
  if (Status s = create_broker(); !s) return fail(s.message());
  auto toolchain = find_toolchain();
  if (!toolchain) return fail(toolchain.message());
  EvalOptions options = eval_options(job_);
  options.device_lock = &device_lock_;
  options.build_pause = &build_pause_;
  auto sandbox = check_sandbox(options.sandbox);
  if (!sandbox) return fail(sandbox.message());
  if (!sandbox->warning.empty()) out_ << sandbox->warning << "\n";
  if (Status s = prepare_sanitizer(options, *toolchain, out_); !s) return fail(s.message());
  kept_timings_ = std::make_unique<StoreReferenceTimings>(*job_.store);
  options.reference_timings = kept_timings_.get();
  evaluator_ =
      std::make_unique<ArchEvaluators>(job_.task, options, job_.lanes, *toolchain, runner_,
                                       job_.reference_lane ? &*job_.reference_lane : nullptr);

  out_ << "job " << job_.job_name << (s_.resume ? " (resumed)" : "") << ": task " << job_.task_name
       << " (" << language_ << ", " << job_.gpu_arch << "), " << s_.max_iters << " iteration(s) x "
       << s_.branches << " branch(es)"
       << (s_.branches > 1
               ? strprintf(", evolutionary search on %d island(s)", archive_.num_islands())
               : ", refining the best kernel")
       << "\n";
  out_ << "reference: building and timing ..." << std::flush;
  double reference_begin = now_s();
  size_t failed_lane = 0;
  auto references = evaluator_->prepare_references(&failed_lane);
  double reference_end = now_s();
  if (!references) {
    out_ << (g_stop ? " stopped\n" : " failed\n");
    if (g_stop) return fail("interrupted by Ctrl-C while the reference was built and timed");
    if (!evaluator_->lane(failed_lane).reference_environment_error().empty())
      return environment_stop(references.message());
    return fail(references.message());
  }
  out_ << reference_done_line(*references);
  const EvalResult* reference = &references->front();
  // The arch is a claim about where kernels run: checked against the device the reference ran
  // on; native becomes that device's name (and profile) before any kernel is stored.
  if (Status s = settle_arch(job_, *references); !s) return fail(s.message());
  if (record_.gpu_arch != job_.gpu_arch) {
    record_.gpu_arch = job_.gpu_arch;
    KF_RETURN_IF_ERROR(job_.store->put_job(record_));
  }
  if (Status s = prepare_profiler(*evaluator_, job_, options, *references, out_); !s)
    return fail(s.message());
  results_ = {{"format", "kernelfoundry-results"},
              {"version", 2},
              {"job_name", job_.job_name},
              {"task_name", job_.task_name},
              {"task_hash", job_.task.hash},
              {"language", language_},
              {"gpu_arch", job_.gpu_arch},
              {"reference", reference_runtimes(*references)},
              {"reference_gpu_arch", reference_arch_json(job_)},
              {"reference_timing", reference->timing_source},
              {"reference_timeline",
               {{"build", {reference_begin, reference_begin + reference->build_s}},
                {"test", {reference_end - reference->test_s, reference_end}}}}};

  if (Status s = set_up_meta_prompts(); !s) return fail(s.message());
  if (Status s = seed_iteration(); !s)
    return env_stop_ ? environment_stop(s.message()) : fail(s.message());
  summary_.stop_reason = "max_iters";
  for (int trial = 1; trial <= s_.max_iters && !g_stop; ++trial) {
    std::vector<BranchPlan> plans;
    std::vector<KernelRecord> done(static_cast<size_t>(s_.branches));
    std::vector<char> have(static_cast<size_t>(s_.branches),
                           0);  // not vector<bool>: threads write it
    for (int b = 0; b < s_.branches; ++b) {
      auto it = stored_.find({trial, b});
      if (it != stored_.end() && !never_answered(it->second)) {
        done[size_t(b)] = std::move(it->second);
        have[size_t(b)] = 1;
        stored_.erase(it);
      } else {
        plans.push_back(plan_branch(trial, b));
        if (it != stored_.end()) {
          // Nothing was paid for it (the LLM never answered): ask again, in the same record.
          plans.back().uuid = it->second.uuid;
          stored_.erase(it);
        }
      }
    }
    if (!plans.empty() && plans.size() < size_t(s_.branches))
      out_ << strprintf("[iter %d/%d] resuming: %zu of %d branch(es) already evaluated\n", trial,
                        s_.max_iters, size_t(s_.branches) - plans.size(), s_.branches);
    // A bounded pool: LLM calls overlap (up to llm_rate_limit), builds overlap, and the
    // evaluator's device lock runs the tests one at a time. Workers take no new branch once
    // the job is stopping.
    std::atomic<size_t> next{0};
    std::vector<std::thread> workers;
    size_t pool = std::min(plans.size(), static_cast<size_t>(s_.workers));
    for (size_t w = 0; w < pool; ++w) {
      workers.emplace_back([this, &plans, &next, &done, &have] {
        for (size_t i = next++; i < plans.size() && !g_stop && !env_stop_; i = next++) {
          KernelRecord k = run_branch(plans[i]);
          if (!k.uuid.empty()) {
            done[size_t(plans[i].branch)] = std::move(k);
            have[size_t(plans[i].branch)] = 1;
          }
        }
      });
    }
    for (auto& t : workers) t.join();
    if (env_stop_) {
      for (int b = 0; b < s_.branches; ++b)
        if (have[size_t(b)]) absorb(done[size_t(b)]);
      (void)write_results();
      return environment_stop(
          "a candidate could not be evaluated: environment error (not the "
          "candidate's fault): " +
          env_error_);
    }

    bool any_correct = false, complete = true;
    for (int b = 0; b < s_.branches; ++b) {
      if (!have[size_t(b)]) {
        complete = false;
        continue;
      }
      absorb(done[size_t(b)]);
      any_correct = any_correct || done[size_t(b)].verdict == kCorrect;
    }
    if (!complete) break;  // interrupted: the missing branches run when the job is resumed
    summary_.iterations = trial;
    if (archive_.should_migrate(trial)) archive_.migrate();
    if (meta_) {
      if (trial < s_.max_iters && meta_->due(trial)) evolve_meta_prompt(trial);
      if (Status s = save_meta_prompts(); !s) return fail(s.message());
    }
    if (auto totals = job_.store->llm_totals(job_.job_name); totals) {
      record_.prompt_tokens = totals->prompt_tokens;
      record_.completion_tokens = totals->completion_tokens;
      record_.cost = totals->cost;
    }
    record_.progress_json = nlohmann::json{
        {"stage", "search"},
        {"iteration", trial},
        {"max_iters", s_.max_iters},
        {"evaluated", summary_.evaluated},
        {"correct",
         summary_.correct}}.dump();
    if (Status s = job_.store->put_job(record_); !s) return fail(s.message());
    if (Status s = write_results(); !s) return fail(s.message());
    if (s_.stop_once_correct && any_correct) {
      summary_.stop_reason = "stop_once_correct";
      break;
    }
    if (s_.max_failures && summary_.failures >= *s_.max_failures) {
      summary_.stop_reason = "max_failures";
      out_ << strprintf("stopping: %d failed candidates reached max_failures (%d)\n",
                        summary_.failures, *s_.max_failures);
      break;
    }
  }
  if (g_stop) summary_.stop_reason = "interrupted";
  summary_.usage = broker_->usage();
  if (Status s = write_results(); !s) return fail(s.message());
  if (s_.save_best && summary_.stop_reason != "interrupted") {
    if (Status s = save_best(); !s)
      out_ << "could not write the best kernel's package: " << s.message() << "\n";
  }
  heartbeat_.reset();
  record_.status = g_stop ? "interrupted" : "done";
  auto totals = job_.store->llm_totals(job_.job_name);
  if (!totals) return totals.status();
  record_.prompt_tokens = totals->prompt_tokens;
  record_.completion_tokens = totals->completion_tokens;
  record_.cost = totals->cost;
  KF_RETURN_IF_ERROR(job_.store->put_job(record_));

  const LlmUsage& u = summary_.usage;
  out_ << strprintf(
      "done after %d iteration(s) (%s): %d candidates, %d correct, %d failed; best "
      "speedup %s",
      summary_.iterations, summary_.stop_reason.c_str(), summary_.evaluated, summary_.correct,
      summary_.failures, speedup_text(summary_.best_speedup, summary_.best_interval).c_str());
  if (!summary_.best_uuid.empty())
    out_ << strprintf(" (iteration %d, branch %d, %s, kernel %s)", summary_.best_trial,
                      summary_.best_branch,
                      summary_.best_model.empty() ? "starting kernel" : summary_.best_model.c_str(),
                      summary_.best_uuid.c_str());
  if (!summary_.best_template.empty())
    out_ << strprintf("; templated, chosen %s", summary_.best_template.c_str());
  out_ << "\n";
  out_ << strprintf(
      "LLM: %d new call(s) in this run (%.1f s waiting), %d answer(s) reused from the "
      "database; job total %lld call(s), %s prompt + %s completion tokens, "
      "estimated cost $%.4f\n",
      u.calls, u.seconds, u.reused, static_cast<long long>(totals->calls),
      tokens_text(totals->prompt_tokens).c_str(), tokens_text(totals->completion_tokens).c_str(),
      totals->cost);
  out_ << "files: " << job_.run_dir.string() << "/ (prompts, answers, eval logs, results.json)";
  if (!summary_.best_package_dir.empty())
    out_ << "; best kernel package: " << summary_.best_package_dir << "/";
  out_ << "\n";
  if (g_stop)
    out_ << "interrupted by Ctrl-C: continue with resume=true job_name=" << job_.job_name << "\n";
  return summary_;
}

}  // namespace

Result<SearchSummary> run_search(JobContext& job, ProcessRunner& runner, std::ostream& out,
                                 const SearchHooks& hooks) {
  g_stop = false;
  reset_llm_cancel();
  reset_process_cancel();
  auto previous_int = std::signal(SIGINT, on_stop_signal);
  auto previous_term = std::signal(SIGTERM, on_stop_signal);
  struct Restore {
    decltype(previous_int) int_handler, term_handler;
    ~Restore() {
      std::signal(SIGINT, int_handler);
      std::signal(SIGTERM, term_handler);
    }
  } restore{previous_int, previous_term};
  Search search(job, runner, out, hooks);
  return search.run();
}

}  // namespace kf
