// API keys in the composed config: the derived api_key_env, keys withheld from a server a task
// package named, and the variables whose values are secrets.
#include "config/api_keys.h"

#include <algorithm>

#include "config/schema.h"
#include "config/validate.h"
#include "util/strings.h"

namespace kf::cfg {

using nlohmann::json;

namespace {

const std::string kDefaultPrefix = "default for server_type '";

bool is_custom_url(const json* value) {
  return value != nullptr && value->is_string() && !trim(value->get<std::string>()).empty();
}

}  // namespace

std::vector<std::string> server_map_paths(const json& tree) {
  std::vector<std::string> paths;
  if (const json* servers = find_node(tree, "inference.servers"); servers && servers->is_array())
    for (size_t i = 0; i < servers->size(); ++i)
      paths.push_back("inference.servers." + std::to_string(i));
  paths.push_back("feedback_llm_config");
  return paths;
}

void derive_api_key_env(Layer& layer, const std::string& path) {
  json* map = find_node(layer.tree, path);
  if (map == nullptr || !map->is_object()) return;
  auto type = map->find("server_type");
  auto key = map->find("api_key_env");
  if (type == map->end() || !type->is_string() || key == map->end()) return;
  const std::string key_path = child_path(path, "api_key_env");
  const Origin* origin = find_origin(layer.origins, key_path);
  bool derived = origin != nullptr && starts_with(origin->source, kDefaultPrefix);
  bool custom = is_custom_url(find_node(layer.tree, child_path(path, "base_url")));
  if (custom) {
    // The provider's key is for the provider's API only.
    if (!key->is_null() && !derived) return;  // named by a layer: the user's choice
    *key = nullptr;
    if (origin == nullptr || !starts_with(origin->source, kWithheldPrefix))
      layer.origins[key_path] = Origin{kNoKeyForCustomUrl, 0};
    return;
  }
  if (!key->is_null()) return;
  std::string env = default_api_key_env(type->get<std::string>());
  if (env.empty()) return;
  *key = env;
  layer.origins[key_path] = Origin{kDefaultPrefix + type->get<std::string>() + "'", 0};
}

void withhold_task_api_keys(Config& config, const std::set<std::string>& task_sources) {
  Layer layer = ConfigAccess::layer(config);
  bool changed = false;
  for (const std::string& path : server_map_paths(layer.tree)) {
    const std::string url_path = child_path(path, "base_url");
    const std::string key_path = child_path(path, "api_key_env");
    const json* url = find_node(layer.tree, url_path);
    json* key = find_node(layer.tree, key_path);
    if (!is_custom_url(url) || key == nullptr || !key->is_string()) continue;
    const Origin* url_origin = find_origin(layer.origins, url_path);
    const Origin* key_origin = find_origin(layer.origins, key_path);
    if (url_origin == nullptr || key_origin == nullptr || !task_sources.count(url_origin->source) ||
        !task_sources.count(key_origin->source))
      continue;
    const std::string variable = key->get<std::string>();
    const std::string shown = display_path(key_path);
    layer.origins[key_path] = Origin{
        std::string(kWithheldPrefix) + "the task package sets both base_url (" +
            url_origin->describe() + ") and api_key_env: " + variable + " (" +
            key_origin->describe() +
            "); a task package may not send your key to a server of its choosing. If you trust "
            "it, set " +
            shown + "=" + variable + " on the command line",
        0};
    *key = nullptr;
    changed = true;
  }
  if (changed) ConfigAccess::assign(config, std::move(layer));
}

}  // namespace kf::cfg

namespace kf {

std::vector<std::string> api_key_warnings(const Config& config) {
  std::vector<std::string> warnings;
  for (const std::string& path : cfg::server_map_paths(config.tree())) {
    if (path == "feedback_llm_config" && !config.get_bool("use_feedback_llm")) continue;
    Origin origin = config.origin(path + ".api_key_env");
    if (!starts_with(origin.source, cfg::kWithheldPrefix)) continue;
    warnings.push_back("no API key is sent to " + config.get_string(path + ".base_url") + " ('" +
                       cfg::display_path(path) +
                       "'): " + origin.source.substr(std::string(cfg::kWithheldPrefix).size()));
  }
  return warnings;
}

std::vector<std::string> api_key_variables(const Config& config) {
  std::vector<std::string> names;
  auto add = [&names](const std::string& name) {
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  };
  for (const std::string& path : cfg::server_map_paths(config.tree())) {
    if (!config.at(path).is_object()) continue;
    add(config.get_string(path + ".api_key_env"));
    add(cfg::default_api_key_env(config.get_string(path + ".server_type")));
  }
  return names;
}

}  // namespace kf
