// Assembling prompts: each section's template rendered in a fixed order, sections whose inputs
// are absent (or that render empty) left out; the feedback LLM's prompt likewise. Both are held
// to prompt.max_chars: every code part is first cut to a share of it, then, while the prompt is
// too long, parts are shortened in the fixed order of docs/prompts.md and the cut is noted.
#include <algorithm>
#include <functional>

#include "eval/verdict.h"
#include "prompt/attempts.h"
#include "prompt/contract.h"
#include "prompt/fit.h"
#include "prompt/prompt.h"
#include "prompt/sections.h"
#include "util/strings.h"

namespace kf {
namespace {

// The feedback LLM exists to read long logs: it sees this many times the prompt's log budget.
constexpr size_t kFeedbackLogFactor = 4;
// Every code part, the reference and a log are first cut to max_chars / kPartShare, so that one
// huge part (a 3 MB parent) cannot push every other part out of the prompt.
constexpr size_t kPartShare = 4;
// A part that would keep fewer characters than this is left out instead of cut.
constexpr size_t kMinKept = 500;
// A kernel's one-line evaluation reason, should it be long, is cut to this.
constexpr size_t kMaxReasonChars = 2000;

// A rendered prompt and the size of each of its sections, for the message when it cannot fit.
struct Rendered {
  Prompt prompt;
  std::vector<std::pair<std::string, size_t>> sizes;
  size_t size() const { return prompt.system.size() + prompt.user.size(); }
};

class Assembler {
 public:
  explicit Assembler(const PromptTemplates& templates) : templates_(templates) {}

  Result<std::string> render(const std::string& name, const TemplateValues& values) const {
    const Template* t = templates_.parsed(name);
    if (!t)
      return Result<std::string>::error("no prompt template '" + name +
                                        ".md' was loaded; load the templates with "
                                        "PromptTemplates::load(shipped_prompt_dir(), ...)");
    return trim(t->render(values));
  }

  // Renders `name` into the user prompt as section `section`, unless it renders empty.
  Status add(const std::string& section, const std::string& name, const TemplateValues& values) {
    auto text = render(name, values);
    if (!text) return text.status();
    if (text->empty()) return Status::ok();
    sizes_.push_back({section, text->size()});
    parts_.push_back(std::move(*text));
    prompt_.sections.push_back(section);
    return Status::ok();
  }

  // Puts `text` into the user prompt as section `section` as it is, unless it is empty.
  void add_text(const std::string& section, std::string text) {
    if (text.empty()) return;
    sizes_.push_back({section, text.size()});
    parts_.push_back(std::move(text));
    prompt_.sections.push_back(section);
  }

  Status set_system(const std::string& section, const std::string& name,
                    const TemplateValues& values) {
    auto text = render(name, values);
    if (!text) return text.status();
    prompt_.system = std::move(*text);
    if (!prompt_.system.empty()) {
      prompt_.sections.push_back(section);
      sizes_.push_back({section, prompt_.system.size()});
    }
    return Status::ok();
  }

  // The sections added so far are the static prefix (the same on every call of a job).
  void end_static_prefix() { static_parts_ = parts_.size(); }

  Rendered finish() {
    prompt_.user = join(parts_, "\n\n") + "\n";
    if (static_parts_ > 0) {
      // Up to and including the separator after the last static section.
      std::vector<std::string> head(parts_.begin(), parts_.begin() + static_parts_);
      prompt_.static_user_chars = std::min(prompt_.user.size(), join(head, "\n\n").size() + 2);
    }
    return {std::move(prompt_), std::move(sizes_)};
  }

 private:
  const PromptTemplates& templates_;
  Prompt prompt_;
  std::vector<std::string> parts_;
  std::vector<std::pair<std::string, size_t>> sizes_;
  size_t static_parts_ = 0;
};

TemplateValues with(TemplateValues values, const TemplateValues& more) {
  for (const auto& [k, v] : more) values[k] = v;
  return values;
}

std::string yes_if(bool condition) {
  return condition ? "yes" : "";
}

// What the trim shortened, in the order first shortened: the lines of trimmed.md's list.
class TrimNotes {
 public:
  void set(const std::string& key, std::string line) {
    for (auto& [k, l] : lines_)
      if (k == key) {
        l = std::move(line);
        return;
      }
    lines_.push_back({key, std::move(line)});
  }
  void erase(const std::string& key) {
    lines_.erase(std::remove_if(lines_.begin(), lines_.end(),
                                [&](const auto& kl) { return kl.first == key; }),
                 lines_.end());
  }
  void cut(const std::string& key, const std::string& label, size_t before, size_t after) {
    set(key, strprintf("%s: cut in the middle from %zu to %zu characters", label.c_str(), before,
                       after));
  }
  void left_out(const std::string& key, const std::string& label) {
    set(key, label + ": left out");
  }
  bool empty() const { return lines_.empty(); }
  bool code_cut() const {
    for (const auto& [k, line] : lines_)
      if (line.find(": cut in the middle") != std::string::npos) return true;
    return false;
  }
  std::string items() const {
    std::string out;
    for (const auto& [k, line] : lines_) out += "- " + line + "\n";
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> lines_;
};

Status add_trim_note(Assembler& a, const PromptInputs& in, const TrimNotes& notes) {
  if (notes.empty()) return Status::ok();
  return a.add("trimmed", "trimmed",
               with(common_values(in), {{"max_chars", std::to_string(in.max_chars)},
                                        {"items", notes.items()},
                                        {"code_cut", yes_if(notes.code_cut())}}));
}

// One trimming step: shortens its part by about `excess` characters or leaves it out; false
// when the part is already gone or at its minimum, so the next step's part is next.
using TrimStep = std::function<bool(size_t excess)>;

// Renders, then runs the steps in order while the result is longer than `max_chars`; an error
// naming prompt.max_chars and the largest sections when even every step's minimum is too long.
Result<Prompt> fit(size_t max_chars, const std::function<Result<Rendered>()>& render,
                   const std::vector<TrimStep>& steps, const std::string& fixed_parts_fix) {
  auto r = render();
  if (!r) return r.status();
  for (const TrimStep& step : steps) {
    while (r->size() > max_chars && step(r->size() - max_chars)) {
      r = render();
      if (!r) return r.status();
    }
  }
  if (r->size() <= max_chars) return std::move(r->prompt);
  std::vector<std::pair<std::string, size_t>> sizes = r->sizes;
  std::stable_sort(sizes.begin(), sizes.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  std::vector<std::string> largest;
  for (size_t i = 0; i < sizes.size() && i < 3; ++i)
    largest.push_back(strprintf("%s %zu", sizes[i].first.c_str(), sizes[i].second));
  return Result<Prompt>::error(strprintf(
      "the prompt is %zu characters even with every part that may be shortened cut to its "
      "minimum, more than prompt.max_chars = %zu (largest sections, in characters: %s); raise "
      "prompt.max_chars above %zu, or %s",
      r->size(), max_chars, join(largest, ", ").c_str(), r->size(), fixed_parts_fix.c_str()));
}

// Cuts `shown` (drawn from `original`) to about `excess` characters less; left out (`*shown`
// cleared) when fewer than kMinKept would remain. False when nothing is left to cut.
bool shorten_codes(std::vector<std::string>* shown, const std::vector<std::string>& original,
                   size_t excess, std::string_view comment, bool may_drop, TrimNotes& notes,
                   const std::string& key, const std::string& label) {
  size_t size = total_size(*shown);
  if (size == 0) return false;
  size_t target = size > excess ? size - excess : 0;
  if (may_drop && target < kMinKept) {
    shown->clear();
    notes.left_out(key, label);
    return true;
  }
  std::vector<std::string> cut = cut_codes(original, target, comment);
  if (total_size(cut) >= size) return false;
  *shown = std::move(cut);
  notes.cut(key, label, total_size(original), total_size(*shown));
  return true;
}

// Cuts `codes` to the per-part cap, noting it.
void cap_codes(std::vector<std::string>* codes, size_t cap, std::string_view comment,
               TrimNotes& notes, const std::string& key, const std::string& label) {
  size_t before = total_size(*codes);
  if (before <= cap) return;
  *codes = cut_codes(*codes, cap, comment);
  notes.cut(key, label, before, total_size(*codes));
}

void cap_reason(PromptKernel* k) {
  k->reason = cut_middle(k->reason, kMaxReasonChars, "");
}

// A log's budget shortened by about `excess` characters, given what it renders to now; 0 (left
// out) when fewer than kMinKept would remain.
size_t shorter_log_budget(size_t rendered, size_t excess) {
  size_t target = rendered > excess ? rendered - excess : 0;
  return target < kMinKept ? 0 : target;
}

// ---- The generation prompt -------------------------------------------------------------------

// What a generation prompt shows of its inputs; the trim shortens these and renders anew, always
// cutting from the original text so every marker counts what is really missing.
struct Shown {
  PromptInputs in;  // parent, best and inspirations as shown (codes possibly cut)
  std::string reference;
  std::vector<std::string> initial_codes;  // objectives_start's code: the task's EVOLVE blocks
  size_t log_chars = 0;                    // the parent's log or summary budget; 0 = left out
  std::vector<std::string> attempt_diffs;  // attempt_diff() of each earlier attempt
  size_t attempts_shown = 0;               // the first this many attempts are shown
  size_t attempts_budget = 0;              // characters of the attempts section
  bool best_is_parent = false, show_best = false;
  TrimNotes notes;
};

Result<std::string> inspiration_items(const Assembler& a, const PromptInputs& in) {
  std::vector<std::string> items;
  for (size_t i = 0; i < in.inspirations.size(); ++i) {
    auto item = a.render("inspiration", with(kernel_values(in.inspirations[i], in),
                                             {{"number", std::to_string(i + 1)}}));
    if (!item) return item;
    if (!item->empty()) items.push_back(std::move(*item));
  }
  return join(items, "\n\n");
}

KernelLog parent_log(const Shown& s) {
  if (!s.in.parent || s.log_chars == 0) return {};
  return kernel_log(*s.in.parent, s.log_chars);
}

// The earlier attempts, as many as fit the section's budget (each then gets a larger share).
Status add_attempts(Assembler& a, const Shown& s) {
  const PromptInputs& in = s.in;
  for (size_t n = s.attempts_shown; n > 0; --n) {
    AttemptsView view = attempts_view(in, s.attempt_diffs, n, s.attempts_budget);
    std::vector<std::string> items;
    for (const TemplateValues& v : view.items) {
      auto item = a.render("attempt", v);
      if (!item) return item.status();
      if (!item->empty()) items.push_back(std::move(*item));
    }
    TemplateValues values = with(
        common_values(in),
        {{"items", join(items, "\n\n")},
         {"count", std::to_string(n)},
         {"total", n < in.attempts.size() ? std::to_string(in.attempts.size()) : std::string()},
         {"repeats", view.repeats}});
    auto text = a.render("attempts", values);
    if (!text) return text.status();
    if (text->size() <= s.attempts_budget || n == 1) return a.add("attempts", "attempts", values);
  }
  return Status::ok();
}

Status add_history(Assembler& a, const Shown& s) {
  const PromptInputs& in = s.in;
  if (!in.inspirations.empty()) {
    auto items = inspiration_items(a, in);
    if (!items) return items.status();
    KF_RETURN_IF_ERROR(
        a.add("inspirations", "inspirations",
              with(common_values(in),
                   {{"items", *items}, {"count", std::to_string(in.inspirations.size())}})));
  }
  if (in.best && s.show_best && !s.best_is_parent)
    KF_RETURN_IF_ERROR(a.add("best", "best", kernel_values(*in.best, in)));
  if (in.parent) {
    KernelLog log = parent_log(s);
    KF_RETURN_IF_ERROR(
        a.add("parent", "parent",
              with(kernel_values(*in.parent, in), {{"log", log.log},
                                                   {"feedback", log.feedback},
                                                   {"is_best", yes_if(s.best_is_parent)}})));
  }
  return add_attempts(a, s);
}

Status add_objectives(Assembler& a, const Shown& s) {
  const PromptInputs& in = s.in;
  auto name = objectives_template(in.parent, in.allow_templated && in.parametrize_best);
  if (!name) return name.status();
  TemplateValues v = common_values(in);
  if (in.parent) {
    v["verdict_name"] = std::string(verdict_name(in.parent->verdict));
    v["reason"] = trim(in.parent->reason);
    v["speedup"] = in.parent->speedup ? format_speedup(in.parent->speedup) : "";
  } else {
    v["initial_code"] = format_codes(s.initial_codes, in);
  }
  if (in.best && in.best->speedup) v["best_speedup"] = format_speedup(in.best->speedup);
  return a.add("objectives", *name, v);
}

Status add_guidance(Assembler& a, const PromptInputs& in) {
  std::string suffix = language_suffix(in.language);
  TemplateValues common = common_values(in);
  KF_RETURN_IF_ERROR(a.add("requirements", "requirements_" + suffix, common));
  if (in.guidance) {
    a.add_text("tips", trim(*in.guidance));
  } else {
    KF_RETURN_IF_ERROR(a.add("tips", "tips_" + suffix, common));
  }
  KF_RETURN_IF_ERROR(a.add("pitfalls", "pitfalls_" + suffix, common));
  if (!in.allow_templated) return Status::ok();
  if (in.language != Language::kCuda && in.language != Language::kSycl &&
      in.language != Language::kCpp)
    return Status::error("AssertionError: Must provide example if allow_templated=True: " +
                         std::string(language_name(in.language)) +
                         " has no templated-kernel example; set prompt.allow_templated=false "
                         "(templated kernels are available for CUDA, SYCL and CPP)");
  auto example = a.render("templated_" + suffix, common);
  if (!example) return example.status();
  return a.add("templated", "templated", with(common, {{"example", *example}}));
}

Status add_response_format(Assembler& a, const PromptInputs& in) {
  std::vector<const Block*> blocks = in.task->blocks_of(BlockKind::kEvolve);
  std::string list;
  for (size_t i = 0; i < blocks.size(); ++i)
    list += std::to_string(i + 1) + ". " + evolve_block_label(*blocks[i], static_cast<int>(i) + 1) +
            "\n";
  return a.add("response_format", "response_format",
               with(common_values(in), {{"block_count", std::to_string(blocks.size())},
                                        {"blocks", list},
                                        {"multi_block", yes_if(blocks.size() > 1)}}));
}

Result<Rendered> render_generation(const PromptTemplates& templates, const Shown& s) {
  const PromptInputs& in = s.in;
  const TaskPackage& task = *in.task;
  Assembler a(templates);
  TemplateValues common = common_values(in);
  KF_RETURN_IF_ERROR(a.set_system("role", "role", common));

  std::vector<const Block*> evolve = task.blocks_of(BlockKind::kEvolve);
  if (!evolve.empty()) {
    KF_RETURN_IF_ERROR(a.add("contract", "contract",
                             with(common, {{"files", evolve_file_views(task, in.include_reference)},
                                           {"block_count", std::to_string(evolve.size())},
                                           {"multi_block", yes_if(evolve.size() > 1)}})));
  }
  std::string instructions = task.user_instructions();
  if (!trim(instructions).empty()) {
    KF_RETURN_IF_ERROR(a.add("user_instructions", "user_instructions",
                             with(common, {{"user_instructions", instructions}})));
  }
  if (!trim(s.reference).empty())
    KF_RETURN_IF_ERROR(a.add("reference", "reference", with(common, {{"reference", s.reference}})));
  if (!in.archs.empty()) {
    KF_RETURN_IF_ERROR(a.add("hardware", "hardware",
                             with(common, {{"archs", hardware_list(in.archs)},
                                           {"multi_arch", yes_if(in.archs.size() > 1)}})));
  }
  // The language's guidance is the same on every call: it ends the static prefix that a
  // provider's prompt cache reuses; what follows changes with the search's state.
  KF_RETURN_IF_ERROR(add_guidance(a, in));
  a.end_static_prefix();
  KF_RETURN_IF_ERROR(add_history(a, s));
  KF_RETURN_IF_ERROR(add_trim_note(a, in, s.notes));
  KF_RETURN_IF_ERROR(add_objectives(a, s));
  KF_RETURN_IF_ERROR(add_response_format(a, in));
  return a.finish();
}

// The shown parts with every part cut to its share of max_chars.
Shown capped_parts(const PromptInputs& in) {
  Shown s;
  s.in = in;
  s.best_is_parent = in.parent && in.best && in.parent->codes == in.best->codes;
  s.show_best = in.best.has_value();
  s.reference = in.include_reference ? in.task->reference() : "";
  for (const Block* b : in.task->blocks_of(BlockKind::kEvolve))
    s.initial_codes.push_back(b->content);

  const size_t cap = in.max_chars / kPartShare;
  const std::string_view comment = code_comment(in.language);
  s.log_chars = std::min(in.max_log_chars, cap);
  if (s.in.parent) {
    cap_reason(&*s.in.parent);
    cap_codes(&s.in.parent->codes, cap, comment, s.notes, "parent", "the current kernel's code");
    KernelLog full =
        s.log_chars < in.max_log_chars ? kernel_log(*in.parent, in.max_log_chars) : KernelLog{};
    KernelLog capped = s.log_chars < in.max_log_chars ? parent_log(s) : KernelLog{};
    if (capped.log.size() + capped.feedback.size() < full.log.size() + full.feedback.size())
      s.notes.set("log", strprintf("the current kernel's evaluation %s: cut to %zu characters",
                                   capped.feedback.empty() ? "log" : "summary", s.log_chars));
  }
  if (s.in.best) {
    cap_reason(&*s.in.best);
    cap_codes(&s.in.best->codes, cap, comment, s.notes, "best", "the best kernel's code");
  }
  for (size_t i = 0; i < s.in.inspirations.size(); ++i) {
    cap_reason(&s.in.inspirations[i]);
    cap_codes(&s.in.inspirations[i].codes, cap, comment, s.notes,
              "inspiration " + std::to_string(i + 1),
              "inspiration " + std::to_string(i + 1) + "'s code");
  }
  if (s.reference.size() > cap) {
    size_t before = s.reference.size();
    s.reference = cut_middle(s.reference, cap, comment);
    s.notes.cut("reference", "the reference implementation", before, s.reference.size());
  }
  if (!in.parent)
    cap_codes(&s.initial_codes, cap, comment, s.notes, "initial", "the task's initial code");
  s.attempts_budget = std::min(in.max_attempts_chars, cap);
  s.attempts_shown = s.attempts_budget > 0 ? in.attempts.size() : 0;
  for (const PromptAttempt& attempt : in.attempts) s.attempt_diffs.push_back(attempt_diff(attempt));
  return s;
}

}  // namespace

Result<Prompt> build_prompt(const PromptTemplates& templates, const PromptInputs& in) {
  if (!in.task) return Result<Prompt>::error("build_prompt: no task package given");
  Shown s = capped_parts(in);
  const std::string_view comment = code_comment(in.language);
  const size_t inspirations = in.inspirations.size();
  std::vector<std::string> initial_codes;
  for (const Block* b : in.task->blocks_of(BlockKind::kEvolve)) initial_codes.push_back(b->content);
  const std::string full_reference = in.include_reference ? in.task->reference() : "";

  // The order of docs/prompts.md ("Prompt size"): least useful to the next answer first.
  std::vector<TrimStep> steps = {
      // 1. Inspirations, whole, the last first.
      [&](size_t) {
        if (s.in.inspirations.empty()) return false;
        s.in.inspirations.pop_back();
        s.notes.erase("inspiration " + std::to_string(s.in.inspirations.size() + 1));
        s.notes.set("inspirations",
                    strprintf("inspirations: %zu of %zu left out",
                              inspirations - s.in.inspirations.size(), inspirations));
        return true;
      },
      // 2. The best kernel so far: its code cut, or the whole section left out.
      [&](size_t excess) {
        if (!s.show_best || s.best_is_parent) return false;
        if (!shorten_codes(&s.in.best->codes, in.best->codes, excess, comment, true, s.notes,
                           "best", "the best kernel's code"))
          return false;
        if (s.in.best->codes.empty()) {
          s.show_best = false;
          s.notes.left_out("best", "the best kernel so far");
        }
        return true;
      },
      // 3. The earlier attempts, whole, the last (least close, oldest) first.
      [&](size_t) {
        if (s.attempts_shown == 0) return false;
        --s.attempts_shown;
        s.notes.set("attempts",
                    strprintf("earlier attempts: %zu of %zu left out",
                              in.attempts.size() - s.attempts_shown, in.attempts.size()));
        return true;
      },
      // 4. The parent's evaluation log (or the feedback model's summary of it).
      [&](size_t excess) {
        KernelLog now = parent_log(s);
        size_t rendered = now.log.size() + now.feedback.size();
        if (rendered == 0) return false;
        s.log_chars = shorter_log_budget(rendered, excess);
        std::string what = now.feedback.empty() ? "log" : "summary";
        if (s.log_chars == 0)
          s.notes.left_out("log", "the current kernel's evaluation " + what);
        else
          s.notes.set("log", strprintf("the current kernel's evaluation %s: cut to %zu characters",
                                       what.c_str(), s.log_chars));
        return true;
      },
      // 5. The reference implementation.
      [&](size_t excess) {
        std::vector<std::string> shown = {s.reference};
        if (!shorten_codes(&shown, {full_reference}, excess, comment, true, s.notes, "reference",
                           "the reference implementation"))
          return false;
        s.reference = shown.empty() ? "" : shown[0];
        return true;
      },
      // 6. The code the answer starts from: the parent's, or the task's initial code; cut, never
      // left out.
      [&](size_t excess) {
        if (s.in.parent)
          return shorten_codes(&s.in.parent->codes, in.parent->codes, excess, comment, false,
                               s.notes, "parent", "the current kernel's code");
        return shorten_codes(&s.initial_codes, initial_codes, excess, comment, false, s.notes,
                             "initial", "the task's initial code");
      },
  };
  return fit(
      in.max_chars, [&] { return render_generation(templates, s); }, steps,
      "shorten what every prompt shows whole: the task's code around its EVOLVE blocks (the "
      "contract) and its USER_INSTRUCTIONS block");
}

Result<Prompt> build_feedback_prompt(const PromptTemplates& templates, const PromptInputs& in,
                                     const PromptKernel& kernel) {
  const size_t cap = in.max_chars / kPartShare;
  const std::string_view comment = code_comment(in.language);
  PromptKernel shown = kernel;
  TrimNotes notes;
  cap_reason(&shown);
  cap_codes(&shown.codes, cap, comment, notes, "code", "the kernel's code");
  const std::string log = trim(kernel.eval_log);
  size_t log_chars = std::min(in.max_log_chars * kFeedbackLogFactor, cap);
  if (trim_log_for_prompt(log, log_chars).size() <
      trim_log_for_prompt(log, in.max_log_chars * kFeedbackLogFactor).size())
    notes.set("log", strprintf("the evaluation log: cut to %zu characters", log_chars));

  auto render = [&]() -> Result<Rendered> {
    Assembler a(templates);
    TemplateValues v = kernel_values(shown, in);
    v["log"] = log_chars == 0 ? "" : trim_log_for_prompt(log, log_chars);
    v["failed"] = yes_if(kernel.verdict != kCorrect);
    v["correct"] = yes_if(kernel.verdict == kCorrect);
    v["user_instructions"] = in.task ? in.task->user_instructions() : "";
    v["archs"] = hardware_list(in.archs);
    KF_RETURN_IF_ERROR(a.set_system("feedback_system", "feedback_system", common_values(in)));
    KF_RETURN_IF_ERROR(a.add("feedback_user", "feedback_user", v));
    KF_RETURN_IF_ERROR(add_trim_note(a, in, notes));
    return a.finish();
  };
  // The log is this prompt's subject, yet a cut log still shows its error lines; the code goes
  // second.
  std::vector<TrimStep> steps = {
      [&](size_t excess) {
        size_t rendered = log_chars == 0 ? 0 : trim_log_for_prompt(log, log_chars).size();
        if (rendered == 0) return false;
        log_chars = shorter_log_budget(rendered, excess);
        if (log_chars == 0)
          notes.left_out("log", "the evaluation log");
        else
          notes.set("log", strprintf("the evaluation log: cut to %zu characters", log_chars));
        return true;
      },
      [&](size_t excess) {
        return shorten_codes(&shown.codes, kernel.codes, excess, comment, false, notes, "code",
                             "the kernel's code");
      },
  };
  return fit(in.max_chars, render, steps,
             "shorten the task's USER_INSTRUCTIONS block, which this prompt shows whole");
}

Result<std::string> render_guidance(const PromptTemplates& templates, const PromptInputs& in) {
  Assembler a(templates);
  return a.render("tips_" + std::string(language_suffix(in.language)), common_values(in));
}

Result<Prompt> build_meta_prompt(const PromptTemplates& templates, const PromptInputs& in,
                                 const MetaPromptRequest& request) {
  // The variants are cut to the caller's bounds already; no part is cut here.
  auto render = [&]() -> Result<Rendered> {
    Assembler a(templates);
    KF_RETURN_IF_ERROR(a.set_system("meta_system", "meta_system", common_values(in)));
    KF_RETURN_IF_ERROR(
        a.add("meta_user", "meta_user",
              with(common_values(in), {{"variants", request.variants},
                                       {"outcomes", request.outcomes},
                                       {"max_chars", std::to_string(request.max_chars)}})));
    return a.finish();
  };
  return fit(in.max_chars, render, {},
             "lower prompt.meta_prompting.max_prompts or evolution_batch_size");
}

}  // namespace kf
