// The yaml-cpp adapter: YAML text -> JSON tree with the line of every key. No yaml-cpp types or
// exceptions leave it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/tree.h"

namespace kf::cfg {

// Parses a YAML document whose top level is a map into a layer, its keys placed under `prefix`
// ("" = the root). `source` names the document in origins and messages. Syntax errors
// ("source:line:col: ..."), a non-map top level and duplicate keys are appended to `errors`;
// returns false when nothing usable was read.
bool read_yaml_layer(std::string_view text, const std::string& source, const std::string& prefix,
                     Layer* out, std::vector<std::string>* errors);

// Parses one value written in YAML flow style (a command-line value) as if it sat at `internal`.
bool parse_yaml_value(std::string_view text, const std::string& internal, nlohmann::json* out,
                      std::string* error);

// A plain (unquoted) scalar by the YAML 1.2 core schema: null, bool, int, float, else string.
nlohmann::json resolve_plain_scalar(const std::string& text);

}  // namespace kf::cfg
