// The values each section's template is rendered with, computed from the prompt inputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "prompt/prompt.h"

namespace kf {

// "1.234x", or "not measured".
std::string format_speedup(const std::optional<double>& speedup);
// The kernel's code as fenced blocks, one per EVOLVE block, each labelled when there are several;
// "" when every block is empty.
std::string format_codes(const std::vector<std::string>& codes, const PromptInputs& inputs);
// language, language_long, fence, arch_names, iteration.
TemplateValues common_values(const PromptInputs& inputs);
// The common values plus code, verdict, verdict_name, reason, speedup, cell, model of `kernel`.
TemplateValues kernel_values(const PromptKernel& kernel, const PromptInputs& inputs);
// The log as a prompt shows it: the feedback summary when present, else the trimmed eval log.
struct KernelLog {
  std::string log, feedback;  // exactly one is non-empty (or both empty)
};
KernelLog kernel_log(const PromptKernel& kernel, size_t max_chars);
// The objectives template for the parent's verdict ("objectives_start" when there is no parent);
// an error for a verdict outside 0..5.
// `parametrize`: prompt.parametrize_best; a correct parent that is not templated yet then gets
// objectives_parametrize (make it a templated kernel) instead of objectives_correct.
Result<std::string> objectives_template(const std::optional<PromptKernel>& parent,
                                        bool parametrize = false);
// "cuda", "ocl", ... as in per-language template names.
std::string language_suffix(Language language);
// The bullet list of hardware profiles (describe_arch), one per line.
std::string hardware_list(const std::vector<ArchProfile>& archs);

}  // namespace kf
