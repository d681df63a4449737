// Command-line overrides: `key=value`, `a.b.c=value`, `group=option`, `+experiment=name`, `~key`.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace kf::cfg {

struct Override {
  enum class Type { kSet, kGroup, kExperiment };
  Type type = Type::kSet;
  std::string arg;     // the argument as typed, for messages
  std::string path;    // kSet: internal path ("inference.servers.0.model_name"); kGroup: group name
  std::string option;  // kGroup / kExperiment: the option file's name
  std::string value;   // kSet: the value text after '='
  bool unset = false;  // kSet from `~key`: back to null
  Origin origin() const;
};

// Classifies each argument; `groups` are the group folders of the shipped tree. Malformed
// arguments are appended to `errors` and skipped.
std::vector<Override> parse_overrides(const std::vector<std::string>& args,
                                      const std::set<std::string>& groups,
                                      std::vector<std::string>* errors);

// The JSON value of `key=value` for the key at `internal`, typed by the schema: text keys keep the
// text as written, list keys split `a,b,c`, others parse as YAML (`[0.5,0.5]`, `true`, `5`).
bool parse_override_value(const Override& override_arg, nlohmann::json* out, std::string* error);

}  // namespace kf::cfg
