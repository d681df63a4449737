// The template table: one row per file under configs/prompts, with its placeholders and the
// condition that puts its section into a prompt.
#include "prompt/catalog.h"

#include <algorithm>

namespace kf {

const std::vector<std::string>& common_placeholders() {
  static const std::vector<std::string> kCommon = {"language", "language_long", "fence",
                                                   "arch_names", "iteration"};
  return kCommon;
}

const std::vector<std::string>& language_suffixes() {
  static const std::vector<std::string> kSuffixes = {"cuda", "ocl", "sycl", "triton", "cpp"};
  return kSuffixes;
}

namespace {

// The result fields every shown kernel has.
const std::vector<std::string> kKernel = {"code",    "verdict", "verdict_name", "reason",
                                          "speedup", "cell",    "model",        "templates"};

std::vector<std::string> with_kernel(std::vector<std::string> extra) {
  extra.insert(extra.end(), kKernel.begin(), kKernel.end());
  return extra;
}

std::vector<TemplateSpec> make_specs() {
  std::vector<TemplateSpec> specs = {
      {"role", {}, "always: the system prompt"},
      {"contract",
       {"files", "block_count", "multi_block"},
       "the task has at least one EVOLVE block"},
      {"user_instructions", {"user_instructions"}, "the task has a USER_INSTRUCTIONS block"},
      {"reference", {"reference"}, "prompt.include_reference and the task has a REFERENCE block"},
      {"hardware", {"archs", "multi_arch"}, "at least one gpu_arch profile is known"},
      {"inspirations", {"items", "count"}, "the search passed inspiration kernels"},
      {"inspiration", with_kernel({"number"}), "once per inspiration, inside {{items}}"},
      {"best", with_kernel({}), "a best kernel exists and differs from the parent"},
      {"parent", with_kernel({"log", "feedback", "is_best"}), "the prompt has a parent kernel"},
      {"attempts",
       {"items", "count", "total", "repeats"},
       "the search passed earlier attempts that failed or did not improve (prompt.max_attempts)"},
      {"attempt",
       {"number", "trial", "verdict", "verdict_name", "reason", "speedup", "parent_speedup",
        "not_faster", "model", "summary", "from_parent", "repeated", "diff", "log", "feedback",
        "templates"},
       "once per earlier attempt, inside {{items}}"},
      {"trimmed",
       {"max_chars", "items", "code_cut"},
       "the prompt was shortened to fit prompt.max_chars"},
      {"objectives_start", {"initial_code"}, "no parent yet (the first iteration)"},
      {"objectives_parametrize",
       {"verdict_name", "reason", "speedup", "best_speedup"},
       "prompt.parametrize_best and the parent is correct and not templated yet"},
  };
  const char* kVerdicts[] = {"no_code",        "compile_error", "runtime_error",
                             "shape_mismatch", "wrong_values",  "correct"};
  for (int v = 0; v < 6; ++v) {
    specs.push_back({std::string("objectives_") + kVerdicts[v],
                     {"verdict_name", "reason", "speedup", "best_speedup"},
                     "the parent's verdict is " + std::to_string(v)});
  }
  for (const char* kind : {"requirements", "tips", "pitfalls"}) {
    for (const auto& lang : language_suffixes())
      specs.push_back({std::string(kind) + "_" + lang, {}, "the task's language is " + lang});
  }
  specs.push_back({"templated", {"example"}, "prompt.allow_templated (CUDA, SYCL, CPP)"});
  for (const char* lang : {"cuda", "sycl", "cpp"}) {
    specs.push_back({std::string("templated_") + lang,
                     {},
                     std::string("inside {{example}} when the language is ") + lang});
  }
  specs.push_back(
      {"response_format", {"block_count", "blocks", "multi_block"}, "always: the last section"});
  specs.push_back({"feedback_system", {}, "the feedback LLM's system prompt"});
  specs.push_back({"feedback_user",
                   with_kernel({"log", "failed", "correct", "user_instructions", "archs"}),
                   "the feedback LLM's request"});
  specs.push_back({"meta_system", {}, "the meta-prompt LLM's system prompt (meta prompting)"});
  specs.push_back({"meta_user",
                   {"variants", "outcomes", "max_chars"},
                   "the meta-prompt LLM's request: rewrite the optimisation guidance"});
  return specs;
}

}  // namespace

const std::vector<TemplateSpec>& template_specs() {
  static const std::vector<TemplateSpec> kSpecs = make_specs();
  return kSpecs;
}

const TemplateSpec* find_template_spec(std::string_view name) {
  for (const auto& spec : template_specs())
    if (spec.name == name) return &spec;
  return nullptr;
}

std::vector<std::string> allowed_placeholders(const TemplateSpec& spec) {
  std::vector<std::string> all = common_placeholders();
  all.insert(all.end(), spec.placeholders.begin(), spec.placeholders.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

}  // namespace kf
