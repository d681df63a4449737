// The config schema as data: every key's path, type, constraint, default and meaning.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kf::cfg {

enum class Kind {
  kString,
  kBool,
  kInt,
  kNumber,
  kEnum,          // a string among `choices`, any case on input, stored in the canonical spelling
  kStringOrList,  // a string (maybe a comma list) or a YAML list of strings
  kSection,       // a map whose keys are the schema entries below it
  kServerList,    // a non-empty list of server maps
  kWeights,       // "uniform" or a list of numbers >= 0, one per server, not all 0
};

struct Bound {
  double value = 0;
  bool open = false;  // true: strict (> / <)
};

struct KeySpec {
  // Dotted path; "[]" after a segment stands for every element of that list,
  // e.g. "inference.servers[].model_name".
  std::string path;
  Kind kind = Kind::kString;
  bool nullable = false;
  nlohmann::json default_value;  // what a missing key gets (null when there is none)
  std::optional<Bound> min;
  std::optional<Bound> max;
  std::vector<std::string> choices;  // kEnum
  std::string doc;
};

// Every key, parents before children, in the order `show` and the docs list them.
const std::vector<KeySpec>& schema();
// The spec of a schema path ("a.b[].c"), or nullptr.
const KeySpec* find_spec(std::string_view schema_path);
// Position of the spec in schema(), for stable ordering; schema().size() when unknown.
size_t spec_index(std::string_view schema_path);
// Names (last segments) of the keys directly below `parent_schema_path` ("" = the root).
std::vector<std::string> child_names(std::string_view parent_schema_path);
// Full schema paths whose last segment is `name`, for suggestions when a key sits at the wrong
// level.
std::vector<std::string> paths_ending_with(std::string_view name);
// What a valid value looks like, for messages: "an integer >= 0", "true or false or null".
std::string describe_expectation(const KeySpec& spec);
// Whether plain YAML scalars at this key are kept as text (no int/bool/null-word resolution
// beyond null itself), so `job_name: 007` stays "007".
bool is_text_key(const KeySpec* spec);

// Server types and the environment variable each reads its key from by default.
std::string default_api_key_env(std::string_view server_type);
// Languages with a shipped worked example of a templated kernel.
bool language_has_templated_example(std::string_view language);

}  // namespace kf::cfg
