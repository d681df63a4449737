// Loading the template files: every catalogued file from the shipped folder, replaced file by
// file from the user's prompt.template_dir, each parsed and checked against its placeholders.
#include <algorithm>

#include "config/config.h"
#include "prompt/catalog.h"
#include "prompt/prompt.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

constexpr const char* kExtension = ".md";

std::vector<std::string> template_file_names() {
  std::vector<std::string> names;
  for (const auto& spec : template_specs()) names.push_back(spec.name + kExtension);
  return names;
}

// Files of the override folder that are not templates: most likely misspelt names.
void check_override_names(const fs::path& dir, std::vector<std::string>* errors) {
  std::vector<std::string> names = template_file_names();
  std::vector<std::string> unknown;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string file = entry.path().filename().string();
    if (!entry.is_regular_file() || !ends_with(file, kExtension)) continue;
    if (std::find(names.begin(), names.end(), file) == names.end()) unknown.push_back(file);
  }
  std::sort(unknown.begin(), unknown.end());
  for (const auto& file : unknown) {
    std::string message = (dir / file).string() + ": not a prompt template name";
    std::string near = nearest(file, names);
    if (!near.empty()) message += " (did you mean '" + near + "'?)";
    errors->push_back(message + "; the names are listed in docs/prompts.md");
  }
}

}  // namespace

Result<PromptTemplates> PromptTemplates::load(const fs::path& shipped_dir,
                                              const fs::path& override_dir) {
  std::error_code ec;
  if (!fs::is_directory(shipped_dir, ec))
    return Result<PromptTemplates>::error(
        "the shipped prompt templates were not found: '" + shipped_dir.string() +
        "' is not a folder; set KERNELFOUNDRY_CONFIG_DIR to the configs/ folder that holds "
        "prompts/");
  std::vector<std::string> errors;
  if (!override_dir.empty()) {
    if (!fs::is_directory(override_dir, ec))
      return Result<PromptTemplates>::error(
          "prompt.template_dir '" + override_dir.string() +
          "' is not a folder; point it at a folder of template files (see docs/prompts.md) or "
          "set it to null");
    check_override_names(override_dir, &errors);
  }

  PromptTemplates templates;
  for (const auto& spec : template_specs()) {
    std::string file = spec.name + kExtension;
    fs::path path = shipped_dir / file;
    if (!override_dir.empty() && fs::is_regular_file(override_dir / file, ec))
      path = override_dir / file;
    if (!fs::is_regular_file(path, ec)) {
      errors.push_back(path.string() + ": missing prompt template (used when " + spec.when +
                       "); restore it from the KernelFoundry sources or provide it in "
                       "prompt.template_dir");
      continue;
    }
    auto text = read_file(path);
    if (!text) {
      errors.push_back(text.message());
      continue;
    }
    auto parsed = Template::parse(*text, path.string(), allowed_placeholders(spec));
    if (!parsed) {
      errors.push_back(parsed.message());
      continue;
    }
    templates.entries_[spec.name] = Entry{std::move(*text), std::move(*parsed), path};
  }
  if (!errors.empty()) return Result<PromptTemplates>::error(join(errors, "\n"));
  return templates;
}

const std::string* PromptTemplates::find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second.text;
}

const Template* PromptTemplates::parsed(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second.parsed;
}

fs::path PromptTemplates::source(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? fs::path() : it->second.source;
}

fs::path shipped_prompt_dir() {
  return default_config_dir() / "prompts";
}

}  // namespace kf
