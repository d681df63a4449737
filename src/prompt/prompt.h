// The prompt subsystem's front header: what goes into a prompt (task, parent, best, inspirations,
// hardware) and how the template files under configs/prompts turn it into system + user text.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch.h"
#include "lang/lang.h"
#include "prompt/template.h"
#include "task/task.h"
#include "util/status.h"

namespace kf {

// One evaluated kernel as a prompt shows it.
struct PromptKernel {
  std::vector<std::string> codes;  // one per EVOLVE block
  int verdict = 0;
  std::string reason;
  std::optional<double> speedup;
  std::string eval_log;  // raw eval log
  std::string feedback;  // the feedback LLM's summary; replaces eval_log when set
  std::string cell;      // archive cell, e.g. "m1-c0-p2"
  std::string model;
  // A templated kernel: one line per combination with its verdict and speedup, the chosen one
  // marked (eval/templated.h: template_results_text); "" for other kernels.
  std::string templates;
};

// An earlier attempt from the current kernel or its lineage that failed or was not faster than
// the kernel it started from: shown so that the model does not make its mistake again.
struct PromptAttempt {
  PromptKernel kernel;                    // its result, eval log or feedback summary, and code
  std::vector<std::string> parent_codes;  // the code it started from (its diff is shown)
  std::string summary;                    // the model's own one-line summary ("" = none)
  int trial = 0;                          // the iteration that made it
  bool from_parent = true;                // started from the current kernel, not an ancestor
  std::optional<double> parent_speedup;   // of the kernel it started from
};

struct PromptInputs {
  const TaskPackage* task = nullptr;
  Language language = Language::kCpp;
  std::vector<ArchProfile> archs;
  std::optional<PromptKernel> parent, best;
  std::vector<PromptKernel> inspirations;
  // Earlier failed or non-improving attempts, closest and most recent first, shown within
  // max_attempts_chars (prompt.max_attempts_chars); see docs/prompts.md ("Earlier attempts").
  std::vector<PromptAttempt> attempts;
  size_t max_attempts_chars = 8000;
  bool include_reference = true, allow_templated = false;
  bool parametrize_best = false;  // prompt.parametrize_best (with allow_templated)
  size_t max_log_chars = 6000;
  // prompt.max_chars: the most characters (bytes) of system + user prompt; see docs/prompts.md
  // ("Prompt size") for what is cut, in which order, when a prompt would be longer.
  size_t max_chars = 200000;
  int trial = 0, max_iters = 0;
  // Meta-prompt evolution (search/meta_prompt.h): the optimisation guidance this prompt shows in
  // place of the rendered tips_<lang>.md; unset = the template's text.
  std::optional<std::string> guidance;
};

struct Prompt {
  std::string system, user;
  std::vector<std::string> sections;  // names of the sections included, in order
  // The leading characters of `user` that stay the same on every call of a job (the sections
  // before the first one drawn from the search's state): with the system prompt, the prefix a
  // provider's prompt cache can reuse. 0 = none.
  size_t static_user_chars = 0;
};

// Every template file, parsed and checked. Templates are addressed by name: the file name without
// its ".md" extension ("role", "tips_cuda").
class PromptTemplates {
 public:
  // Loads every template: the shipped folder (configs/prompts), then files of `override_dir`
  // ("" = none) replacing those of the same name. Unknown placeholders, unknown file names in
  // `override_dir` or a missing shipped file are errors naming the file (and line) and the valid
  // names.
  static Result<PromptTemplates> load(const std::filesystem::path& shipped_dir,
                                      const std::filesystem::path& override_dir = {});

  const std::string* find(const std::string& name) const;  // the file's text; nullptr if unknown
  const Template* parsed(const std::string& name) const;   // nullptr if unknown
  // Where a template came from (the shipped or the override file), for messages.
  std::filesystem::path source(const std::string& name) const;

 private:
  struct Entry {
    std::string text;
    Template parsed;
    std::filesystem::path source;
  };
  std::map<std::string, Entry> entries_;
};

// default_config_dir() / "prompts".
std::filesystem::path shipped_prompt_dir();

// The generation prompt: system = the role, user = the sections whose inputs are present, held
// to inputs.max_chars (parts cut in the documented order, the cut noted in the prompt); an error
// naming prompt.max_chars when the parts that are never cut are longer than that alone.
Result<Prompt> build_prompt(const PromptTemplates& templates, const PromptInputs& inputs);
// The feedback LLM's prompt: condense `kernel`'s eval log (failures: the offending lines and the
// fix; correct kernels: the bottlenecks), held to inputs.max_chars like build_prompt.
Result<Prompt> build_feedback_prompt(const PromptTemplates& templates, const PromptInputs& inputs,
                                     const PromptKernel& kernel);

// The shipped optimisation guidance: tips_<lang>.md rendered for `inputs` (meta-prompt
// evolution's first variant).
Result<std::string> render_guidance(const PromptTemplates& templates, const PromptInputs& inputs);

// What the meta-prompt LLM sees (meta_system.md, meta_user.md): the current guidance variants
// with their scores, example outcomes, and the length bound of a new variant; both already
// formatted as text by the caller.
struct MetaPromptRequest {
  std::string variants;  // one block per variant: id, score, uses, text
  std::string outcomes;  // one line per example outcome
  size_t max_chars = 0;  // most characters of the new guidance
};
Result<Prompt> build_meta_prompt(const PromptTemplates& templates, const PromptInputs& inputs,
                                 const MetaPromptRequest& request);

// The first line of a failed kernel's evaluation that says what went wrong: the first compiler
// or runtime error line of its log, else its reason; cut to 300 characters. "" when correct.
std::string first_error_line(int verdict, const std::string& reason, const std::string& eval_log);
// `line` with numbers, paths and spacing normalised: two failures with the same key are "the
// same mistake" (the same error at another line or shape).
std::string mistake_key(const std::string& line);

// The log as it goes into a prompt: at most max_chars, error/warning lines kept first, a
// "[... N lines omitted ...]" note where cut.
std::string trim_log_for_prompt(const std::string& log, size_t max_chars);

// The info string of the fenced code blocks prompts show and answers must use: "cuda", "opencl",
// "cpp" (CPP and SYCL), "python" (triton).
std::string_view code_fence_tag(Language language);

}  // namespace kf
