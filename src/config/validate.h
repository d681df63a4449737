// Checking a composed tree against the schema: unknown keys (with suggestions), defaults for
// missing keys, types, ranges and rules that span several keys.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/tree.h"

namespace kf::cfg {

// Whether `schema_path` names a key (or an element of a list of server maps, "a.b[]").
bool is_known_path(const std::string& schema_path);
// "did you mean" for an unknown internal path: the nearest valid key, displayed; "" if none.
std::string suggest_key(const std::string& internal);
// "unknown key 'x' (origin); did you mean 'y'?"
std::string unknown_key_message(const std::string& internal, const Origin* origin);
// Appends an error for every key under `node` (sitting at `internal`) that the schema lacks.
void check_known_keys(const nlohmann::json& node, const std::string& internal,
                      const OriginMap& origins, std::vector<std::string>* errors);
// Origins for `value` and everything inside it, all from one place (a command-line argument).
// The boolean shorthand of a section with an `enabled` key: `prompt.meta_prompting: true` under
// `node` (which sits at `internal`) becomes `{enabled: true}`, so that it merges with the
// section's other keys instead of replacing them. Origins move to the `enabled` key.
void expand_enabled_shorthand(nlohmann::json& node, const std::string& internal,
                              OriginMap& origins);

OriginMap origins_for(const nlohmann::json& value, const std::string& internal,
                      const Origin& origin);

// Adds schema defaults for missing keys, checks every value (normalising enum spellings) and the
// cross-key rules, then fills derived defaults (api_key_env per server_type).
void finish_tree(Layer& layer, std::vector<std::string>* errors);

}  // namespace kf::cfg

namespace kf {

// Builds and opens Config objects for the config subsystem's own files.
class ConfigAccess {
 public:
  static Config make(cfg::Layer layer, std::vector<std::string> notes = {});
  static cfg::Layer layer(const Config& config);
  // Replaces the tree and origins, keeping the notes.
  static void assign(Config& config, cfg::Layer layer);
};

}  // namespace kf
