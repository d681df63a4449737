// The config subsystem's front header: compose the shipped tree, the task's files and the command
// line into one validated Config, and read values (with where each came from) out of it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace kf {

// Where a value came from: a file and line, a command-line argument, or a built-in default.
struct Origin {
  // "configs/run.yaml", "command line argument 'max_iters=5'", "built-in default"
  std::string source;
  int line = 0;                  // 1-based; 0 when the source has no lines
  std::string describe() const;  // "configs/run.yaml:4", "command line argument 'max_iters=5'"
};

// A composed, validated configuration. Every schema key is present in tree() (null where unset).
// Dotted paths address nested keys; list elements take an index: "inference.servers.0.model_name"
// or "inference.servers[0].model_name".
class Config {
 public:
  const nlohmann::json& tree() const { return tree_; }
  bool has(std::string_view dotted) const;                  // present and not null
  const nlohmann::json& at(std::string_view dotted) const;  // null json if absent
  std::string get_string(std::string_view dotted, std::string fallback = "") const;
  int64_t get_int(std::string_view dotted, int64_t fallback = 0) const;
  double get_double(std::string_view dotted, double fallback = 0) const;
  bool get_bool(std::string_view dotted, bool fallback = false) const;
  // A YAML list (elements as strings), or a comma-separated string split and trimmed.
  std::vector<std::string> get_list(std::string_view dotted) const;
  Origin origin(std::string_view dotted) const;  // the nearest recorded origin at or above the path
  // A YAML-like dump of the whole tree, each leaf followed by "# <origin>".
  std::string show() const;
  // A programmatic override (e.g. the language read from the task), validated like a file value;
  // on error the config is left unchanged.
  Status set(std::string_view dotted, nlohmann::json value, Origin origin);
  // Remarks from composing, one line each, for the caller to print (e.g. the Python
  // KernelFoundry's `_target_` / `verbose` keys that were ignored).
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  friend class ConfigAccess;  // compose.cpp builds configs through it
  nlohmann::json tree_ = nlohmann::json::object();
  std::map<std::string, Origin> origins_;  // keyed by internal path "a.b.0.c"
  std::vector<std::string> notes_;
};

struct ComposeOptions {
  std::filesystem::path config_dir;      // shipped tree; empty => default_config_dir()
  std::filesystem::path task_config;     // may be empty / missing file => skipped
  std::filesystem::path task_overrides;  // may be empty / missing file => skipped
  std::vector<std::string> args;         // key=value, a.b=value, group=option, +experiment=name
};

// Shipped defaults -> task config.yaml -> task overrides.yaml -> command line, each over the
// previous. All errors (unknown keys, wrong types, YAML syntax) are reported, one per line.
Result<Config> compose(const ComposeOptions& options);

// KERNELFOUNDRY_CONFIG_DIR, else <exe_dir>/../share/kernelfoundry/configs, else <exe_dir>/configs,
// else the first `configs/base.yaml` found walking up from exe_dir, else the source tree's
// configs/.
std::filesystem::path default_config_dir();

// What a run needs beyond the schema: task_name, job_name and language set; allow_templated only
// for languages with a worked example (else "AssertionError: Must provide example if
// allow_templated=True").
Status validate_for_run(const Config& config);

// gpu_arch as a list ("lnl,ptl,bmg" or a YAML list), trimmed and de-duplicated; {"native"} if
// unset.
std::vector<std::string> normalize_gpu_archs(const Config& config);

}  // namespace kf
