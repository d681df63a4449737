// Paths into the config tree, layers (a tree plus the origin of each value) and how layers merge.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace kf::cfg {

// Internal paths join segments with '.', list indices as numbers: "inference.servers.0.model_name".
using OriginMap = std::map<std::string, Origin>;

struct Layer {
  nlohmann::json tree = nlohmann::json::object();
  OriginMap origins;
};

// Splits "a.b[0].c" or "a.b.0.c" into {"a","b","0","c"}; false on an empty or malformed segment.
bool split_path(std::string_view dotted, std::vector<std::string>* segments);
std::string join_path(const std::vector<std::string>& segments);
std::string child_path(std::string_view parent, std::string_view key);
bool is_index(std::string_view segment);
// "inference.servers.0.model_name" -> "inference.servers[0].model_name" (for messages).
std::string display_path(std::string_view internal);
// "inference.servers.0.model_name" -> "inference.servers[].model_name" (for schema look-ups).
std::string schema_path(std::string_view internal);

const nlohmann::json* find_node(const nlohmann::json& tree, std::string_view internal);
nlohmann::json* find_node(nlohmann::json& tree, std::string_view internal);

// The origin recorded at `internal` or at its nearest ancestor; nullptr when none.
const Origin* find_origin(const OriginMap& origins, std::string_view internal);
void erase_origins_under(OriginMap& origins, std::string_view internal);
void copy_origins_under(const OriginMap& from, std::string_view internal, OriginMap& to);

// Merges `src` (with origins keyed by full paths) into `dst` at `internal`: maps merge key by key,
// anything else replaces. A null merged onto a map leaves the map alone (an empty section).
void merge_into(Layer& dst, const nlohmann::json& src, const OriginMap& src_origins,
                const std::string& internal);
// Replaces the subtree at `internal` (creating parent maps) and its origins.
void replace_at(Layer& dst, const std::string& internal, nlohmann::json value,
                const OriginMap& src_origins);

}  // namespace kf::cfg
