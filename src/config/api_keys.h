// API keys in the config: which variable each LLM server reads its key from, where a key may go
// (a custom base_url only gets one the user named; a task package cannot pick both the server and
// the key), and which variables hold secrets.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/tree.h"

namespace kf::cfg {

// Origin sources that api_key_env gets when composition, not a file, decides it; `config show`
// prints them. "default for server_type '<type>'" marks the provider's default variable.
inline constexpr const char* kNoKeyForCustomUrl =
    "none: a custom base_url gets a key only from an api_key_env you set";
inline constexpr const char* kWithheldPrefix = "withheld: ";

// Internal paths of the server maps in `tree`: inference.servers.N and feedback_llm_config.
std::vector<std::string> server_map_paths(const nlohmann::json& tree);

// Settles api_key_env of the server map at `path` when it is null: the provider's default
// variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) for the provider's public API; none for a custom
// base_url (a local server, a proxy, another vendor), which gets a key only from a variable the
// user names. A provider default filled before base_url was set is taken back.
void derive_api_key_env(Layer& layer, const std::string& path);

// A task package is data from someone else: where the package's own files (`task_sources`, as
// origins name them) set both base_url and api_key_env of a server, its key is withheld
// (api_key_env null, the origin saying why), unless the user set either one (command line,
// shipped tree, experiments).
void withhold_task_api_keys(Config& config, const std::set<std::string>& task_sources);

}  // namespace kf::cfg

namespace kf {

// One message per server (in use) whose key was withheld from the server a task package named;
// the CLI prints them as warnings before the job starts.
std::vector<std::string> api_key_warnings(const Config& config);

// Every variable the config names as holding an API key: each server's api_key_env and its
// server_type's default (OPENAI_API_KEY, ANTHROPIC_API_KEY), whether or not it is sent. Their
// values are secrets (util/secrets.h).
std::vector<std::string> api_key_variables(const Config& config);

}  // namespace kf
