// Evaluating a templated kernel (DESIGN.md §7): the candidate plus a generated entry point is
// built and statically screened once; each combination the dispatcher lists is then a full test
// child of that build, named by --template-params (checked by the judge, timed side by side like
// any candidate). The best correct combination is the kernel's result; every combination's verdict,
// reason and runtime go with it.
#include <algorithm>
#include <optional>

#include "eval/eval.h"
#include "eval/templated.h"
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
  // Combinations skipped before running are not instantiated in the build.
  std::map<std::string, std::string> sources = changed;
  if (!skipped.empty()) {
    std::vector<size_t> skip;
    for (const auto& [i, why] : skipped) skip.push_back(i);
    if (auto rewritten = without_combinations(written, k, skip)) sources[source.file] = *rewritten;
  }
  size_t fallback = 0;
  while (fallback + 1 < n && skipped.count(fallback)) ++fallback;
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
  auto run = [&](size_t i, const std::string& dir, bool short_timing) {
    const TemplateCombination& combo = k.combinations[i];
    extras.args = {"--template-params", combination_params(k, combo).dump()};
    extras.short_timing = short_timing;
    // The same sources each time: the first run builds, the others take the build from the cache.
    EvalResult r = build_and_run(strprintf("%s/%s-%02zu", id.c_str(), dir.c_str(), i), sources,
                                 role, false, extras);
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
    if (!short_timing && !screened.is_null()) results[i]["screen_speedup"] = screened;
    bool unbuilt = r.verdict == kCompileError && r.harness.is_null();  // no test child ran
    extras.screened = !unbuilt;  // the same objects for every combination: screened once
    runs[i] = std::move(r);
    if (unbuilt) {
      unbuildable = true;
      // Built once for all: what does not build or pass screening fails every combination alike.
      size_t rest = 0;
      for (size_t j = i + 1; j < n; ++j) rest += skipped.count(j) ? 0 : 1;
      if (rest > 0)
        not_run =
            strprintf("; the build failed, so the other %zu combination(s) were not run", rest);
      unbuilt_run = i;
      return false;
    }
    return true;
  };
  // Many combinations: a first pass with a short timing ranks them (every check as usual), and
  // only the fastest few are timed in full, side by side. Few: each is timed in full at once.
  const bool two_passes = n - skipped.size() > kTemplateFinalists;
  std::vector<size_t> finalists;
  if (two_passes) {
    for (size_t i = 0; i < n; ++i) {
      if (skipped.count(i)) continue;
      if (!run(i, "screen", true)) break;
    }
    if (failure) return std::move(*failure);
    if (unbuildable)
      if (auto r = without_over_limit()) return std::move(*r);
    std::vector<size_t> order;
    for (size_t i = 0; i < n; ++i)
      if (runs[i] && runs[i]->verdict == kCorrect) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return runs[a]->fitness > runs[b]->fitness; });
    if (order.size() > kTemplateFinalists) order.resize(kTemplateFinalists);
    finalists = order;
  } else {
    for (size_t i = 0; i < n; ++i)
      if (!skipped.count(i)) finalists.push_back(i);
  }
  std::vector<size_t> full;  // combinations with a full run, in order
  if (!unbuildable) {
    for (size_t i : finalists) {
      bool ok = run(i, "combo", false);
      if (failure) return std::move(*failure);
      full.push_back(i);
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
  for (size_t i = 0; i < n; ++i) correct += runs[i] && runs[i]->verdict == kCorrect ? 1 : 0;
  for (size_t i : full) correct_full += runs[i]->verdict == kCorrect ? 1 : 0;
  // The fastest of several correct combinations is the luckiest of their noisy measurements (one
  // more ticket per combination timed): the chosen one runs once more in a fresh child, and that
  // run, not the one it was picked by, is the kernel's result.
  std::string confirmation;
  if (correct_full >= 2) {
    extras.args = {"--template-params", results[best]["params"].dump()};
    extras.screened = true;
    extras.short_timing = false;
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
  EvalResult r = std::move(*runs[best]);
  r.build_s = build_s;
  r.test_s = test_s;
  r.screen_s = screen_s;
  r.check_s = check_s;
  r.template_params = results[best]["params"];
  std::string chosen = results[best]["label"].get<std::string>();
  std::string passes =
      two_passes ? strprintf("; the %zu fastest in the first pass timed in full", full.size()) : "";
  if (!skipped.empty())
    passes += strprintf("; %zu skipped before running (over the device's limits)", skipped.size());
  r.reason = strprintf("templated: %zu of %zu combination(s) correct%s; %s %s%s: ", correct, n,
                       passes.c_str(), correct > 0 ? "chosen" : "shown", chosen.c_str(),
                       confirmation.c_str()) +
             r.reason + not_run;
  r.template_results = std::move(results);
  std::string how = two_passes
                        ? strprintf(
                              "one build; each run on its own, first with a short timing, then the "
                              "fastest %zu timed in full, side by side",
                              full.size())
                        : "one build, each run on its own";
  r.eval_log = strprintf("== templated kernel: %zu combination(s) of %s, %s\n", n, k.name.c_str(),
                         how.c_str()) +
               template_results_text(r.template_results) + not_run + "\n\n== the " +
               (correct > 0 ? "chosen" : "shown") + " combination (" + chosen + ")\n" + r.eval_log;
  return r;
}

}  // namespace kf
