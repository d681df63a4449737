// Composition: shipped defaults -> task config.yaml -> task overrides.yaml -> command line, with
// config groups (`inference=ensemble`) and experiments (`+experiment=wide_search`).
#include <algorithm>
#include <cstdlib>
#include <set>

#include "config/api_keys.h"
#include "config/config.h"
#include "config/foreign_keys.h"
#include "config/overrides.h"
#include "config/schema.h"
#include "config/task_paths.h"
#include "config/tree.h"
#include "config/validate.h"
#include "config/yaml_reader.h"
#include "util/fs.h"
#include "util/strings.h"

#ifndef KF_CONFIG_SOURCE_DIR
#define KF_CONFIG_SOURCE_DIR ""
#endif

namespace kf {

namespace fs = std::filesystem;
using cfg::Layer;
using nlohmann::json;

namespace {

constexpr const char* kExperimentGroup = "experiment";
constexpr int kMaxNesting = 8;  // experiments may select experiments; stop runaway cycles

// A path as the user would type it: relative when under the current directory.
std::string display_file(const fs::path& path) {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  if (!ec && path.is_absolute()) {
    fs::path rel = path.lexically_normal().lexically_relative(cwd);
    if (!rel.empty() && *rel.begin() != "..") return rel.string();
  }
  return path.string();
}

class Composer {
 public:
  explicit Composer(fs::path dir) : dir_(std::move(dir)) { scan_groups(); }

  const std::set<std::string>& groups() const { return groups_; }
  std::vector<std::string>& errors() { return errors_; }
  Layer& layer() { return layer_; }
  const cfg::ForeignKeys& foreign_keys() const { return foreign_; }

  // A file whose keys sit at the root (base.yaml, run.yaml, a task's config, an experiment).
  void apply_root_file(const fs::path& file, int depth = 0) {
    Layer file_layer;
    if (!read(file, "", &file_layer)) return;
    std::string source = display_file(file);
    json& tree = file_layer.tree;
    // `defaults:` first, so the file's own keys refine the options it picks.
    if (auto it = tree.find("defaults"); it != tree.end()) {
      apply_defaults(*it, file_layer.origins, depth);
      tree.erase("defaults");
    }
    // `inference: ensemble` in a file picks a group option too.
    std::vector<std::string> picked;
    for (auto& [key, value] : tree.items()) {
      if (value.is_string() && (groups_.count(key) || key == kExperimentGroup)) {
        select(key, value.get<std::string>(), where(file_layer.origins, key), depth);
        picked.push_back(key);
      }
    }
    for (const std::string& key : picked) tree.erase(key);
    cfg::drop_foreign_keys(tree, "", file_layer.origins, &foreign_);
    cfg::expand_enabled_shorthand(tree, "", file_layer.origins);
    cfg::check_known_keys(tree, "", file_layer.origins, &errors_);
    cfg::merge_into(layer_, tree, file_layer.origins, "");
  }

  // `group=option` (or an experiment): `where` says who asked, for messages.
  void select(const std::string& group, const std::string& option, const Origin& asked_by,
              int depth) {
    if (depth > kMaxNesting) {
      errors_.push_back("config groups nest too deeply at '" + group + "=" + option + "' (" +
                        asked_by.describe() + "): do two experiments select each other?");
      return;
    }
    if (group != kExperimentGroup && !groups_.count(group)) {
      std::vector<std::string> names(groups_.begin(), groups_.end());
      names.push_back(kExperimentGroup);
      std::string message = "unknown config group '" + group + "' (" + asked_by.describe() +
                            "); groups: " + join(names, ", ");
      std::string near = nearest(group, names);
      if (!near.empty()) message += "; did you mean '" + near + "'?";
      errors_.push_back(message);
      return;
    }
    fs::path file = dir_ / group / (option + ".yaml");
    std::vector<std::string> options = options_of(group);
    if (option.empty() || option.find('/') != std::string::npos ||
        std::find(options.begin(), options.end(), option) == options.end()) {
      std::string message = "unknown option '" + option + "' for config group '" + group + "' (" +
                            asked_by.describe() + "); available: " +
                            (options.empty() ? std::string("none") : join(options, ", "));
      std::string near = nearest(option, options);
      if (!near.empty()) message += "; did you mean '" + near + "'?";
      errors_.push_back(message);
      return;
    }
    if (group == kExperimentGroup) {
      apply_root_file(file, depth + 1);
      return;
    }
    // A group option replaces the group's whole subtree.
    Layer option_layer;
    if (!read(file, group, &option_layer)) return;
    cfg::drop_foreign_keys(option_layer.tree, "", option_layer.origins, &foreign_);
    cfg::expand_enabled_shorthand(option_layer.tree, "", option_layer.origins);
    cfg::check_known_keys(option_layer.tree, "", option_layer.origins, &errors_);
    json subtree = option_layer.tree.contains(group) ? option_layer.tree[group] : json::object();
    if (subtree.is_null()) subtree = json::object();
    cfg::replace_at(layer_, group, std::move(subtree), option_layer.origins);
  }

  void apply_override(const cfg::Override& o) {
    switch (o.type) {
      case cfg::Override::Type::kGroup:
        select(o.path, o.option, o.origin(), 0);
        return;
      case cfg::Override::Type::kExperiment:
        select(kExperimentGroup, o.option, o.origin(), 0);
        return;
      case cfg::Override::Type::kSet:
        break;
    }
    Origin origin = o.origin();
    if (cfg::is_foreign_key(o.path)) {
      cfg::record_foreign_key(o.path, origin, &foreign_);
      return;
    }
    if (!cfg::is_known_path(cfg::schema_path(o.path))) {
      errors_.push_back(cfg::unknown_key_message(o.path, &origin));
      return;
    }
    if (!check_indices(o)) return;
    json value;
    std::string error;
    if (!cfg::parse_override_value(o, &value, &error)) {
      errors_.push_back(error);
      return;
    }
    cfg::OriginMap origins = cfg::origins_for(value, o.path, origin);
    cfg::drop_foreign_keys(value, o.path, origins, &foreign_);
    cfg::expand_enabled_shorthand(value, o.path, origins);
    cfg::check_known_keys(value, o.path, origins, &errors_);
    // A map value merges into the section (`eval_config={num_seeds: 1}`); others replace.
    if (value.is_object())
      cfg::merge_into(layer_, value, origins, o.path);
    else
      cfg::replace_at(layer_, o.path, std::move(value), origins);
  }

 private:
  bool read(const fs::path& file, const std::string& prefix, Layer* out) {
    auto text = read_file(file);
    if (!text.is_ok()) {
      errors_.push_back(text.message());
      return false;
    }
    return cfg::read_yaml_layer(*text, display_file(file), prefix, out, &errors_);
  }

  Origin where(const cfg::OriginMap& origins, const std::string& path) const {
    const Origin* o = cfg::find_origin(origins, path);
    return o ? *o : Origin{};
  }

  void apply_defaults(const json& defaults, const cfg::OriginMap& origins, int depth) {
    // `defaults: {inference: ensemble}` or Hydra's list form `defaults: [{inference: ensemble}]`.
    auto apply_map = [&](const json& map, const std::string& path) {
      for (const auto& [group, option] : map.items()) {
        std::string p = cfg::child_path(path, group);
        if (!option.is_string()) {
          errors_.push_back("'" + cfg::display_path(p) + "' must name an option of group '" +
                            group + "', got '" + option.dump() + "' (" +
                            where(origins, p).describe() + ")");
          continue;
        }
        select(group, option.get<std::string>(), where(origins, p), depth);
      }
    };
    if (defaults.is_object()) {
      apply_map(defaults, "defaults");
    } else if (defaults.is_array()) {
      for (size_t i = 0; i < defaults.size(); ++i) {
        std::string p = "defaults." + std::to_string(i);
        if (defaults[i].is_object())
          apply_map(defaults[i], p);
        else
          errors_.push_back("'" + cfg::display_path(p) + "' must be a `group: option` pair (" +
                            where(origins, p).describe() + ")");
      }
    } else if (!defaults.is_null()) {
      errors_.push_back("'defaults' must be a map of group: option (" +
                        where(origins, "defaults").describe() + ")");
    }
  }

  // `inference.servers.3.model_name=x` may append one element, not leave holes.
  bool check_indices(const cfg::Override& o) {
    std::vector<std::string> segs = split(o.path, '.');
    std::string path;
    for (const std::string& seg : segs) {
      const json* node = cfg::find_node(layer_.tree, path);
      if (node && node->is_array() && cfg::is_index(seg)) {
        size_t index = std::stoul(seg);
        if (index > node->size()) {
          errors_.push_back(
              strprintf("'%s' has %zu element(s): index %zu is out of range "
                        "(%s); use %zu to add one",
                        cfg::display_path(path).c_str(), node->size(), index,
                        o.origin().describe().c_str(), node->size()));
          return false;
        }
      }
      if (!node) break;
      path = cfg::child_path(path, seg);
    }
    return true;
  }

  void scan_groups() {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      // A folder without .yaml options (configs/prompts holds prompt templates) is no group.
      if (entry.is_directory() && entry.path().filename() != kExperimentGroup &&
          !options_of(entry.path().filename().string()).empty())
        groups_.insert(entry.path().filename().string());
    }
  }

  std::vector<std::string> options_of(const std::string& group) const {
    std::vector<std::string> options;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_ / group, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".yaml")
        options.push_back(entry.path().stem().string());
    }
    std::sort(options.begin(), options.end());
    return options;
  }

  fs::path dir_;
  std::set<std::string> groups_;
  Layer layer_;
  std::vector<std::string> errors_;
  cfg::ForeignKeys foreign_;  // Python KernelFoundry keys dropped on the way, for one note
};

bool is_file(const fs::path& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec);
}

}  // namespace

Result<Config> compose(const ComposeOptions& options) {
  fs::path dir = options.config_dir.empty() ? default_config_dir() : options.config_dir;
  if (!is_file(dir / "base.yaml"))
    return Result<Config>::error("the shipped config tree was not found: no base.yaml in '" +
                                 dir.string() +
                                 "'; set KERNELFOUNDRY_CONFIG_DIR to the configs/ folder");
  Composer composer(dir);
  composer.apply_root_file(dir / "base.yaml");
  if (is_file(dir / "run.yaml")) composer.apply_root_file(dir / "run.yaml");
  if (is_file(options.task_config)) composer.apply_root_file(options.task_config);
  if (is_file(options.task_overrides)) composer.apply_root_file(options.task_overrides);
  for (const cfg::Override& o :
       cfg::parse_overrides(options.args, composer.groups(), &composer.errors())) {
    composer.apply_override(o);
  }
  cfg::finish_tree(composer.layer(), &composer.errors());
  if (!composer.errors().empty()) return Result<Config>::error(join(composer.errors(), "\n"));
  std::vector<std::string> notes;
  if (std::string note = cfg::foreign_keys_note(composer.foreign_keys()); !note.empty())
    notes.push_back(std::move(note));
  Config config = ConfigAccess::make(std::move(composer.layer()), std::move(notes));
  // What the task package's own files set may only point inside the package.
  std::set<std::string> task_sources;
  fs::path package_root;
  for (const fs::path& file : {options.task_config, options.task_overrides}) {
    if (!is_file(file)) continue;
    task_sources.insert(display_file(file));
    package_root = fs::absolute(file).parent_path();
  }
  if (!task_sources.empty()) {
    cfg::confine_task_paths(config, package_root, task_sources, &composer.errors());
    // The bounds protect the user's budget and machine: a package may not raise them.
    for (const char* key :
         {"limits.branches_per_iteration", "limits.max_iters", "limits.llm_rate_limit"}) {
      Origin origin = config.origin(key);
      if (task_sources.count(origin.source) > 0)
        composer.errors().push_back(
            "'" + std::string(key) + "' is set by the task package (" + origin.describe() +
            "): a task package is data from someone else and may not raise the bounds that "
            "protect your budget; set " +
            key + "=... on the command line if you mean it");
    }
    if (!composer.errors().empty()) return Result<Config>::error(join(composer.errors(), "\n"));
  }
  // Nor may it pick both the server and the key sent there.
  cfg::withhold_task_api_keys(config, task_sources);
  return config;
}

fs::path default_config_dir() {
  if (const char* env = std::getenv("KERNELFOUNDRY_CONFIG_DIR"); env && *env) return fs::path(env);
  std::error_code ec;
  fs::path exe = executable_dir();
  for (const fs::path& candidate :
       {exe / ".." / "share" / "kernelfoundry" / "configs", exe / "configs"}) {
    if (fs::is_regular_file(candidate / "base.yaml", ec)) return candidate.lexically_normal();
  }
  for (fs::path dir = exe; !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_regular_file(dir / "configs" / "base.yaml", ec)) return dir / "configs";
    if (dir == dir.parent_path()) break;
  }
  return fs::path(KF_CONFIG_SOURCE_DIR);
}

}  // namespace kf
