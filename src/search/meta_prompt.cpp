// Meta-prompt evolution: variant scores, seeded sampling, pruning, and the LLM request's text.
#include "search/meta_prompt.h"

#include <algorithm>
#include <cmath>

#include "eval/verdict.h"
#include "util/strings.h"

namespace kf {

namespace {

double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;  // 53 random bits in [0, 1)
}

std::string score_text(std::optional<double> score, int uses) {
  if (!score) return "no children yet";
  return strprintf("%+.3f over %d child(ren)", *score, uses);
}

}  // namespace

MetaPromptOptions read_meta_prompt_options(const Config& c) {
  MetaPromptOptions o;
  const std::string p = "prompt.meta_prompting.";
  o.enabled = c.get_bool(p + "enabled");
  o.evolution_interval = std::max(1, static_cast<int>(c.get_int(p + "evolution_interval", 2)));
  o.evolution_batch_size = std::max(0, static_cast<int>(c.get_int(p + "evolution_batch_size", 4)));
  o.min_samples_for_evolution =
      std::max(0, static_cast<int>(c.get_int(p + "min_samples_for_evolution", 2)));
  o.exploration_rate = c.get_double(p + "exploration_rate", 0.2);
  o.selection_temperature = c.get_double(p + "selection_temperature", 1.0);
  o.max_prompts = std::max(1, static_cast<int>(c.get_int(p + "max_prompts", 8)));
  o.output_subdir = c.get_string(p + "output_subdir", "prompt_evolution");
  o.max_chars = static_cast<size_t>(c.get_int(p + "max_chars", 6000));
  return o;
}

double outcome_improvement(const VariantOutcome& o) {
  if (o.verdict != kCorrect) return kFailedChildImprovement;
  if (!o.speedup || *o.speedup <= 0) return 0;
  double parent = o.parent_speedup && *o.parent_speedup > 0 ? *o.parent_speedup : 1.0;
  return std::max(kFailedChildImprovement, std::log(*o.speedup / parent));
}

const PromptVariantRecord* MetaPrompts::find(int variant_id) const {
  for (const PromptVariantRecord& v : variants_)
    if (v.variant_id == variant_id) return &v;
  return nullptr;
}

void MetaPrompts::add(PromptVariantRecord variant) {
  for (PromptVariantRecord& v : variants_) {
    if (v.variant_id == variant.variant_id) {
      v = std::move(variant);
      return;
    }
  }
  variants_.push_back(std::move(variant));
  std::sort(variants_.begin(), variants_.end(),
            [](const auto& a, const auto& b) { return a.variant_id < b.variant_id; });
}

int MetaPrompts::next_id() const {
  return variants_.empty() ? 1 : variants_.back().variant_id + 1;
}

void MetaPrompts::record(const VariantOutcome& outcome) {
  outcomes_.push_back(outcome);
  for (PromptVariantRecord& v : variants_) {
    if (v.variant_id != outcome.variant_id) continue;
    v.uses = uses(v.variant_id);
    v.score = score(v.variant_id);
  }
}

std::optional<double> MetaPrompts::score(int variant_id) const {
  double sum = 0;
  int n = 0;
  for (const VariantOutcome& o : outcomes_) {
    if (o.variant_id != variant_id) continue;
    sum += outcome_improvement(o);
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

int MetaPrompts::uses(int variant_id) const {
  return static_cast<int>(std::count_if(outcomes_.begin(), outcomes_.end(),
                                        [&](const auto& o) { return o.variant_id == variant_id; }));
}

int MetaPrompts::sample(std::mt19937_64& rng, int trial) const {
  std::vector<const PromptVariantRecord*> live;
  for (const PromptVariantRecord& v : variants_)
    if (!v.dropped && v.created_trial < trial) live.push_back(&v);
  double explore = uniform01(rng);
  double pick = uniform01(rng);
  if (live.empty()) return 0;
  if (explore < options_.exploration_rate) {
    size_t i = std::min(live.size() - 1, static_cast<size_t>(pick * double(live.size())));
    return live[i]->variant_id;
  }
  std::vector<double> scores;
  for (const PromptVariantRecord* v : live) scores.push_back(score(v->variant_id).value_or(0.0));
  size_t top = size_t(std::max_element(scores.begin(), scores.end()) - scores.begin());
  if (options_.selection_temperature <= 0) return live[top]->variant_id;
  std::vector<double> weights;
  double total = 0;
  for (double s : scores) {
    weights.push_back(std::exp((s - scores[top]) / options_.selection_temperature));
    total += weights.back();
  }
  double target = pick * total;
  for (size_t i = 0; i < live.size(); ++i) {
    if (target < weights[i]) return live[i]->variant_id;
    target -= weights[i];
  }
  return live.back()->variant_id;
}

bool MetaPrompts::due(int trial) const {
  return options_.enabled && trial > 0 && trial % options_.evolution_interval == 0 &&
         static_cast<int>(outcomes_.size()) >= options_.min_samples_for_evolution;
}

std::vector<int> MetaPrompts::prune(int keep) {
  std::vector<int> dropped;
  while (true) {
    int live = 0;
    PromptVariantRecord* worst = nullptr;
    for (PromptVariantRecord& v : variants_) {
      if (v.dropped) continue;
      ++live;
      if (v.variant_id == 1 || v.variant_id == keep) continue;
      // Lower score first; among equals the older (lower id) goes.
      if (!worst || v.score.value_or(0.0) < worst->score.value_or(0.0)) worst = &v;
    }
    if (live <= options_.max_prompts || !worst) return dropped;
    worst->dropped = true;
    dropped.push_back(worst->variant_id);
  }
}

int MetaPrompts::best_id() const {
  int best = 0;
  double best_score = 0;
  for (const PromptVariantRecord& v : variants_) {
    if (v.dropped) continue;
    double s = score(v.variant_id).value_or(0.0);
    if (best == 0 || s > best_score) {
      best = v.variant_id;
      best_score = s;
    }
  }
  return best;
}

std::string MetaPrompts::variants_text() const {
  std::string out;
  for (const PromptVariantRecord& v : variants_) {
    if (v.dropped) continue;
    out += strprintf("### Variant %d (%s%s)\n\n", v.variant_id,
                     v.variant_id == 1 ? "the shipped guidance"
                                       : strprintf("written after iteration %d from variant %d",
                                                   v.created_trial, v.parent_id.value_or(0))
                                             .c_str(),
                     ("; score " + score_text(score(v.variant_id), uses(v.variant_id))).c_str());
    out += "````markdown\n" + trim(v.text) + "\n````\n\n";
  }
  return trim(out);
}

std::string MetaPrompts::outcomes_text() const {
  std::vector<std::string> lines;
  size_t n = static_cast<size_t>(std::max(0, options_.evolution_batch_size));
  size_t first = outcomes_.size() > n ? outcomes_.size() - n : 0;
  for (size_t i = first; i < outcomes_.size(); ++i) {
    const VariantOutcome& o = outcomes_[i];
    std::string what;
    if (o.verdict == kCorrect) {
      what = o.speedup ? strprintf("correct, %.3fx (its parent %.3fx)", *o.speedup,
                                   o.parent_speedup.value_or(1.0))
                       : "correct, speedup not measured";
    } else {
      std::string reason = trim(o.reason);
      if (size_t nl = reason.find('\n'); nl != std::string::npos) reason = reason.substr(0, nl);
      if (reason.size() > 200) reason = reason.substr(0, 200) + "...";
      what = std::string(verdict_name(o.verdict)) + (reason.empty() ? "" : ": " + reason);
    }
    lines.push_back(strprintf("- iteration %d, branch %d, variant %d: %s (improvement %+.3f)",
                              o.trial, o.branch, o.variant_id, what.c_str(),
                              outcome_improvement(o)));
  }
  return join(lines, "\n");
}

std::string extract_guidance(const std::string& answer, size_t max_chars) {
  std::string text = answer;
  // The first fenced block: a line opening with ``` (or more backticks) up to the same fence.
  size_t open = text.find("```");
  if (open != std::string::npos && (open == 0 || text[open - 1] == '\n')) {
    size_t ticks = open;
    while (ticks < text.size() && text[ticks] == '`') ++ticks;
    std::string fence = text.substr(open, ticks - open);
    size_t body = text.find('\n', ticks);
    if (body != std::string::npos) {
      size_t close = text.find("\n" + fence, body);
      text =
          close == std::string::npos ? text.substr(body + 1) : text.substr(body + 1, close - body);
    }
  }
  text = trim(text);
  if (text.size() > max_chars) {
    size_t cut = text.rfind('\n', max_chars);
    text = trim(text.substr(0, cut == std::string::npos || cut == 0 ? max_chars : cut));
  }
  return text;
}

}  // namespace kf
