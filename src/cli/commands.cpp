// The CLI's subcommands: argument handling and output only; the work is in the library.
#include "cli/commands.h"

#include <algorithm>
#include <iostream>

#include "config/api_keys.h"
#include "eval/templated.h"
#include "eval/verdict.h"
#include "lang/lang.h"
#include "search/job.h"
#include "search/job_owner.h"
#include "search/optimize.h"
#include "search/seed_kernel.h"
#include "task/scaffold.h"
#include "util/fs.h"
#include "util/secrets.h"
#include "util/strings.h"

namespace kf {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitNotCorrect = 1;
constexpr int kExitError = 2;

int fail(const std::string& message) {
  std::cerr << "kernelfoundry: " << message << "\n";
  return kExitError;
}

bool is_config_arg(const std::string& a) {
  return a.find('=') != std::string::npos || starts_with(a, "+");
}

// A command's arguments: config arguments (key=value, +experiment) and the rest, file paths.
void split_args(const std::vector<std::string>& args, std::vector<std::string>* config_args,
                std::vector<std::string>* files) {
  for (const auto& a : args) (is_config_arg(a) ? config_args : files)->push_back(a);
}

// A candidate file: the new contents of the EVOLVE block, labelled by its file name.
Result<Candidate> read_candidate(const std::string& path) {
  auto text = read_file(path);
  if (!text) return Result<Candidate>::error(text.message());
  return Result<Candidate>(Candidate{fs::path(path).filename().string(), {*text}});
}

// Remarks from composing the config (e.g. ignored keys of the Python KernelFoundry's configs).
void print_config_notes(const Config& config) {
  for (const std::string& note : config.notes())
    std::cerr << "kernelfoundry: note: " << note << "\n";
}

// Composes the config for commands that may or may not name a task.
Result<Config> compose_for(const std::vector<std::string>& args, TaskPackage* task_out) {
  ComposeOptions o;
  o.config_dir = default_config_dir();
  std::string task_path;
  for (const auto& a : args)
    if (starts_with(a, "task=")) task_path = a.substr(5);
  if (!task_path.empty()) {
    auto task = load_task(task_path, fs::temp_directory_path() / "kernelfoundry-tasks");
    if (!task) return Result<Config>::error(task.message());
    o.task_config = task->config_path();
    o.task_overrides = task->overrides_path();
    if (task_out) *task_out = std::move(*task);
  }
  o.args = args;
  auto config = compose(o);
  if (config) print_config_notes(*config);
  // The values of the key variables it names are secrets from here on (main.cpp redacts output).
  if (config) register_env_secrets(api_key_variables(*config), fs::current_path());
  return config;
}

Result<std::unique_ptr<Store>> open_store(const Config& config) {
  return Store::open(config.get_string("paths.kernels_db_path", "runs/kernels.sqlite3"),
                     static_cast<int>(config.get_int("database.busy_timeout_ms", 5000)));
}

// Warnings about the task package (e.g. a very large file), before any work starts.
void print_task_warnings(const TaskPackage& task) {
  for (const auto& w : task.warnings) std::cerr << "kernelfoundry: warning: " << w << "\n";
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  auto job = open_job(args);
  if (!job) return fail(job.message());
  print_config_notes(job->config);
  print_task_warnings(job->task);
  bool validate = job->config.get_bool("validate") || job->config.get_int("max_iters", 3) == 0;
  PosixProcessRunner runner;
  if (!validate) {
    for (const std::string& w : api_key_warnings(job->config))
      std::cerr << "kernelfoundry: warning: " << w << "\n";
    auto result = run_search(*job, runner, std::cout);
    if (!result) return fail(result.message());
    return result->best_uuid.empty() ? kExitNotCorrect : kExitOk;
  }
  // Evaluate only: the kernel iteration 0 would start from (start_from_best,
  // kernels_iter_0_path), else the EVOLVE block as written.
  // With gpu_arch native, stored kernels are looked up under the device's name, known once the
  // reference has run: run_candidates resolves the kernel then.
  bool late = job->arch.name == "native";
  std::vector<Candidate> start;
  if (!late) {
    auto seed = resolve_seed_kernel(*job);
    if (!seed) return fail(seed.message());
    if (!seed->note.empty()) std::cout << seed->note << "\n";
    start.push_back({seed->label, seed->codes, seed->source_uuid});
  }
  auto summary = run_candidates(*job, start, runner, std::cout, late);
  if (!summary) return fail(summary.message());
  return summary->last_verdict == kCorrect ? kExitOk : kExitNotCorrect;
}

int cmd_eval(const std::vector<std::string>& args) {
  std::vector<std::string> config_args, files;
  split_args(args, &config_args, &files);
  std::vector<Candidate> candidates;
  for (const std::string& f : files) {
    auto c = read_candidate(f);
    if (!c) return fail(c.message());
    candidates.push_back(*c);
  }
  if (candidates.empty())
    return fail("eval needs at least one candidate file (the new contents of the EVOLVE block)");
  auto job = open_job(config_args);
  if (!job) return fail(job.message());
  print_config_notes(job->config);
  print_task_warnings(job->task);
  size_t blocks = job->task.blocks_of(BlockKind::kEvolve).size();
  if (blocks != 1)
    return fail(
        strprintf("the task has %zu EVOLVE blocks; eval FILE replaces exactly one", blocks));
  PosixProcessRunner runner;
  auto summary = run_candidates(*job, candidates, runner, std::cout);
  if (!summary) return fail(summary.message());
  return kExitOk;
}

namespace {

// The tuning results, fastest first: the combinations timed side by side, then those the first pass
// timed briefly, then those that failed or did not run.
void print_tuning_table(const nlohmann::json& results, std::ostream& out) {
  if (!results.is_array() || results.empty()) return;
  auto rank = [](const nlohmann::json& r) {
    std::string timing = r.value("timing", std::string("full"));
    if (r.value("verdict", 0) != kCorrect || !r["speedup"].is_number()) return 2;
    return timing == "full" ? 0 : 1;
  };
  std::vector<const nlohmann::json*> rows;
  for (const auto& r : results)
    if (r.is_object()) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [&](const nlohmann::json* a, const nlohmann::json* b) {
    if (rank(*a) != rank(*b)) return rank(*a) < rank(*b);
    if (rank(*a) == 2) return false;
    return (*a)["speedup"].get<double>() > (*b)["speedup"].get<double>();
  });
  out << "tuning results, fastest first (speedup against the reference; docs/templating.md):\n";
  for (const nlohmann::json* r : rows) {
    std::string timing = r->value("timing", std::string("full"));
    std::string label = r->value("label", std::string("?"));
    std::string what;
    if (timing == "not run") {
      what = "not run";
    } else if (timing == "skipped") {
      what = r->value("skipped_at", std::string()) == "launch"
                 ? "skipped at its first launch (over the device's limits)"
                 : "skipped before running (over the device's limits)";
    } else if (rank(*r) == 2) {
      what = std::string(verdict_name(r->value("verdict", 0)));
    } else {
      what = strprintf("%.3fx", (*r)["speedup"].get<double>()) +
             (timing == "full"          ? " (timed side by side)"
              : r->value("kept", false) ? " (first pass, brief timing; kept from the earlier tune)"
                                        : " (first pass, brief timing)");
    }
    if (r->value("chosen", false) && r->contains("confirmed_verdict")) {
      // Picked by that figure, then run once more: the confirming run is the kernel's result.
      what += r->value("confirmed_verdict", 0) == kCorrect && (*r)["confirmed_speedup"].is_number()
                  ? strprintf("  <- chosen; confirmed at %.3fx (the kernel's result)",
                              (*r)["confirmed_speedup"].get<double>())
                  : "  <- chosen; its confirming run failed";
    } else if (r->value("chosen", false)) {
      what += "  <- chosen";
    }
    out << strprintf("  %-40s %s\n", label.c_str(), what.c_str());
  }
}

}  // namespace

int cmd_tune(const std::vector<std::string>& args) {
  std::vector<std::string> config_args, files;
  split_args(args, &config_args, &files);
  if (files.size() > 1)
    return fail("tune takes at most one FILE (a templated EVOLVE block); got '" +
                fs::path(files[0]).filename().string() + "' and '" + files[1] + "'");
  std::vector<Candidate> file;
  if (!files.empty()) {
    auto c = read_candidate(files[0]);
    if (!c) return fail(c.message());
    file.push_back(*c);
  }
  auto job = open_job(config_args);
  if (!job) return fail(job.message());
  job->tune = true;
  print_config_notes(job->config);
  print_task_warnings(job->task);
  const size_t budget = static_cast<size_t>(job->config.get_int("tune.budget", 0));
  if (job->config.get_bool("resume", false)) {
    bool any = false;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(job->run_dir, ec))
      any = any || starts_with(e.path().filename().string(), "tune_state_");
    if (!any)
      return fail("resume=true: " + (job->run_dir / "tune_state_<arch>.json").string() +
                  " does not exist, so there is no tune of job '" + job->job_name +
                  "' to continue: give the job_name of the interrupted tune, or run without "
                  "resume=true");
  }
  if (job->language != Language::kCpp && job->language != Language::kCuda)
    return fail("tune: templated kernels are evaluated for CPP and CUDA tasks; task '" +
                job->task_name + "' is " + std::string(language_name(job->language)) +
                " (docs/templating.md)");
  size_t blocks = job->task.blocks_of(BlockKind::kEvolve).size();
  if (!file.empty() && blocks != 1)
    return fail(
        strprintf("the task has %zu EVOLVE blocks; tune FILE replaces exactly one", blocks));
  // The kernel to tune: FILE, else the one a validate run would evaluate (the EVOLVE block as
  // written, start_from_best, kernels_iter_0_path).
  Candidate kernel;
  bool late = false;
  if (!file.empty()) {
    kernel = file.front();
  } else if (job->arch.name == "native") {
    // Stored kernels are looked up under the device's name, known once the reference has run.
    late = true;
  } else {
    auto seed = resolve_seed_kernel(*job);
    if (!seed) return fail(seed.message());
    if (!seed->note.empty()) std::cout << seed->note << "\n";
    kernel = {seed->label, seed->codes, seed->source_uuid};
  }
  if (!late) {
    // No codes: the EVOLVE blocks as written (nothing changed).
    auto spliced =
        kernel.codes.empty()
            ? Result<std::map<std::string, std::string>>(std::map<std::string, std::string>())
            : splice_evolve(job->task, kernel.codes);
    if (!spliced) return fail(spliced.message());
    auto templated = find_templated(job->task, *spliced, kMaxTuneCombinations);
    if (!templated) return fail("tune: " + kernel.label + ": " + templated.message());
    if (!templated->has_value())
      return fail("tune: the kernel to tune (" + kernel.label +
                  ") is not a templated kernel: write the kernel as forward_templated<...> and a "
                  "dispatcher with the task's entry point's name listing each combination "
                  "(docs/templating.md, 'The format')");
    const TemplatedKernel& k = (*templated)->kernel;
    const size_t n = k.combinations.size();
    if (std::string problem = unbudgeted_space_problem(n, budget); !problem.empty())
      return fail("tune: " + problem);
    const size_t runs = budget > 0 ? std::min(budget, n) : n;
    std::string sample = runs < n
                             ? strprintf("%zu drawn at random (tune.budget, seed %lld)", runs,
                                         static_cast<long long>(job->config.get_int("seed", 0)))
                             : std::string("all");
    std::cout << strprintf("tuning %s: %zu combination(s) of %s; %s %s\n", kernel.label.c_str(), n,
                           k.name.c_str(), sample.c_str(),
                           runs > kTemplateFinalists
                               ? strprintf("checked and timed briefly, the %zu fastest correct "
                                           "ones timed side by side, the chosen one confirmed",
                                           kTemplateFinalists)
                                     .c_str()
                               : "checked and timed side by side");
  }
  PosixProcessRunner runner;
  std::vector<Candidate> candidates;
  if (!late) candidates.push_back(kernel);
  auto summary = run_candidates(*job, candidates, runner, std::cout, late);
  if (!summary) return fail(summary.message());
  if (late && summary->last_template_results.is_null())
    return fail("tune: the kernel evaluated is not a templated kernel (docs/templating.md)");
  print_tuning_table(summary->last_template_results, std::cout);
  return summary->last_verdict == kCorrect ? kExitOk : kExitNotCorrect;
}

int cmd_test(const std::vector<std::string>& args) {
  std::string dir;
  bool ref = false;
  std::vector<std::string> config_args;
  for (const auto& a : args) {
    if (a == "--ref") {
      ref = true;
    } else if (is_config_arg(a)) {
      config_args.push_back(a);
    } else if (dir.empty()) {
      dir = a;
    } else {
      return fail("test takes one package folder, got '" + dir + "' and '" + a + "'");
    }
  }
  if (dir.empty()) return fail("usage: kernelfoundry test DIR [--ref] [key=value ...]");
  config_args.push_back("task=" + dir);
  TaskPackage task;
  auto config = compose_for(config_args, &task);
  if (!config) return fail(config.message());
  auto language = parse_language(config->get_string("language"));
  if (!language)
    return fail(language.message() + " (set language in " + (task.root / "config.yaml").string() +
                ")");
  JobContext job{std::move(*config), std::move(task)};
  job.language = *language;
  auto archs = normalize_gpu_archs(job.config);
  auto arch = find_arch(archs.empty() ? "native" : arch_profile_name(archs[0]));
  if (!arch) return fail(arch.message());
  job.arch = *arch;
  job.run_dir = fs::path(job.config.get_string("paths.logdir", "runs")) / "test";
  auto toolchain = find_toolchain();
  if (!toolchain) return fail(toolchain.message());
  PosixProcessRunner runner;
  Evaluator evaluator(job.task, eval_options(job), *toolchain, runner);
  EvalResult r = evaluator.run_tests_once(ref);
  std::cout << r.eval_log;
  std::cout << "files: " << r.dir.string() << "\n";
  // The machine failed (disk full, missing compiler, ...): no result about the package.
  if (!r.environment_error.empty()) return fail("environment error: " + r.environment_error);
  return r.verdict == kCorrect ? kExitOk : kExitNotCorrect;
}

int cmd_init(const std::vector<std::string>& args) {
  std::string dir, language;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--language" && i + 1 < args.size()) {
      language = args[++i];
    } else if (starts_with(args[i], "--language=")) {
      language = args[i].substr(11);
    } else if (dir.empty()) {
      dir = args[i];
    } else {
      return fail("init takes one folder, got '" + dir + "' and '" + args[i] + "'");
    }
  }
  if (dir.empty() || language.empty())
    return fail("usage: kernelfoundry init DIR --language CUDA|OCL|CPP");
  auto lang = parse_language(language);
  if (!lang) return fail(lang.message());
  if (Status s = scaffold_task(dir, std::string(language_name(*lang))); !s)
    return fail(s.message());
  std::cout << "wrote a " << language_name(*lang) << " task package to " << dir << "\n"
            << "next: kernelfoundry test " << dir << "   (then: kernelfoundry run task=" << dir
            << " validate=true)\n";
  return kExitOk;
}

int cmd_config(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "show")
    return fail("usage: kernelfoundry config show [task=<package>] [key=value ...]");
  auto config = compose_for({args.begin() + 1, args.end()}, nullptr);
  if (!config) return fail(config.message());
  std::cout << config->show();
  return kExitOk;
}

int cmd_jobs(const std::vector<std::string>& args) {
  auto config = compose_for(args, nullptr);
  if (!config) return fail(config.message());
  auto store = open_store(*config);
  if (!store) return fail(store.message());
  auto jobs = (*store)->jobs();
  if (!jobs) return fail(jobs.message());
  std::cout << strprintf("%-24s %-20s %-7s %-10s %-12s %-14s %-9s %9s  %s\n", "job", "task", "lang",
                         "arch", "status", "tokens in/out", "cached in", "cost", "updated");
  for (const auto& j : *jobs) {
    std::string tokens = strprintf("%lld/%lld", static_cast<long long>(j.prompt_tokens),
                                   static_cast<long long>(j.completion_tokens));
    // Of the input tokens, those read from the provider's prompt cache (summed over the calls).
    auto totals = (*store)->llm_totals(j.job_name);
    std::string cached =
        totals ? std::to_string(static_cast<long long>(totals->cached_tokens)) : "?";
    std::cout << strprintf("%-24s %-20s %-7s %-10s %-12s %-14s %-9s %9s  %s\n", j.job_name.c_str(),
                           j.task_name.c_str(), j.language.c_str(), j.gpu_arch.c_str(),
                           effective_status(j).c_str(), tokens.c_str(), cached.c_str(),
                           strprintf("$%.4f", j.cost).c_str(), j.updated_at.c_str());
  }
  return kExitOk;
}

int cmd_kernels(const std::vector<std::string>& args) {
  KernelFilter filter;
  std::vector<std::string> config_args;
  for (const auto& a : args) {
    if (starts_with(a, "job="))
      filter.job_name = a.substr(4);
    else if (starts_with(a, "task="))
      filter.task_name = a.substr(5);
    else if (starts_with(a, "limit="))
      filter.limit = std::atoi(a.c_str() + 6);
    else
      config_args.push_back(a);
  }
  auto config = compose_for(config_args, nullptr);
  if (!config) return fail(config.message());
  auto store = open_store(*config);
  if (!store) return fail(store.message());
  auto kernels = (*store)->kernels(filter);
  if (!kernels) return fail(kernels.message());
  // The speedup column holds its interval when the kernel was timed side by side with the
  // reference: "1.234x [1.20-1.26]".
  std::cout << strprintf("%-36s %-20s %-16s %5s %6s %-24s %-16s %-19s  %s\n", "uuid", "job", "task",
                         "trial", "branch", "model", "verdict", "speedup", "reason");
  for (const auto& k : *kernels) {
    std::string verdict =
        strprintf("%d %s", k.verdict, std::string(verdict_name(k.verdict)).c_str());
    std::cout << strprintf("%-36s %-20s %-16s %5d %6d %-24s %-16s %-19s  %s\n", k.uuid.c_str(),
                           k.job_name.c_str(), k.task_name.c_str(), k.trial, k.branch,
                           (k.model.empty() ? std::string("-") : k.model).c_str(), verdict.c_str(),
                           speedup_text(k.speedup, speedup_interval_of(k)).c_str(),
                           replace_all(truncate_middle(k.reason, 60, 20), "\n", " ").c_str());
  }
  return kExitOk;
}

}  // namespace kf
