// Confining the paths a task package sets to the package (inputs) and the working directory
// (outputs); the same keys from the command line or the shipped tree stay the user's choice.
#include "config/task_paths.h"

#include "config/tree.h"
#include "util/strings.h"

namespace kf::cfg {

namespace fs = std::filesystem;

namespace {

// Keys whose value names something the run reads.
std::vector<std::string> input_keys(const Config& config) {
  std::vector<std::string> keys = {"kernels_iter_0_path", "prompt.template_dir",
                                   "feedback_llm_config.replay_path"};
  const auto& servers = config.at("inference.servers");
  if (servers.is_array()) {
    for (size_t i = 0; i < servers.size(); ++i)
      keys.push_back("inference.servers." + std::to_string(i) + ".replay_path");
  }
  return keys;
}

// Keys whose value decides where the run writes (or keeps its database and cache).
const std::vector<std::string>& output_keys() {
  static const std::vector<std::string> keys = {"paths.kernels_db_path", "paths.logdir",
                                                "paths.results_dir", "paths.cache_dir"};
  return keys;
}

// Values of input keys that name no file.
bool is_not_a_path(const std::string& key, const std::string& value) {
  if (key == "kernels_iter_0_path") return value == "best" || starts_with(value, "best-");
  if (ends_with(key, "replay_path")) return starts_with(value, "job:");
  return false;
}

bool is_within(const fs::path& path, const fs::path& root) {
  fs::path rel = path.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

std::string fix_for(const std::string& key, const std::string& value) {
  return "; remove it from the task package, or set " + key + "=" + value +
         " on the command line if you mean it";
}

}  // namespace

void confine_task_paths(Config& config, const fs::path& package_root,
                        const std::set<std::string>& task_sources,
                        std::vector<std::string>* errors) {
  auto from_task = [&](const std::string& key) {
    return config.has(key) && config.at(key).is_string() &&
           task_sources.count(config.origin(key).source) > 0;
  };
  std::error_code ec;
  fs::path root = fs::weakly_canonical(fs::absolute(package_root), ec);
  if (ec) root = fs::absolute(package_root).lexically_normal();

  for (const std::string& key : input_keys(config)) {
    if (!from_task(key)) continue;
    const std::string value = config.get_string(key);
    const Origin origin = config.origin(key);
    if (is_not_a_path(key, value)) continue;
    const std::string shown = display_path(key);
    // Relative to the package's folder; `..` and every symlink resolved before the check.
    fs::path path = fs::path(value).is_absolute() ? fs::path(value) : package_root / value;
    fs::path resolved = fs::weakly_canonical(path, ec);
    if (ec) resolved = path.lexically_normal();
    if (value.empty() || !is_within(resolved, root)) {
      errors->push_back("'" + shown + "' is '" + value + "' (" + origin.describe() +
                        "), which is outside the task package " + root.string() +
                        ": a task package is data from someone else and may only point at its "
                        "own files (a path it sets is taken relative to its folder)" +
                        fix_for(shown, value));
      continue;
    }
    if (Status s = config.set(key, resolved.string(), origin); !s) errors->push_back(s.message());
  }

  for (const std::string& key : output_keys()) {
    if (!from_task(key)) continue;
    const std::string value = config.get_string(key);
    const fs::path path(value);
    bool dotdot = false;
    for (const auto& part : path) dotdot = dotdot || part == "..";
    if (!value.empty() && path.is_relative() && !dotdot) continue;
    errors->push_back("'" + key + "' is '" + value + "' (" + config.origin(key).describe() +
                      "): a task package decides only where under the working directory this "
                      "run writes, so it may set a relative path without '..' here" +
                      fix_for(key, value));
  }
}

}  // namespace kf::cfg
