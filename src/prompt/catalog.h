// The catalog of prompt template files: each file's name, the placeholders it may use and when
// its section is included. It is data, so load-time checks and docs/prompts.md agree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kf {

struct TemplateSpec {
  std::string name;                       // file name without ".md"
  std::vector<std::string> placeholders;  // besides common_placeholders()
  std::string when;                       // when the section is included, for docs and messages
};

// Placeholders every template may use: language, language_long, fence, arch_names, iteration.
const std::vector<std::string>& common_placeholders();
// Every template file, in prompt order.
const std::vector<TemplateSpec>& template_specs();
const TemplateSpec* find_template_spec(std::string_view name);
// common_placeholders() followed by the spec's own, sorted.
std::vector<std::string> allowed_placeholders(const TemplateSpec& spec);
// The languages' suffix in per-language file names: "cuda", "ocl", "sycl", "triton", "cpp".
const std::vector<std::string>& language_suffixes();

}  // namespace kf
