// The config schema table: one row per key (path, type, constraint, default, meaning).
// The shipped tree configs/ sets the same defaults; a unit test keeps the two in step.
#include "config/schema.h"

#include <unordered_map>

#include "util/strings.h"

namespace kf::cfg {

namespace {

using nlohmann::json;

// A small builder so each row of the table reads as one line of data.
struct Row {
  KeySpec spec;
  Row(std::string path, Kind kind, json def, std::string doc) {
    spec.path = std::move(path);
    spec.kind = kind;
    spec.default_value = std::move(def);
    spec.doc = std::move(doc);
  }
  Row&& nullable() && {
    spec.nullable = true;
    return std::move(*this);
  }
  Row&& at_least(double v) && {
    spec.min = Bound{v, false};
    return std::move(*this);
  }
  Row&& above(double v) && {
    spec.min = Bound{v, true};
    return std::move(*this);
  }
  Row&& at_most(double v) && {
    spec.max = Bound{v, false};
    return std::move(*this);
  }
  Row&& below(double v) && {
    spec.max = Bound{v, true};
    return std::move(*this);
  }
  Row&& one_of(std::vector<std::string> choices) && {
    spec.choices = std::move(choices);
    return std::move(*this);
  }
};

const json kNull = nullptr;

// The fields of one LLM server map, shared by inference.servers[] and feedback_llm_config.
std::vector<Row> server_rows(const std::string& p) {
  std::vector<Row> rows;
  rows.push_back(
      Row(p + ".server_type", Kind::kEnum, "openai",
          "API the server speaks: `openai` (chat completions; any compatible server via "
          "`base_url`), `anthropic` (messages), `replay` (recorded answers, no API cost).")
          .one_of({"openai", "anthropic", "replay"}));
  rows.push_back(Row(p + ".model_name", Kind::kString, kNull,
                     "Model to ask, e.g. `gpt-4o`. Required for openai and anthropic servers.")
                     .nullable());
  rows.push_back(Row(p + ".temperature", Kind::kNumber, 0.7,
                     "Sampling temperature; null = not sent (for models that reject it).")
                     .at_least(0)
                     .at_most(2)
                     .nullable());
  rows.push_back(
      Row(p + ".num_completions", Kind::kInt, 1, "Answers requested per call.").at_least(1));
  rows.push_back(
      Row(p + ".max_tokens", Kind::kInt, 8192,
          "Cap on the answer's tokens; an answer cut at the cap is reported as truncated.")
          .at_least(1));
  rows.push_back(
      Row(p + ".timeout", Kind::kNumber, 600, "Seconds to wait for one call before retrying.")
          .above(0));
  rows.push_back(Row(p + ".base_url", Kind::kString, kNull,
                     "Endpoint override, e.g. `http://localhost:8000/v1` for vLLM, SGLang, "
                     "llama.cpp, Ollama or OpenRouter; null = the provider's public API.")
                     .nullable());
  rows.push_back(Row(p + ".top_p", Kind::kNumber, kNull, "Nucleus sampling; null = not sent.")
                     .at_least(0)
                     .at_most(1)
                     .nullable());
  rows.push_back(Row(p + ".max_retry", Kind::kInt, 3,
                     "Retries (with backoff, honouring Retry-After) on 429, 5xx and timeouts.")
                     .at_least(0));
  rows.push_back(Row(p + ".replay_path", Kind::kString, kNull,
                     "For `replay`: a folder of recorded answers, or `job:<job_name>` to replay a "
                     "past job from the kernel database.")
                     .nullable());
  rows.push_back(
      Row(p + ".api_key_env", Kind::kString, kNull,
          "Environment variable holding the API key; null = `OPENAI_API_KEY` for openai, "
          "`ANTHROPIC_API_KEY` for anthropic (filled in when composed), none for replay or a "
          "custom `base_url`.")
          .nullable());
  rows.push_back(Row(p + ".price_per_mtok_in", Kind::kNumber, kNull,
                     "Price in USD per million input tokens, for cost estimates; null = unknown.")
                     .at_least(0)
                     .nullable());
  rows.push_back(Row(p + ".price_per_mtok_out", Kind::kNumber, kNull,
                     "Price in USD per million output tokens, for cost estimates; null = unknown.")
                     .at_least(0)
                     .nullable());
  rows.push_back(Row(p + ".price_per_mtok_cached_in", Kind::kNumber, kNull,
                     "Price in USD per million input tokens read from the provider's prompt "
                     "cache; null = price_per_mtok_in.")
                     .at_least(0)
                     .nullable());
  rows.push_back(Row(p + ".price_per_mtok_cache_write", Kind::kNumber, kNull,
                     "Anthropic: price in USD per million input tokens written to the prompt "
                     "cache; null = 1.25 x price_per_mtok_in.")
                     .at_least(0)
                     .nullable());
  rows.push_back(Row(p + ".token_limit_param", Kind::kEnum, "auto",
                     "OpenAI: the name the answer's cap goes by: `max_completion_tokens` (current; "
                     "reasoning models need it), `max_tokens` (older compatible servers), `auto` "
                     "(max_completion_tokens, switching once if the server rejects it).")
                     .one_of({"auto", "max_completion_tokens", "max_tokens"}));
  rows.push_back(Row(p + ".reasoning_effort", Kind::kEnum, kNull,
                     "OpenAI reasoning models: `none`, `minimal`, `low`, `medium`, `high`, "
                     "`xhigh`; null = not sent (the model's default).")
                     .one_of({"none", "minimal", "low", "medium", "high", "xhigh"})
                     .nullable());
  rows.push_back(Row(p + ".thinking", Kind::kSection, json::object(),
                     "Anthropic extended thinking: `{budget_tokens: N}`."));
  rows.push_back(Row(p + ".thinking.budget_tokens", Kind::kInt, kNull,
                     "Anthropic: tokens the model may think before answering (>= 1024, less "
                     "than max_tokens); null = no extended thinking. Temperature is then not "
                     "sent.")
                     .at_least(1024)
                     .nullable());
  rows.push_back(Row(p + ".prompt_caching", Kind::kBool, true,
                     "Anthropic: mark the prompt's static prefix with cache_control so later "
                     "calls read it from the cache; false = no marks."));
  return rows;
}

std::vector<KeySpec> build_schema() {
  const json kEmptyMap = json::object();
  std::vector<Row> rows;
  auto add = [&](Row&& row) { rows.push_back(std::move(row)); };

  // General keys (configs/base.yaml).
  add(Row("task_name", Kind::kString, kNull,
          "Groups the jobs of one task: the best-kernel lookup of `start_from_best`, "
          "`results/<job_name>/<task_name>/`. Required for a run.")
          .nullable());
  add(Row("job_name", Kind::kString, kNull,
          "Names this job: run files under `runs/<job_name>/`, best kernel under "
          "`results/<job_name>/`. Required for a run.")
          .nullable());
  add(Row("task", Kind::kString, kNull,
          "The task package: a directory, `.tar`, `.tar.gz` or `.zip`. Usually given on the "
          "command line.")
          .nullable());
  add(Row("language", Kind::kEnum, kNull,
          "Kernel language: `CUDA`, `OCL`, `SYCL`, `triton` or `CPP` (host C++). Any case is "
          "accepted and normalised. null = taken from the task.")
          .one_of({"CUDA", "OCL", "SYCL", "triton", "CPP"})
          .nullable());
  add(Row(
      "gpu_arch", Kind::kStringOrList, "native",
      "Target architecture: `native` (the device the reference runs on, stored under its "
      "profile name: `h200`, `cpu`, or `native-<device name>` for a device with no profile), or "
      "a profile name (`h100`, `bmg`, `cpu`, ...), which must be the device the reference runs "
      "on: another device stops the job before any kernel is stored, naming the device found. A "
      "comma list / YAML list of names evaluates every candidate on each arch's device "
      "(`arch_targets`): verdict = the worst, speedup = the geometric mean over every (arch, "
      "benchmark shape), each arch's results in the eval log. A name may carry a label after "
      "`/` to tell two devices of one profile apart (`cpu/basic,cpu/pthread`)."));
  add(Row("arch_targets", Kind::kStringOrList, kNull,
          "Where each gpu_arch entry runs: a comma list / YAML list of `ARCH=cuda:N` (CUDA device "
          "N) or `ARCH=opencl:PLATFORM[:DEVICE]` (the OpenCL platform whose name contains "
          "PLATFORM, any case, and its device number from 0). Required for every arch when "
          "gpu_arch lists several; with one arch, optional (else the environment's "
          "`KF_OPENCL_PLATFORM` / `CUDA_VISIBLE_DEVICES` pick the device). The device found must "
          "be the arch's, as for one arch.")
          .nullable());
  add(Row("reference_gpu_arch", Kind::kString, kNull,
          "The arch whose device runs the reference when it is not the candidates' (the "
          "baseline is the reference there, e.g. a GPU, while the kernels run on gpu_arch, e.g. "
          "the CPU): one profile name with an `arch_targets` entry. The reference is built, "
          "checked, timed beside every candidate and profiled on that device, and run once on "
          "each gpu_arch device too (which shows what that device is). Speedups are then "
          "candidate-there against reference-here; the eval log says so. null = where the "
          "candidates run.")
          .nullable());
  add(Row("seed", Kind::kInt, 0,
          "Seed for the search's random choices (parents, inspirations, ensemble picks) and for "
          "the combinations `kernelfoundry tune` draws with `tune.budget`."));
  add(Row("llm_rate_limit", Kind::kInt, 4,
          "Most LLM calls in flight at once (branch calls run concurrently).")
          .at_least(1));
  add(Row("use_feedback_llm", Kind::kBool, false,
          "A second LLM (`feedback_llm_config`) condenses long evaluation logs before they are fed "
          "back: the logs of failed kernels longer than `feedback_llm_config.min_log_chars`."));
  add(Row("feedback_llm_config", Kind::kSection, kEmptyMap,
          "The server map of the feedback LLM (same fields as an `inference.servers` entry)."));
  for (auto& r : server_rows("feedback_llm_config")) rows.push_back(std::move(r));
  add(Row("feedback_llm_config.min_log_chars", Kind::kInt, 2000,
          "With `use_feedback_llm`: a failed kernel's evaluation log longer than this many "
          "characters is summarised by the feedback LLM; a shorter one goes into prompts raw. "
          "Correct kernels' logs are never summarised.")
          .at_least(0));

  // Loop keys (configs/run.yaml).
  add(Row("max_iters", Kind::kInt, 3,
          "Iterations of the search; `0` evaluates the starting kernel only (the EVOLVE block, "
          "or the kernel start_from_best / kernels_iter_0_path names) and calls no LLM.")
          .at_least(0));
  add(Row("branches_per_iteration", Kind::kInt, 2,
          "LLM calls (candidates) per iteration; more than 1 turns on evolutionary search. Cost "
          "scales with branches_per_iteration x max_iters.")
          .at_least(1));
  add(Row("start_from_best", Kind::kBool, false,
          "Iteration 0 re-evaluates the best stored kernel for this task_name + gpu_arch + "
          "language instead of starting cold."));
  add(Row("kernels_iter_0_path", Kind::kString, kNull,
          "Start from this kernel: a file, a run directory, `best`, `best-<job_name>`, or "
          "`best-<job_name>/<job_name>` (the best of several jobs); null = the task's EVOLVE "
          "block. Set in a task package, a path is relative to the package and must stay "
          "inside it.")
          .nullable());
  add(Row("stop_once_correct", Kind::kBool, false,
          "End the job as soon as one candidate is correct."));
  add(Row("validate", Kind::kBool, false,
          "Evaluate the starting kernel (build, check, time against the reference; no LLM "
          "call) and stop, as max_iters=0 does: the EVOLVE block as it stands (a check of a new "
          "package), or the kernel start_from_best / kernels_iter_0_path names."));
  add(Row("build_timeout", Kind::kNumber, 200, "Seconds one candidate's build may take.").above(0));
  add(Row("test_timeout", Kind::kNumber, 300,
          "Seconds one run of the task's tests (correctness or benchmark) may take.")
          .above(0));
  add(Row("save_best_kernel", Kind::kBool, true,
          "Write the best kernel to `results/<job_name>/<task_name>/` at the end of the job."));
  add(Row("improve_only_correct", Kind::kBool, false,
          "Only correct kernels are chosen as parents to improve."));
  add(Row("max_failures", Kind::kInt, kNull,
          "End the job after this many candidates have failed (any verdict below correct); "
          "null = no limit.")
          .at_least(0)
          .nullable());
  add(Row("resume", Kind::kBool, false,
          "Continue the job `job_name` after a crash or Ctrl-C, re-using every result already "
          "stored."));
  add(Row("limits", Kind::kSection, kEmptyMap,
          "Upper bounds that catch a slip of the keyboard before it costs money or swamps the "
          "machine; raise one on purpose when you mean it."));
  add(Row("limits.branches_per_iteration", Kind::kInt, 64,
          "Most `branches_per_iteration` a run accepts.")
          .at_least(1));
  add(Row("limits.max_iters", Kind::kInt, 1000, "Most `max_iters` a run accepts.").at_least(0));
  add(Row("limits.llm_rate_limit", Kind::kInt, 32,
          "Most `llm_rate_limit` (LLM calls in flight) a run accepts; the worker pool is "
          "`llm_rate_limit` + 2 threads at most.")
          .at_least(1));

  // inference group (configs/inference/*.yaml).
  add(Row("inference", Kind::kSection, kEmptyMap,
          "The LLM servers; group `inference`, options `server` (default) and `ensemble`."));
  add(Row("inference.servers", Kind::kServerList, kNull,
          "One or more server maps; each call goes to one of them, picked by `weights`."));
  for (auto& r : server_rows("inference.servers[]")) rows.push_back(std::move(r));
  add(Row("inference.weights", Kind::kWeights, "uniform",
          "How the ensemble picks a server per call: `uniform`, or a list of numbers >= 0 (one "
          "per server, not all 0; normalised)."));
  add(Row("inference.weights_warmstart", Kind::kWeights, kNull,
          "Weights used during the first `trials_warmstart` iterations; null = `weights`.")
          .nullable());
  add(Row("inference.trials_warmstart", Kind::kInt, 0,
          "Iterations that use `weights_warmstart` before switching to `weights`.")
          .at_least(0));

  // prompt group (configs/prompt/*.yaml).
  add(Row("prompt", Kind::kSection, kEmptyMap,
          "How prompts are built; group `prompt`, options `default` and `meta_prompting`."));
  add(Row("prompt.allow_templated", Kind::kBool, false,
          "The model may write templated kernels: built once, each parameter combination listed "
          "in the dispatcher is then checked and timed from that build and the fastest "
          "correct one is the kernel's result ([templating.md](templating.md)). CUDA, SYCL and "
          "CPP only (CPP and CUDA are evaluated; this build has no SYCL toolchain): with OCL or "
          "triton the run aborts with `AssertionError: Must provide example if "
          "allow_templated=True`."));
  add(Row(
      "prompt.parametrize_best", Kind::kBool, false,
      "Ask the model to parametrise the current kernel when it is correct and not templated "
      "yet: rewrite it as a templated kernel whose template parameters are its tuning choices, "
      "each combination then built once and evaluated (objectives_parametrize.md; "
      "docs/templating.md). Needs `allow_templated: true`; `prompt=parametrize_best` sets both. "
      "With `start_from_best: true`, a short job that tunes the best kernel of an earlier one."));
  add(Row("prompt.template_dir", Kind::kString, kNull,
          "Folder of prompt template files overriding the shipped ones; null = shipped templates.")
          .nullable());
  add(Row("prompt.max_log_chars", Kind::kInt, 6000,
          "Most characters of one evaluation log placed in a prompt (error lines are kept).")
          .at_least(1));
  add(Row("prompt.max_chars", Kind::kInt, 200000,
          "Most characters of one prompt (system + user). Each kernel's code, the reference and "
          "the log are first cut to a quarter of it; a longer prompt then loses, in this order: "
          "inspirations, the best kernel's code, the earlier attempts, the log, the reference, "
          "then the current kernel's code is cut in the middle; the prompt says what was cut "
          "(docs/prompts.md).")
          .at_least(20000));
  add(Row("prompt.num_inspirations", Kind::kInt, 2,
          "Kernels from other archive cells shown in each prompt as inspiration.")
          .at_least(0));
  add(Row("prompt.max_attempts", Kind::kInt, 4,
          "Earlier attempts shown in each prompt: the recent answers from the current kernel or "
          "its ancestors that failed or were not faster, with their errors and what they "
          "changed; 0 = none.")
          .at_least(0));
  add(Row("prompt.max_attempts_chars", Kind::kInt, 8000,
          "Most characters of the earlier attempts' section; each attempt's error lines and diff "
          "share it, and attempts that do not fit are left out, the least close first.")
          .at_least(0));
  add(Row("prompt.include_reference", Kind::kBool, true,
          "Show the reference implementation in the prompt."));
  add(Row("prompt.meta_prompting", Kind::kSection, kEmptyMap,
          "Meta-prompt evolution: an LLM rewrites the optimisation guidance (the tips section) "
          "from the outcomes of the prompts used so far, and each branch samples a variant by "
          "its score (docs/prompts.md). `meta_prompting: true` / `false` is short for "
          "`{enabled: true}` / `{enabled: false}`."));
  add(Row("prompt.meta_prompting.enabled", Kind::kBool, false,
          "Turn meta-prompt evolution on (`prompt=meta_prompting` does)."));
  add(Row("prompt.meta_prompting.mode", Kind::kEnum, "holistic",
          "How variants are written: `holistic` (the whole guidance text at once; the only "
          "mode).")
          .one_of({"holistic"}));
  add(Row("prompt.meta_prompting.evolution_interval", Kind::kInt, 2,
          "Every this many iterations one LLM call (purpose `meta_prompt`) writes a new "
          "guidance variant.")
          .at_least(1));
  add(Row("prompt.meta_prompting.evolution_batch_size", Kind::kInt, 4,
          "Most recent children (variant, verdict, speedup against the parent) shown to that "
          "call as examples.")
          .at_least(0));
  add(Row("prompt.meta_prompting.min_samples_for_evolution", Kind::kInt, 2,
          "Children that must have been evaluated before the first new variant is written.")
          .at_least(0));
  add(Row("prompt.meta_prompting.exploration_rate", Kind::kNumber, 0.2,
          "Share of branches that pick a variant uniformly at random; the others pick by "
          "softmax over the variants' scores.")
          .at_least(0)
          .at_most(1));
  add(Row("prompt.meta_prompting.selection_temperature", Kind::kNumber, 1.0,
          "Temperature of that softmax; lower = greedier, 0 = always the best-scoring variant.")
          .at_least(0));
  add(Row("prompt.meta_prompting.max_prompts", Kind::kInt, 8,
          "Variants kept for sampling; beyond it the lowest-scoring is dropped (never the "
          "shipped guidance, nor the newest).")
          .at_least(1));
  add(Row("prompt.meta_prompting.max_chars", Kind::kInt, 6000,
          "Most characters of one variant's guidance; a longer answer is cut at a line end.")
          .at_least(200));
  add(Row("prompt.meta_prompting.output_subdir", Kind::kString, "prompt_evolution",
          "Folder under runs/<job_name>/ for variant_<id>.md files and index.json."));

  // The evolutionary search (configs/run.yaml), used when branches_per_iteration > 1.
  add(Row("search", Kind::kSection, kEmptyMap,
          "The evolutionary search: MAP-Elites islands and parent sampling."));
  add(Row("search.num_islands", Kind::kInt, 2,
          "Islands of the MAP-Elites archive; the branches of an iteration are spread over them.")
          .at_least(1));
  add(Row("search.migration_interval", Kind::kInt, 3,
          "Every this many iterations each island's best kernel is copied to the next island.")
          .at_least(1));
  add(Row("search.exploit", Kind::kNumber, 0.7,
          "Share of parents drawn by fitness (softmax over the island's elites).")
          .at_least(0)
          .at_most(1));
  add(Row("search.explore", Kind::kNumber, 0.2,
          "Share of parents drawn from cells other than the best's; the rest are uniform at "
          "random.")
          .at_least(0)
          .at_most(1));
  add(Row("search.temperature", Kind::kNumber, 1.0,
          "Softmax temperature of fitness-based parent picks; lower = greedier.")
          .at_least(0));

  // kernelfoundry tune (configs/run.yaml).
  add(Row("tune", Kind::kSection, kEmptyMap,
          "How `kernelfoundry tune` searches a templated kernel's combinations (other commands "
          "ignore this section)."));
  add(Row("tune.budget", Kind::kInt, 0,
          "Run at most this many combinations, drawn at random with `seed` (the same ones on "
          "every run), then time the 3 fastest in full; the others are not built. `0` = every "
          "combination (at most 64). A dispatcher listing more than 64 (up to 4096) needs a "
          "budget.")
          .at_least(0)
          .at_most(4096));

  // Evaluation knobs (configs/run.yaml).
  add(Row("eval_config", Kind::kSection, kEmptyMap,
          "How each candidate is evaluated: profiling and the timing method."));
  add(Row("eval_config.profile_original_model", Kind::kBool, false,
          "Profile the reference too (once per job, same shape), shown beside each profiled kernel "
          "as the baseline to beat."));
  add(Row("eval_config.profiler_kernel", Kind::kEnum, "auto",
          "The profiler of the candidates: `auto` (Nsight Compute for CUDA, `perf stat` for "
          "kernels on a CPU, none for OpenCL on a GPU), `ncu` (CUDA only), `perf` (kernels on a "
          "CPU only) or `none`. A choice that cannot profile the job's kernels stops it at start; "
          "a chosen tool that is not installed is a one-line note.")
          .one_of({"auto", "ncu", "perf", "none"}));
  add(Row("eval_config.profiler_reference", Kind::kEnum, "auto",
          "The profiler of the reference (with `profile_original_model`), as profiler_kernel; "
          "its device is the reference's own (`reference_gpu_arch`).")
          .one_of({"auto", "ncu", "perf", "none"}));
  add(Row("eval_config.profile_custom_model", Kind::kBool, true,
          "Profile each correct kernel on one benchmark shape, inside its sandbox: CUDA with "
          "Nsight Compute (`ncu`: one call; speed of light, occupancy, stall reasons, roofline), "
          "kernels on a CPU (CPP; OpenCL on a CPU device) with `perf stat` over the timed calls; "
          "condensed into a few lines in the eval log the next prompt shows, the figures stored "
          "as the kernel's `profile_json`. No profiler, or no permission, is a line in the log, "
          "never a failure; OpenCL on a GPU is not profiled (said once)."));
  add(Row("eval_config.num_seeds", Kind::kInt, 3,
          "Input seeds each candidate's correctness is checked with.")
          .at_least(1));
  add(Row("eval_config.large_shape_mib", Kind::kNumber, 64,
          "Shapes whose buffers total more than this many MiB are checked with seed 1 only (the "
          "benchmark phase re-checks them on a seed of its own); 0 = every seed on every shape.")
          .at_least(0));
  add(Row("eval_config.noise_target", Kind::kNumber, 0.005,
          "Sampling stops once the relative standard deviation of the mean is below this.")
          .above(0)
          .below(1));
  add(Row("eval_config.min_samples", Kind::kInt, 10, "Fewest timed samples per benchmark shape.")
          .at_least(1));
  add(Row("eval_config.max_samples", Kind::kInt, 2000,
          "Most timed samples per benchmark shape (>= min_samples).")
          .at_least(1));
  add(Row("eval_config.time_budget", Kind::kNumber, 2.0,
          "Seconds of sampling per benchmark shape before the noise target is given up.")
          .above(0));
  add(Row("eval_config.warmup_min_time", Kind::kNumber, 0.05, "Seconds of warm-up before sampling.")
          .at_least(0));
  add(Row("eval_config.warmup_min_iters", Kind::kInt, 3, "Fewest warm-up runs before sampling.")
          .at_least(0));
  add(Row("eval_config.cold_samples", Kind::kBool, true,
          "Flush caches (L2) before every timed sample."));
  add(Row("eval_config.reuse_reference_timing", Kind::kBool, true,
          "Reuse the reference's timing kept by an earlier job of the same task, language, "
          "arch, device, timer, harness, build and timing settings, after a short "
          "re-measurement agrees with it (else it is re-timed in full and replaced). false: "
          "time the reference in full (the timing is still kept for later jobs). Candidates are "
          "timed side by side with the reference either way."));
  add(Row("eval_config.reference_recheck_tolerance", Kind::kNumber, 0.03,
          "How far (relative) the short re-measurement of a kept reference timing may be from "
          "it, per benchmark shape, for the timing to be reused: at least this, or 3 x the "
          "measured noise of the two medians up to max(0.10, this).")
          .above(0));
  add(Row("eval_config.inactivity_timeout", Kind::kNumber, 60,
          "Seconds a build or test child may go without output before it is treated as hung.")
          .above(0));
  add(Row("eval_config.max_output_bytes", Kind::kInt, 1048576,
          "Most bytes of a child's output kept (the rest is cut in the middle).")
          .at_least(1));
  add(Row("eval_config.max_plausible_speedup", Kind::kNumber, 100,
          "A speedup above this is flagged, re-measured and shown as suspicious.")
          .above(1));
  add(Row("eval_config.check_wall_time", Kind::kBool, true,
          "Cross-check the child's reported times against the wall time the parent measured."));
  add(Row("eval_config.hidden_shapes", Kind::kBool, true,
          "Also check each candidate on hidden shapes near the listed correctness shapes (every "
          "dimension moved by 1..7, and one random size within the listed range), drawn per job, "
          "so code written for exactly the listed sizes fails. Off when the task sets "
          "eval_config.fixed_shapes."));
  add(Row("eval_config.fixed_shapes", Kind::kBool, false,
          "Set by a task package (its config.yaml) whose listed shapes are the only valid ones "
          "(sizes the kernel may assume): no hidden shapes are checked."));
  add(Row("eval_config.sandbox", Kind::kEnum, "auto",
          "Isolation of every build step and run of candidate code (docs/security.md): `bwrap` "
          "runs each in a bubblewrap sandbox (own PID namespace, no network, read-only system, "
          "writes only to its own folder) and fails at job start where bwrap cannot be used; "
          "`auto` does so where bwrap works, else warns once and keeps only the environment "
          "scrub and the limits; `none`: no sandbox, no warning.")
          .one_of({"auto", "bwrap", "none"}));
  add(Row("eval_config.compute_sanitizer", Kind::kEnum, "auto",
          "compute-sanitizer on a CUDA job's best kernel, once per kernel, before it is reported "
          "as the new best (docs/security.md): `auto` runs it where the tool is found (on PATH "
          "or under the CUDA root nvcc belongs to), else one note line at job start; `on` fails "
          "at job start without the tool; `off` never runs it. A finding flags the kernel as "
          "suspect (not counted as a win).")
          .one_of({"auto", "on", "off"}));
  add(Row("eval_config.sanitizer_tools", Kind::kStringOrList, "memcheck,racecheck",
          "The compute-sanitizer tools of that pass, each a run of the kernel's correctness "
          "shapes (one seed): memcheck, racecheck, initcheck, synccheck."));
  add(Row("eval_config.sanitizer_timeout", Kind::kNumber, 300,
          "Seconds each compute-sanitizer tool may run (its own limit: sanitizers are 10-100x "
          "slower than a test run); a pass that does not finish is noted, not held against the "
          "kernel.")
          .above(0));
  add(Row("eval_config.memory_limit_gib", Kind::kNumber, 8,
          "Most resident memory (GiB) of a build step's or run's whole process tree; a child "
          "over it is killed with the limit named. GPU memory is not counted. 0 = none.")
          .at_least(0));
  add(Row("eval_config.max_processes", Kind::kInt, 256,
          "Most processes + threads of a build step's or run's process tree; a child over it is "
          "killed with the limit named. 0 = none.")
          .at_least(0));
  add(Row("eval_config.cpu_time_limit", Kind::kNumber, 0,
          "CPU seconds each process of a build step or run may use (RLIMIT_CPU); 0 = 4 x the "
          "step's timeout (build_timeout or test_timeout).")
          .at_least(0));

  // How a task package's files reach each candidate (configs/run.yaml).
  add(Row("task_files", Kind::kSection, kEmptyMap,
          "How the task package's files reach each candidate: large data files by content "
          "hash."));
  add(Row("task_files.large_file_bytes", Kind::kInt, 1048576,
          "A data file (not a kernel, test, header or build file, holding no marked block) "
          "larger than this is stored once under `<cache_dir>/files/<sha256>` and hard-linked "
          "read-only into each candidate's folder and into results/; the database keeps its "
          "path, size and hash instead of its bytes.")
          .at_least(0));
  add(Row("task_files.warn_file_bytes", Kind::kInt, 67108864,
          "A package file larger than this is named in a warning at the start of the job; 0 = "
          "no warning.")
          .at_least(0));

  // paths group (configs/paths/default.yaml).
  add(Row("paths", Kind::kSection, kEmptyMap, "Where files go; group `paths`, option `default`."));
  add(Row("paths.kernels_db_path", Kind::kString, "runs/kernels.sqlite3",
          "The kernel database (SQLite)."));
  add(Row("paths.logdir", Kind::kString, "runs",
          "Run files: `<logdir>/<job_name>/` holds prompts, answers, eval logs, results.json."));
  add(Row("paths.results_dir", Kind::kString, "results",
          "Best kernels: `<results_dir>/<job_name>/<task_name>/`."));
  add(Row("paths.cache_dir", Kind::kString, "runs/cache",
          "Content-addressed build cache (harness binaries, unchanged parts)."));

  // database group (configs/database/sqlite.yaml).
  add(Row("database", Kind::kSection, kEmptyMap,
          "Kernel database settings; group `database`, option `sqlite`."));
  add(Row("database.busy_timeout_ms", Kind::kInt, 5000,
          "Milliseconds SQLite waits for a lock held by another process.")
          .at_least(0));
  add(Row("database.wal", Kind::kBool, true,
          "Write-ahead logging, so readers (reports, the UI) never block the running job."));

  std::vector<KeySpec> specs;
  specs.reserve(rows.size());
  for (auto& r : rows) specs.push_back(std::move(r.spec));
  return specs;
}

std::string last_segment(std::string_view path) {
  size_t dot = path.rfind('.');
  return std::string(dot == std::string_view::npos ? path : path.substr(dot + 1));
}

std::string parent_of(std::string_view path) {
  size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(path.substr(0, dot));
}

const std::unordered_map<std::string, size_t>& index_by_path() {
  static const std::unordered_map<std::string, size_t> index = [] {
    std::unordered_map<std::string, size_t> m;
    const auto& s = schema();
    for (size_t i = 0; i < s.size(); ++i) m.emplace(s[i].path, i);
    return m;
  }();
  return index;
}

std::string format_number(double v) {
  return strprintf("%g", v);
}

}  // namespace

const std::vector<KeySpec>& schema() {
  static const std::vector<KeySpec> specs = build_schema();
  return specs;
}

const KeySpec* find_spec(std::string_view schema_path) {
  const auto& index = index_by_path();
  auto it = index.find(std::string(schema_path));
  return it == index.end() ? nullptr : &schema()[it->second];
}

size_t spec_index(std::string_view schema_path) {
  const auto& index = index_by_path();
  auto it = index.find(std::string(schema_path));
  return it == index.end() ? schema().size() : it->second;
}

std::vector<std::string> child_names(std::string_view parent_schema_path) {
  // A list of maps ("inference.servers") has its fields under "inference.servers[]".
  std::vector<std::string> names;
  for (const auto& spec : schema()) {
    if (parent_of(spec.path) == parent_schema_path) names.push_back(last_segment(spec.path));
  }
  return names;
}

std::vector<std::string> paths_ending_with(std::string_view name) {
  std::vector<std::string> paths;
  for (const auto& spec : schema()) {
    if (last_segment(spec.path) == name) paths.push_back(spec.path);
  }
  return paths;
}

std::string describe_expectation(const KeySpec& spec) {
  std::string range;
  if (spec.min && spec.max) {
    if (!spec.min->open && !spec.max->open)
      range =
          " between " + format_number(spec.min->value) + " and " + format_number(spec.max->value);
    else
      range = std::string(spec.min->open ? " > " : " >= ") + format_number(spec.min->value) +
              " and" + (spec.max->open ? " < " : " <= ") + format_number(spec.max->value);
  } else if (spec.min) {
    range = std::string(spec.min->open ? " > " : " >= ") + format_number(spec.min->value);
  } else if (spec.max) {
    range = std::string(spec.max->open ? " < " : " <= ") + format_number(spec.max->value);
  }
  std::string what;
  switch (spec.kind) {
    case Kind::kString:
      what = "a string";
      break;
    case Kind::kBool:
      what = "true or false";
      break;
    case Kind::kInt:
      what = "an integer" + range;
      break;
    case Kind::kNumber:
      what = "a number" + range;
      break;
    case Kind::kEnum:
      what = "one of " + join(spec.choices, ", ");
      break;
    case Kind::kStringOrList:
      what = "a name, a comma list or a list of names";
      break;
    case Kind::kSection:
      what = "a map";
      break;
    case Kind::kServerList:
      what = "a list of one or more server maps";
      break;
    case Kind::kWeights:
      what = "'uniform' or a list of numbers >= 0, one per server";
      break;
  }
  if (spec.nullable) what += " or null";
  return what;
}

bool is_text_key(const KeySpec* spec) {
  return spec != nullptr && (spec->kind == Kind::kString || spec->kind == Kind::kEnum ||
                             spec->kind == Kind::kStringOrList);
}

std::string default_api_key_env(std::string_view server_type) {
  if (server_type == "openai") return "OPENAI_API_KEY";
  if (server_type == "anthropic") return "ANTHROPIC_API_KEY";
  return "";
}

bool language_has_templated_example(std::string_view language) {
  return language == "CUDA" || language == "SYCL" || language == "CPP";
}

}  // namespace kf::cfg
