// Evaluating a templated kernel (DESIGN.md §7): the candidate plus a generated entry point is
// built and statically screened once; each combination the dispatcher lists is then a full test
// child of that build, named by --template-params (checked by the judge, timed side by side like
// any candidate). The best correct combination is the kernel's result; every combination's verdict,
// reason and runtime go with it.
#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <random>
#include <set>

#include "eval/eval.h"
#include "eval/templated.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kf {
namespace {

nlohmann::json combination_entry(const TemplatedKernel& k, const TemplateCombination& combo,
                                 const EvalResult& r) {
  nlohmann::json medians = nlohmann::json::object();
  for (const auto& [shape, t] : r.timings) medians[shape] = t.median_ms;
  return {{"label", combination_label(k, combo)},
          {"params", combination_params(k, combo)},
          // Stored as JSON: text quoting the code or its output shows bytes that are not UTF-8
          // as \xNN.
          {"instantiation", escape_invalid_utf8(combo.instantiation)},
          {"verdict", r.verdict},
          {"reason", escape_invalid_utf8(r.reason)},
          {"speedup", r.speedup ? nlohmann::json(*r.speedup) : nlohmann::json()},
          {"median_ms", medians},
          {"suspect", r.suspect()},
          {"chosen", false}};
}

// tune.budget: the combinations run, `budget` of those not skipped, drawn with `seed`. The draw
// is a Fisher-Yates shuffle on mt19937_64's raw output (no library distribution), so the same
// seed picks the same combinations on every machine and a resumed tune runs the same sample.
std::set<size_t> sample_combinations(size_t n, const std::map<size_t, std::string>& skipped,
                                     size_t budget, uint64_t seed) {
  std::vector<size_t> pool;
  for (size_t i = 0; i < n; ++i)
    if (!skipped.count(i)) pool.push_back(i);
  if (budget > 0 && pool.size() > budget) {
    std::mt19937_64 rng(seed);
    for (size_t i = pool.size(); i > 1; --i) std::swap(pool[i - 1], pool[rng() % i]);
    pool.resize(budget);
  }
  return std::set<size_t>(pool.begin(), pool.end());
}

// The first pass's children (RunExtras::sweep): the first runs this many combinations (it also
// builds), the later ones as many as take about kSweepChildSeconds, within bounds.
constexpr size_t kFirstSweepChild = 4;
constexpr size_t kMaxSweepChild = 64;
constexpr double kSweepChildSeconds = 5;
// The share of eval_config.time_budget per shape a finalist's side-by-side timing takes: it only
// ranks the few fastest of the first pass; the chosen one is then timed with the whole budget.
constexpr double kFinalistBudgetShare = 0.5;

// The tune state (EvalOptions::TemplateTuning::state_dir): the first-pass entries of one kernel,
// by label. Another kernel's state (another key) is not used.
constexpr const char* kTuneStateFormat = "kernelfoundry-tune-state";

std::map<std::string, nlohmann::json> read_tune_state(const std::filesystem::path& file,
                                                      const std::string& key, std::string* note) {
  std::map<std::string, nlohmann::json> out;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return out;
  auto text = read_file(file);
  nlohmann::json j = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (!j.is_object() || j.value("format", "") != kTuneStateFormat || !j["entries"].is_object()) {
    *note = "the tune state " + file.string() + " cannot be read: every combination is run";
    return out;
  }
  if (j.value("key", "") != key) {
    *note = "the tune state " + file.string() +
            " is of another kernel, task or setting: every combination is run";
    return out;
  }
  for (const auto& [label, entry] : j["entries"].items())
    if (entry.is_object() && entry["fitness"].is_number()) out[label] = entry;
  return out;
}

}  // namespace

EvalResult Evaluator::evaluate_templated(const std::string& id,
                                         const std::map<std::string, std::string>& changed,
                                         Role role, const TemplatedSource& source,
                                         const std::map<size_t, std::string>& skipped) {
  const TemplatedKernel& k = source.kernel;
  const size_t n = k.combinations.size();
  // The dispatcher's file as the candidate wrote it (positions of `k` refer to it).
  std::string written;
  if (auto it = changed.find(source.file); it != changed.end()) {
    written = it->second;
  } else if (const TaskFile* f = task_.file(source.file)) {
    written = f->content;
  }
  const EvalOptions::TemplateTuning& tuning = options_.tuning;
  if (std::string problem = unbudgeted_space_problem(n, tuning.budget); !problem.empty()) {
    EvalResult r;
    r.dir = options_.work_root / id;
    r.verdict = kCompileError;
    r.reason = "templated kernel: " + problem;
    r.eval_log = r.reason + "\n";
    return r;
  }
  // tune.budget: a sample of the combinations is run; the others are not.
  const std::set<size_t> sampled = sample_combinations(n, skipped, tuning.budget, tuning.seed);
  std::vector<size_t> unsampled;
  for (size_t i = 0; i < n; ++i)
    if (!skipped.count(i) && !sampled.count(i)) unsampled.push_back(i);
  // Combinations skipped before running, or not drawn, are not instantiated in the build.
  std::map<std::string, std::string> sources = changed;
  std::vector<size_t> left_out = unsampled;
  for (const auto& [i, why] : skipped) left_out.push_back(i);
  if (!left_out.empty())
    if (auto rewritten = without_combinations(written, k, left_out))
      sources[source.file] = *rewritten;
  size_t fallback = sampled.empty() ? 0 : *sampled.begin();
  // kernelfoundry tune keeps each first-pass entry as it finishes (resume=true takes them).
  const std::filesystem::path state_file =
      tuning.state_dir.empty() ? std::filesystem::path()
                               : tuning.state_dir / ("tune_state_" + options_.arch.name + ".json");
  std::string state_key, state_note;
  std::map<std::string, nlohmann::json> kept;
  if (!state_file.empty()) {
    Hasher h;
    h.add(task_.hash).add(source.file).add(written).add(options_.arch.name);
    h.add(strprintf("%d %g %g %d", options_.num_seeds, options_.time_budget_s,
                    options_.noise_target, options_.cold_samples ? 1 : 0));
    state_key = h.hex();
    if (tuning.resume) kept = read_tune_state(state_file, state_key, &state_note);
  }
  nlohmann::json state_entries = nlohmann::json::object();
  for (const auto& [label, entry] : kept) state_entries[label] = entry;
  auto save_state = [&]() {
    nlohmann::json state = {{"format", kTuneStateFormat}, {"version", 1},
                            {"key", state_key},           {"kernel", k.name},
                            {"combinations", n},          {"entries", state_entries}};
    if (Status s = write_file(state_file, state.dump(1)); !s && state_note.empty())
      state_note = "the tune state was not kept: " + s.message();
  };
  auto say = [&](const std::string& line) {
    if (tuning.progress) tuning.progress(line);
  };
  auto stop = [&]() { return tuning.stop && tuning.stop(); };
  auto entry_line = [](const nlohmann::json& entry) {
    std::string line = template_results_text(nlohmann::json::array({entry}));
    return line.size() > 2 ? line.substr(2) : line;  // without the "- "
  };
  RunExtras extras;
  // The first combination (not skipped) is the one a run without --template-params gets.
  extras.files[templated_entry_path(source, options_.language)] =
      templated_entry_source(k, k.combinations[fallback]);
  std::vector<std::optional<EvalResult>> runs(n);  // each combination's latest run
  nlohmann::json results = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i) {
    const TemplateCombination& combo = k.combinations[i];
    results.push_back({{"label", combination_label(k, combo)},
                       {"params", combination_params(k, combo)},
                       {"timing", "not run"}});
    if (auto it = skipped.find(i); it != skipped.end()) {
      results[i] = combination_entry(k, combo, EvalResult{});
      results[i]["timing"] = "skipped";
      results[i]["skipped_at"] = "build";
      results[i]["verdict"] = kCompileError;
      results[i]["reason"] = it->second;
    }
  }
  double build_s = 0, test_s = 0, screen_s = 0, check_s = 0;
  std::string not_run;
  // One run of combination i; false when the machine failed (`failure` is then the result) or
  // the build did (every combination fails alike: the rest are not run).
  std::optional<EvalResult> failure;
  bool unbuildable = false;
  size_t unbuilt_run = 0;
  // A build that the device compiler refused for some combinations' kernels (over the device's
  // limits, e.g. static shared memory): those are skipped before running, and the rest are
  // built and run without them.
  auto without_over_limit = [&]() -> std::optional<EvalResult> {
    const EvalResult& failed = *runs[unbuilt_run];
    std::map<size_t, std::string> more = skipped;
    for (const OverLimitKernel& o : over_limit_kernels(failed.eval_log + "\n" + failed.reason)) {
      for (size_t i : combinations_instantiating(k, o.name))
        if (!more.count(i))
          more[i] = "skipped before running: its kernel " + o.name + " " + o.detail +
                    ", over the device's limits (the device compiler's verdict)";
    }
    if (more.size() == skipped.size() || more.size() >= n) return std::nullopt;
    std::vector<size_t> skip;
    for (const auto& [i, why] : more) skip.push_back(i);
    if (!without_combinations(written, k, skip)) return std::nullopt;
    EvalResult r = evaluate_templated(id + "/fit", changed, role, source, more);
    r.build_s += build_s;  // the refused build counts
    return r;
  };
  // Takes combination i's run `r` into the results; false as run() says.
  auto absorb = [&](size_t i, EvalResult r, bool short_timing) {
    const TemplateCombination& combo = k.combinations[i];
    build_s += r.build_s;
    test_s += r.test_s;
    screen_s += r.screen_s;
    check_s += r.check_s;
    if (!r.environment_error.empty()) {
      failure = std::move(r);
      return false;
    }
    // The entry shows the combination's latest run; a full run keeps the first pass's figure.
    nlohmann::json screened = results[i].value("timing", "") == "short"
                                  ? results[i].value("speedup", nlohmann::json())
                                  : nlohmann::json();
    results[i] = combination_entry(k, combo, r);
    results[i]["timing"] = short_timing ? "short" : "full";
    // Refused at its first launch for a limit of the device (threads per block, registers): not
    // a fault of the kernel's logic, said as a limit, like one the device compiler refused.
    if (std::string limit = r.verdict == kRuntimeError ? launch_limit_error(r.reason) : "";
        !limit.empty()) {
      results[i]["timing"] = "skipped";
      results[i]["skipped_at"] = "launch";
      results[i]["reason"] = "skipped at its first launch: " + limit +
                             ", over the device's limits (the CUDA runtime's verdict)";
    }
    if (!short_timing && !screened.is_null()) results[i]["screen_speedup"] = screened;
    bool unbuilt = r.verdict == kCompileError && r.harness.is_null();  // no test child ran
    extras.screened = !unbuilt;  // the same objects for every combination: screened once
    runs[i] = std::move(r);
    if (unbuilt) {
      unbuildable = true;
      // Built once for all: what does not build or pass screening fails every combination alike.
      size_t rest = 0;
      for (size_t j = i + 1; j < n; ++j) rest += sampled.count(j) ? 1 : 0;
      if (rest > 0)
        not_run =
            strprintf("; the build failed, so the other %zu combination(s) were not run", rest);
      unbuilt_run = i;
      return false;
    }
    return true;
  };
  auto run = [&](size_t i, const std::string& dir, bool short_timing, double budget_share = 1) {
    extras.args = {"--template-params", combination_params(k, k.combinations[i]).dump()};
    extras.short_timing = short_timing;
    extras.budget_share = budget_share;
    // The same sources each time: the first run builds, the others take the build from the cache.
    return absorb(i,
                  build_and_run(strprintf("%s/%s-%02zu", id.c_str(), dir.c_str(), i), sources, role,
                                false, extras),
                  short_timing);
  };
  // The first pass of `todo` in one child (the harness's --sweep); the combinations it ran are
  // taken in, in order, each reported through `done_one`. False as run() says; a child that
  // stopped early (an error or crash) leaves the rest in `todo` for the next one.
  size_t sweeps = 0;
  auto sweep = [&](std::vector<size_t>& todo, const std::function<void(size_t)>& done_one) {
    extras.args.clear();
    extras.short_timing = true;
    extras.sweep.clear();
    for (size_t i : todo) extras.sweep.push_back(combination_params(k, k.combinations[i]));
    std::vector<EvalResult> swept;
    extras.swept = &swept;
    EvalResult outer = build_and_run(strprintf("%s/sweep-%02zu", id.c_str(), sweeps++), sources,
                                     role, false, extras);
    extras.sweep.clear();
    extras.swept = nullptr;
    if (swept.empty()) {  // the build failed, or the machine did: as one combination's run
      size_t first = todo.front();
      todo.erase(todo.begin());
      return absorb(first, std::move(outer), true);
    }
    build_s += outer.build_s;
    screen_s += outer.screen_s;
    test_s += outer.test_s;
    extras.screened = true;
    for (size_t n_run = 0; n_run < swept.size(); ++n_run) {
      size_t i = todo[n_run];
      EvalResult& r = swept[n_run];
      check_s += r.check_s;
      r.test_s = r.check_s;  // the child's time is counted once, above
      if (!absorb(i, std::move(r), true)) {
        todo.erase(todo.begin(), todo.begin() + long(n_run) + 1);
        return false;
      }
      done_one(i);
    }
    todo.erase(todo.begin(), todo.begin() + long(swept.size()));
    return true;
  };
  // Many combinations: a first pass with a short timing ranks them (every check as usual), and
  // only the fastest few are timed side by side, with a share of the time budget (they are only
  // ranked again; the chosen one is confirmed with the whole budget). Few: each is timed side by
  // side with the whole budget at once.
  const bool two_passes = sampled.size() > kTemplateFinalists;
  std::vector<size_t> finalists;
  size_t kept_used = 0;
  bool interrupted = false;
  if (two_passes) {
    std::vector<std::optional<double>> first_fitness(n);  // correct ones: run now or kept
    size_t done = 0, runs_done = 0, to_run = 0;           // to_run: the sample less what is kept
    for (size_t i : sampled) to_run += kept.count(combination_label(k, k.combinations[i])) ? 0 : 1;
    std::vector<size_t> todo;
    for (size_t i : sampled) {
      auto it = kept.find(combination_label(k, k.combinations[i]));
      if (it == kept.end()) {
        todo.push_back(i);
        continue;
      }
      ++done;
      results[i] = it->second;
      results[i].erase("fitness");
      results[i]["kept"] = true;
      if (results[i].value("verdict", 0) == kCorrect)
        first_fitness[i] = it->second["fitness"].get<double>();
      ++kept_used;
      say(strprintf("  first pass %zu/%zu  ", done, sampled.size()) + entry_line(results[i]) +
          ", kept from the earlier tune");
    }
    // The rest in children of a few combinations each (one device open, the inputs set up once
    // per child): a handful first, as that child also builds, then as many as take about
    // kSweepChildSeconds at the pace seen, so progress is shown and a Ctrl-C loses little.
    double pace_s = 0;  // the time of the combinations after the first child, and their count
    size_t paced = 0, chunk = kFirstSweepChild;
    while (!todo.empty() && !failure && !unbuildable) {
      if (stop()) {
        interrupted = true;
        break;
      }
      std::vector<size_t> child(todo.begin(), todo.begin() + long(std::min(chunk, todo.size())));
      todo.erase(todo.begin(), todo.begin() + long(child.size()));
      std::vector<size_t> ran;
      auto started = std::chrono::steady_clock::now();
      bool ok = sweep(child, [&](size_t i) { ran.push_back(i); });
      double took =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      todo.insert(todo.begin(), child.begin(), child.end());  // what the child left
      if (stop()) {  // the same Ctrl-C may have cut this child short: none of it is kept
        for (size_t i : ran) {
          results[i] = {{"label", combination_label(k, k.combinations[i])},
                        {"params", combination_params(k, k.combinations[i])},
                        {"timing", "not run"}};
          runs[i].reset();
        }
        interrupted = true;
        break;
      }
      if (runs_done > 0 && !ran.empty()) {
        pace_s += took;
        paced += ran.size();
      }
      for (size_t i : ran) {
        ++done;
        ++runs_done;
        const std::string label = combination_label(k, k.combinations[i]);
        if (runs[i]->verdict == kCorrect) first_fitness[i] = runs[i]->fitness;
        if (!state_file.empty()) {
          state_entries[label] = results[i];
          state_entries[label]["fitness"] = runs[i]->fitness;
        }
        // What is left of the first pass, at the pace of the children after the first (which
        // also builds; none said before then).
        size_t left = to_run - runs_done;
        std::string eta = left > 0 && paced > 0
                              ? strprintf("  [about %.0f s left in the first pass]",
                                          pace_s / double(paced) * double(left))
                              : "";
        say(strprintf("  first pass %zu/%zu  ", done, sampled.size()) + entry_line(results[i]) +
            eta);
      }
      if (!state_file.empty() && !ran.empty()) save_state();
      if (!ok) break;
      if (paced > 0)
        chunk = std::clamp(size_t(kSweepChildSeconds / std::max(pace_s / double(paced), 1e-3)),
                           kFirstSweepChild, kMaxSweepChild);
    }
    if (failure) return std::move(*failure);
    if (unbuildable)
      if (auto r = without_over_limit()) return std::move(*r);
    std::vector<size_t> order;
    for (size_t i = 0; i < n; ++i)
      if (first_fitness[i]) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return *first_fitness[a] > *first_fitness[b]; });
    if (order.size() > kTemplateFinalists) order.resize(kTemplateFinalists);
    finalists = order;
  } else {
    finalists.assign(sampled.begin(), sampled.end());
  }
  // Ctrl-C (kernelfoundry tune): no verdict for the kernel; the first pass's results are kept.
  auto interrupted_result = [&]() {
    EvalResult r;
    r.dir = options_.work_root / id;
    std::string screened = strprintf("%zu of the %zu combination(s) of the first pass run",
                                     state_entries.size(), sampled.size());
    r.environment_error =
        "interrupted (Ctrl-C) while tuning: " + screened +
        (state_file.empty() ? ""
                            : ", kept in " + state_file.string() +
                                  "; run the same command with resume=true to go on from there");
    r.verdict = kNoCode;
    r.reason = "not evaluated: " + r.environment_error;
    return r;
  };
  if (interrupted) return interrupted_result();
  // None correct in the first pass, and none of it run now (all kept): the first is run, so
  // the kernel has a result of its own.
  if (finalists.empty() &&
      std::none_of(runs.begin(), runs.end(), [](const auto& r) { return r.has_value(); }))
    finalists.push_back(fallback);
  std::vector<size_t> full;  // combinations with a full run, in order
  if (!unbuildable) {
    for (size_t i : finalists) {
      if (stop()) return interrupted_result();
      bool ok = run(i, "combo", false, two_passes ? kFinalistBudgetShare : 1);
      if (failure) return std::move(*failure);
      full.push_back(i);
      if (ok)
        say(strprintf("  side by side %zu/%zu  ", full.size(), finalists.size()) +
            entry_line(results[i]));
      if (!ok) break;
    }
    if (unbuildable)
      if (auto r = without_over_limit()) return std::move(*r);
  }
  // The best: correct and unflagged with the highest speedup (fitness says exactly that) among
  // the full runs, else the furthest any run got.
  std::vector<size_t> candidates = full;
  if (candidates.empty())
    for (size_t i = 0; i < n; ++i)
      if (runs[i]) candidates.push_back(i);
  size_t best = candidates.front();
  for (size_t i : candidates)
    if (runs[i]->fitness > runs[best]->fitness) best = i;
  results[best]["chosen"] = true;
  size_t correct = 0, correct_full = 0;
  // Each entry holds its latest run's verdict (or the kept one's); none for those not run.
  for (const auto& entry : results) correct += entry.value("verdict", -1) == kCorrect ? 1 : 0;
  for (size_t i : full) correct_full += runs[i]->verdict == kCorrect ? 1 : 0;
  // The fastest of several correct combinations is the luckiest of their noisy measurements (one
  // more ticket per combination timed): the chosen one runs once more in a fresh child, with the
  // whole time budget, and that run, not the one it was picked by, is the kernel's result. So
  // does a sole correct finalist, timed with a share of the budget only.
  std::string confirmation;
  if (correct_full >= 2 || (two_passes && correct_full == 1)) {
    extras.args = {"--template-params", results[best]["params"].dump()};
    extras.screened = true;
    extras.short_timing = false;
    extras.budget_share = 1;
    EvalResult again = build_and_run(id + "/confirm", sources, role, false, extras);
    build_s += again.build_s;
    test_s += again.test_s;
    check_s += again.check_s;
    if (!again.environment_error.empty()) return again;
    results[best]["confirmed_verdict"] = again.verdict;
    results[best]["confirmed_speedup"] =
        again.speedup ? nlohmann::json(*again.speedup) : nlohmann::json();
    confirmation = again.verdict == kCorrect
                       ? strprintf(" (confirmed in a fresh run: %.3fx)", again.speedup.value_or(0))
                       : " (its confirming run failed)";
    runs[best] = std::move(again);
  }
  for (auto& entry : results)
    if (!entry.contains("chosen")) entry["chosen"] = false;
  if (stop()) return interrupted_result();  // a full or confirming run Ctrl-C cut short
  EvalResult r = std::move(*runs[best]);
  r.build_s = build_s;
  r.test_s = test_s;
  r.screen_s = screen_s;
  r.check_s = check_s;
  r.template_params = results[best]["params"];
  std::string chosen = results[best]["label"].get<std::string>();
  std::string passes =
      two_passes ? strprintf("; the %zu fastest in the first pass timed side by side", full.size())
                 : "";
  if (!skipped.empty())
    passes += strprintf("; %zu skipped before running (over the device's limits)", skipped.size());
  size_t at_launch = 0;
  for (const auto& entry : results) at_launch += entry.value("skipped_at", "") == "launch" ? 1 : 0;
  if (at_launch > 0)
    passes +=
        strprintf("; %zu skipped at their first launch (over the device's limits)", at_launch);
  if (kept_used > 0)
    passes += strprintf("; %zu first-pass result(s) kept from the earlier tune", kept_used);
  std::string space = unsampled.empty()
                          ? strprintf("%zu combination(s)", n)
                          : strprintf("%zu combination(s) drawn at random of %zu (tune.budget)",
                                      n - unsampled.size(), n);
  r.reason =
      strprintf("templated: %zu of %s correct%s; %s %s%s: ", correct, space.c_str(), passes.c_str(),
                correct > 0 ? "chosen" : "shown", chosen.c_str(), confirmation.c_str()) +
      r.reason + not_run;
  // A sample (tune.budget): the combinations not drawn are left out of the results.
  if (!unsampled.empty()) {
    nlohmann::json drawn = nlohmann::json::array();
    for (size_t i = 0; i < n; ++i)
      if (!std::binary_search(unsampled.begin(), unsampled.end(), i)) drawn.push_back(results[i]);
    results = std::move(drawn);
  }
  r.template_results = std::move(results);
  std::string how = two_passes
                        ? strprintf(
                              "one build; each run on its own, first with a short timing, then the "
                              "fastest %zu timed side by side with %.0f%% of the time budget "
                              "each",
                              full.size(), 100 * kFinalistBudgetShare)
                        : "one build, each run on its own";
  if (!state_note.empty()) how += "\n" + state_note;
  r.eval_log =
      strprintf("== templated kernel: %s of %s, %s\n", space.c_str(), k.name.c_str(), how.c_str()) +
      template_results_text(r.template_results) + not_run + "\n\n== the " +
      (correct > 0 ? "chosen" : "shown") + " combination (" + chosen + ")\n" + r.eval_log;
  return r;
}

}  // namespace kf
