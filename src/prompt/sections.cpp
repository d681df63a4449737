// Section values: kernels as fenced code with their results, logs as a prompt shows them, the
// language's names, and the choice of objectives by the parent's verdict.
#include "prompt/sections.h"

#include "eval/verdict.h"
#include "prompt/contract.h"
#include "util/strings.h"

namespace kf {

std::string format_speedup(const std::optional<double>& speedup) {
  return speedup ? strprintf("%.3fx", *speedup) : "not measured";
}

std::string format_codes(const std::vector<std::string>& codes, const PromptInputs& inputs) {
  bool any = false;
  for (const auto& c : codes) any = any || !trim(c).empty();
  if (!any) return "";
  std::vector<const Block*> blocks;
  if (inputs.task) blocks = inputs.task->blocks_of(BlockKind::kEvolve);
  std::string fence(code_fence_tag(inputs.language));
  std::string out;
  for (size_t i = 0; i < codes.size(); ++i) {
    if (codes.size() > 1) {
      out += (i < blocks.size() ? evolve_block_label(*blocks[i], static_cast<int>(i) + 1)
                                : "EVOLVE block " + std::to_string(i + 1)) +
             ":\n";
    }
    std::string code = codes[i];
    if (!code.empty() && code.back() != '\n') code += '\n';
    out += "```" + fence + "\n" + code + "```\n";
  }
  return out;
}

namespace {

std::string language_long(Language language) {
  switch (language) {
    case Language::kCuda:
      return "CUDA C++";
    case Language::kOcl:
      return "OpenCL C";
    case Language::kSycl:
      return "SYCL (C++)";
    case Language::kTriton:
      return "Triton (Python)";
    case Language::kCpp:
      return "host C++";
  }
  return "";
}

}  // namespace

std::string language_suffix(Language language) {
  return to_lower(language_name(language));
}

TemplateValues common_values(const PromptInputs& in) {
  std::vector<std::string> names;
  // "native" means nothing to a model: name what it stands for.
  for (const auto& a : in.archs)
    names.push_back(a.name == "native" && !a.description.empty() ? a.description : a.name);
  std::string iteration;
  if (in.max_iters > 0)
    iteration = strprintf("%d of %d", in.trial, in.max_iters);
  else if (in.trial > 0)
    iteration = std::to_string(in.trial);
  return {{"language", std::string(language_name(in.language))},
          {"language_long", language_long(in.language)},
          {"fence", std::string(code_fence_tag(in.language))},
          {"arch_names", names.empty() ? std::string("the target device") : join(names, ", ")},
          {"iteration", iteration}};
}

TemplateValues kernel_values(const PromptKernel& k, const PromptInputs& in) {
  TemplateValues v = common_values(in);
  v["code"] = format_codes(k.codes, in);
  v["verdict"] = std::to_string(k.verdict);
  v["verdict_name"] = std::string(verdict_name(k.verdict));
  v["reason"] = trim(k.reason);
  v["speedup"] = k.speedup ? format_speedup(k.speedup) : "";
  v["cell"] = k.cell;
  v["model"] = k.model;
  v["templates"] = k.templates;
  return v;
}

KernelLog kernel_log(const PromptKernel& k, size_t max_chars) {
  if (!trim(k.feedback).empty()) return {"", trim_log_for_prompt(trim(k.feedback), max_chars)};
  return {trim_log_for_prompt(trim(k.eval_log), max_chars), ""};
}

Result<std::string> objectives_template(const std::optional<PromptKernel>& parent,
                                        bool parametrize) {
  if (!parent) return std::string("objectives_start");
  if (parametrize && parent->verdict == kCorrect && trim(parent->templates).empty())
    return std::string("objectives_parametrize");
  static const char* kNames[] = {"no_code",        "compile_error", "runtime_error",
                                 "shape_mismatch", "wrong_values",  "correct"};
  if (parent->verdict < kNoCode || parent->verdict > kCorrect)
    return Result<std::string>::error(strprintf(
        "the parent kernel has verdict %d; prompts know verdicts 0 (no code) to 5 (correct)",
        parent->verdict));
  return "objectives_" + std::string(kNames[parent->verdict]);
}

std::string hardware_list(const std::vector<ArchProfile>& archs) {
  std::string out;
  for (const auto& a : archs) out += "- " + describe_arch(a) + "\n";
  return out;
}

std::string_view code_fence_tag(Language language) {
  switch (language) {
    case Language::kCuda:
      return "cuda";
    case Language::kOcl:
      return "opencl";
    case Language::kTriton:
      return "python";
    case Language::kSycl:
    case Language::kCpp:
      return "cpp";
  }
  return "";
}

}  // namespace kf
