// Dropping the Python KernelFoundry's `_target_` and `verbose` keys from inference configs, and the
// one note that says so.
#include "config/foreign_keys.h"

#include <algorithm>

#include "config/validate.h"
#include "util/strings.h"

namespace kf::cfg {

using nlohmann::json;

namespace {

constexpr size_t kMaxPlacesNamed = 4;  // the note stays one readable line

bool is_foreign_name(const std::string& key) {
  return key == "_target_" || key == "verbose";
}

// The sections whose maps are inference server configs in the Python KernelFoundry.
bool in_inference_section(const std::string& internal) {
  std::string first = internal.substr(0, internal.find('.'));
  return first == "inference" || first == "feedback_llm_config";
}

std::string parent_of(const std::string& internal) {
  size_t dot = internal.rfind('.');
  return dot == std::string::npos ? std::string() : internal.substr(0, dot);
}

std::string leaf_of(const std::string& internal) {
  size_t dot = internal.rfind('.');
  return dot == std::string::npos ? internal : internal.substr(dot + 1);
}

}  // namespace

bool is_foreign_key(const std::string& internal) {
  return is_foreign_name(leaf_of(internal)) && in_inference_section(internal) &&
         !is_known_path(schema_path(internal));
}

void record_foreign_key(const std::string& internal, const Origin& origin, ForeignKeys* found) {
  found->names.insert(leaf_of(internal));
  std::string map = parent_of(internal);
  bool known = std::any_of(found->places.begin(), found->places.end(),
                           [&](const ForeignKeys::Place& p) { return p.map == map; });
  if (!known) found->places.push_back({map, origin});
}

void drop_foreign_keys(json& node, const std::string& internal, OriginMap& origins,
                       ForeignKeys* found) {
  if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i)
      drop_foreign_keys(node[i], child_path(internal, std::to_string(i)), origins, found);
    return;
  }
  if (!node.is_object()) return;
  std::vector<std::string> dropped;
  for (auto& [key, value] : node.items()) {
    std::string cp = child_path(internal, key);
    if (is_foreign_key(cp)) {
      const Origin* origin = find_origin(origins, cp);
      record_foreign_key(cp, origin ? *origin : Origin{}, found);
      dropped.push_back(key);
    } else {
      drop_foreign_keys(value, cp, origins, found);
    }
  }
  for (const std::string& key : dropped) {
    node.erase(key);
    erase_origins_under(origins, child_path(internal, key));
  }
}

std::string foreign_keys_note(const ForeignKeys& found) {
  if (found.names.empty()) return "";
  std::vector<std::string> names;
  // `_target_` first: it is the one every Hydra config has.
  for (const char* name : {"_target_", "verbose"})
    if (found.names.count(name)) names.push_back(std::string("`") + name + "`");
  std::vector<std::string> places;
  for (size_t i = 0; i < found.places.size() && i < kMaxPlacesNamed; ++i) {
    const ForeignKeys::Place& p = found.places[i];
    places.push_back(display_path(p.map) + " (" + p.origin.describe() + ")");
  }
  std::string where = join(places, ", ");
  if (found.places.size() > kMaxPlacesNamed)
    where += strprintf(" and %zu more", found.places.size() - kMaxPlacesNamed);
  std::string note = "ignoring " + join(names, ", ") + " in " + where +
                     ": keys of the Python KernelFoundry's configs; KernelFoundry chooses the "
                     "client from server_type";
  if (found.names.count("verbose")) note += " and prints the same progress either way";
  return note;
}

}  // namespace kf::cfg
