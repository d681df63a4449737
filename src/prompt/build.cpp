// Assembling prompts: each section's template rendered in a fixed order, sections whose inputs
// are absent (or that render empty) left out; the feedback LLM's prompt likewise.
#include "eval/verdict.h"
#include "prompt/contract.h"
#include "prompt/prompt.h"
#include "prompt/sections.h"
#include "util/strings.h"

namespace kf {
namespace {

// The feedback LLM exists to read long logs: it sees this many times the prompt's log budget.
constexpr size_t kFeedbackLogFactor = 4;

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
    parts_.push_back(std::move(*text));
    prompt_.sections.push_back(section);
    return Status::ok();
  }

  Status set_system(const std::string& section, const std::string& name,
                    const TemplateValues& values) {
    auto text = render(name, values);
    if (!text) return text.status();
    prompt_.system = std::move(*text);
    if (!prompt_.system.empty()) prompt_.sections.push_back(section);
    return Status::ok();
  }

  Prompt finish() {
    prompt_.user = join(parts_, "\n\n") + "\n";
    return std::move(prompt_);
  }

 private:
  const PromptTemplates& templates_;
  Prompt prompt_;
  std::vector<std::string> parts_;
};

TemplateValues with(TemplateValues values, const TemplateValues& more) {
  for (const auto& [k, v] : more) values[k] = v;
  return values;
}

std::string yes_if(bool condition) {
  return condition ? "yes" : "";
}

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

Status add_history(Assembler& a, const PromptInputs& in) {
  if (!in.inspirations.empty()) {
    auto items = inspiration_items(a, in);
    if (!items) return items.status();
    KF_RETURN_IF_ERROR(
        a.add("inspirations", "inspirations",
              with(common_values(in),
                   {{"items", *items}, {"count", std::to_string(in.inspirations.size())}})));
  }
  bool best_is_parent = in.parent && in.best && in.parent->codes == in.best->codes;
  if (in.best && !best_is_parent)
    KF_RETURN_IF_ERROR(a.add("best", "best", kernel_values(*in.best, in)));
  if (in.parent) {
    KernelLog log = kernel_log(*in.parent, in.max_log_chars);
    KF_RETURN_IF_ERROR(a.add(
        "parent", "parent",
        with(kernel_values(*in.parent, in),
             {{"log", log.log}, {"feedback", log.feedback}, {"is_best", yes_if(best_is_parent)}})));
  }
  return Status::ok();
}

Status add_objectives(Assembler& a, const PromptInputs& in) {
  auto name = objectives_template(in.parent);
  if (!name) return name.status();
  TemplateValues v = common_values(in);
  if (in.parent) {
    v["verdict_name"] = std::string(verdict_name(in.parent->verdict));
    v["reason"] = trim(in.parent->reason);
    v["speedup"] = in.parent->speedup ? format_speedup(in.parent->speedup) : "";
  } else {
    std::vector<std::string> initial;
    for (const Block* b : in.task->blocks_of(BlockKind::kEvolve)) initial.push_back(b->content);
    v["initial_code"] = format_codes(initial, in);
  }
  if (in.best && in.best->speedup) v["best_speedup"] = format_speedup(in.best->speedup);
  return a.add("objectives", *name, v);
}

Status add_guidance(Assembler& a, const PromptInputs& in) {
  std::string suffix = language_suffix(in.language);
  TemplateValues common = common_values(in);
  KF_RETURN_IF_ERROR(a.add("requirements", "requirements_" + suffix, common));
  KF_RETURN_IF_ERROR(a.add("tips", "tips_" + suffix, common));
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

}  // namespace

Result<Prompt> build_prompt(const PromptTemplates& templates, const PromptInputs& in) {
  if (!in.task) return Result<Prompt>::error("build_prompt: no task package given");
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
  std::string reference = in.include_reference ? task.reference() : "";
  if (!trim(reference).empty())
    KF_RETURN_IF_ERROR(a.add("reference", "reference", with(common, {{"reference", reference}})));
  if (!in.archs.empty()) {
    KF_RETURN_IF_ERROR(a.add("hardware", "hardware",
                             with(common, {{"archs", hardware_list(in.archs)},
                                           {"multi_arch", yes_if(in.archs.size() > 1)}})));
  }
  KF_RETURN_IF_ERROR(add_history(a, in));
  KF_RETURN_IF_ERROR(add_objectives(a, in));
  KF_RETURN_IF_ERROR(add_guidance(a, in));
  KF_RETURN_IF_ERROR(add_response_format(a, in));
  return a.finish();
}

Result<Prompt> build_feedback_prompt(const PromptTemplates& templates, const PromptInputs& in,
                                     const PromptKernel& kernel) {
  Assembler a(templates);
  TemplateValues v = kernel_values(kernel, in);
  v["log"] = trim_log_for_prompt(trim(kernel.eval_log), in.max_log_chars * kFeedbackLogFactor);
  v["failed"] = yes_if(kernel.verdict != kCorrect);
  v["correct"] = yes_if(kernel.verdict == kCorrect);
  v["user_instructions"] = in.task ? in.task->user_instructions() : "";
  v["archs"] = hardware_list(in.archs);
  KF_RETURN_IF_ERROR(a.set_system("feedback_system", "feedback_system", common_values(in)));
  KF_RETURN_IF_ERROR(a.add("feedback_user", "feedback_user", v));
  return a.finish();
}

}  // namespace kf
