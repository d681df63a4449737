// Schema checks of a composed tree: unknown keys with suggestions, defaults for missing keys,
// types and ranges (every error collected), cross-key rules, derived defaults.
#include "config/validate.h"

#include <cmath>
#include <set>

#include "config/api_keys.h"
#include "config/schema.h"
#include "util/strings.h"

namespace kf::cfg {

using nlohmann::json;

namespace {

const Origin kBuiltIn{"built-in default", 0};

std::string where(const Origin* origin) {
  return origin ? " (" + origin->describe() + ")" : std::string();
}

std::string last_segment(const std::string& path) {
  size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string format_value(const json& value) {
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

}  // namespace

bool is_known_path(const std::string& path) {
  if (find_spec(path)) return true;
  if (ends_with(path, "[]")) {
    const KeySpec* list = find_spec(path.substr(0, path.size() - 2));
    return list && list->kind == Kind::kServerList;
  }
  return false;
}

std::string suggest_key(const std::string& internal) {
  std::vector<std::string> segs = split(internal, '.');
  // The first segment that leaves the schema.
  size_t bad = 0;
  std::vector<std::string> prefix;
  for (; bad < segs.size(); ++bad) {
    prefix.push_back(segs[bad]);
    if (!is_known_path(schema_path(join_path(prefix)))) break;
  }
  if (bad >= segs.size()) return "";
  prefix.pop_back();
  std::string parent = join_path(prefix);
  // The key may sit at the wrong level: `noise_target: 0.01` at the top means eval_config's (an
  // exact name elsewhere beats a near one here: `arch_targets` is not meant).
  const std::string& leaf = segs.back();
  std::vector<std::string> same_name = paths_ending_with(leaf);
  if (!same_name.empty()) return same_name.front();
  std::string near = nearest(segs[bad], child_names(schema_path(parent)));
  if (!near.empty()) {
    std::vector<std::string> fixed = segs;
    fixed[bad] = near;
    std::string candidate = join_path(fixed);
    if (bad + 1 == segs.size() || is_known_path(schema_path(candidate)))
      return display_path(candidate);
  }
  std::vector<std::string> leaves;
  std::vector<std::string> full;
  for (const KeySpec& spec : schema()) {
    leaves.push_back(last_segment(spec.path));
    full.push_back(spec.path);
  }
  std::string near_leaf = nearest(leaf, leaves);
  if (near_leaf.empty()) return "";
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i] == near_leaf) return full[i];
  return "";
}

std::string unknown_key_message(const std::string& internal, const Origin* origin) {
  std::string message = "unknown key '" + display_path(internal) + "'" + where(origin);
  std::string suggestion = suggest_key(internal);
  if (!suggestion.empty()) message += "; did you mean '" + suggestion + "'?";
  return message;
}

void check_known_keys(const json& node, const std::string& internal, const OriginMap& origins,
                      std::vector<std::string>* errors) {
  if (!node.is_object()) return;
  for (const auto& [key, value] : node.items()) {
    std::string cp = child_path(internal, key);
    const KeySpec* spec = find_spec(schema_path(cp));
    if (spec == nullptr) {
      errors->push_back(unknown_key_message(cp, find_origin(origins, cp)));
      continue;
    }
    if (spec->kind == Kind::kSection) {
      check_known_keys(value, cp, origins, errors);
    } else if (spec->kind == Kind::kServerList && value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i)
        check_known_keys(value[i], child_path(cp, std::to_string(i)), origins, errors);
    }
  }
}

void expand_enabled_shorthand(json& node, const std::string& internal, OriginMap& origins) {
  const KeySpec* spec = find_spec(schema_path(internal));
  if (spec && spec->kind == Kind::kSection && node.is_boolean() &&
      find_spec(schema_path(child_path(internal, "enabled")))) {
    node = json{{"enabled", node.get<bool>()}};
    if (const Origin* o = find_origin(origins, internal))
      origins[child_path(internal, "enabled")] = *o;
    return;
  }
  if (!node.is_object()) return;
  for (auto& [key, child] : node.items())
    expand_enabled_shorthand(child, child_path(internal, key), origins);
}

OriginMap origins_for(const json& value, const std::string& internal, const Origin& origin) {
  OriginMap out;
  out[internal] = origin;
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      OriginMap sub = origins_for(child, child_path(internal, key), origin);
      out.insert(sub.begin(), sub.end());
    }
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      OriginMap sub = origins_for(value[i], child_path(internal, std::to_string(i)), origin);
      out.insert(sub.begin(), sub.end());
    }
  }
  return out;
}

namespace {

// Internal paths of every place the spec's key sits in the tree (its parent exists as a map).
void expand(const json& node, const std::vector<std::string>& segs, size_t i,
            const std::string& internal, std::vector<std::string>* out) {
  if (!node.is_object()) return;
  const std::string& seg = segs[i];
  bool each = ends_with(seg, "[]");
  std::string name = each ? seg.substr(0, seg.size() - 2) : seg;
  std::string cp = child_path(internal, name);
  if (i + 1 == segs.size()) {
    out->push_back(cp);
    return;
  }
  auto it = node.find(name);
  if (it == node.end()) return;
  if (!each) {
    expand(*it, segs, i + 1, cp, out);
  } else if (it->is_array()) {
    for (size_t k = 0; k < it->size(); ++k)
      expand((*it)[k], segs, i + 1, child_path(cp, std::to_string(k)), out);
  }
}

std::vector<std::string> instances(const json& tree, const KeySpec& spec) {
  std::vector<std::string> out;
  expand(tree, split(spec.path, '.'), 0, "", &out);
  return out;
}

void fill_defaults(Layer& layer) {
  for (const KeySpec& spec : schema()) {
    for (const std::string& path : instances(layer.tree, spec)) {
      if (find_node(layer.tree, path) != nullptr) continue;
      replace_at(layer, path, spec.default_value, {});
      layer.origins[path] = kBuiltIn;
    }
  }
}

bool in_range(const KeySpec& spec, double v) {
  if (std::isnan(v)) return false;
  if (spec.min && (spec.min->open ? !(v > spec.min->value) : !(v >= spec.min->value))) return false;
  if (spec.max && (spec.max->open ? !(v < spec.max->value) : !(v <= spec.max->value))) return false;
  return true;
}

bool check_weights(const json& value) {
  if (value.is_string()) return to_lower(value.get<std::string>()) == "uniform";
  if (!value.is_array() || value.empty()) return false;
  for (const json& w : value)
    if (!w.is_number() || !std::isfinite(w.get<double>()) || w.get<double>() < 0) return false;
  return true;
}

// Checks (and normalises) one value; true when it is valid.
bool check_value(const KeySpec& spec, json& value) {
  if (value.is_null()) return spec.nullable;
  switch (spec.kind) {
    case Kind::kString:
      return value.is_string();
    case Kind::kBool:
      return value.is_boolean();
    case Kind::kInt:
      if (!value.is_number_integer()) return false;
      return value.is_number_unsigned() ? in_range(spec, static_cast<double>(value.get<uint64_t>()))
                                        : in_range(spec, static_cast<double>(value.get<int64_t>()));
    case Kind::kNumber:
      return value.is_number() && in_range(spec, value.get<double>());
    case Kind::kEnum:
      if (!value.is_string()) return false;
      for (const std::string& choice : spec.choices) {
        if (to_lower(choice) == to_lower(value.get<std::string>())) {
          value = choice;
          return true;
        }
      }
      return false;
    case Kind::kStringOrList:
      if (value.is_string()) return !trim(value.get<std::string>()).empty();
      if (!value.is_array() || value.empty()) return false;
      for (const json& item : value)
        if (!item.is_string() || trim(item.get<std::string>()).empty()) return false;
      return true;
    case Kind::kSection:
      return value.is_object();
    case Kind::kServerList:
      if (!value.is_array() || value.empty()) return false;
      for (const json& item : value)
        if (!item.is_object()) return false;
      return true;
    case Kind::kWeights:
      if (!check_weights(value)) return false;
      if (value.is_string()) value = "uniform";
      return true;
  }
  return false;
}

struct Checker {
  Layer& layer;
  std::vector<std::string>* errors;
  std::set<std::string> bad;  // internal paths that failed their own check

  const Origin* origin(const std::string& path) const { return find_origin(layer.origins, path); }

  void fail(const std::string& path, const std::string& what) { fail_at(path, what, path); }

  // Reports `path` with the origin of `origin_path` (e.g. the server map holding a missing key).
  void fail_at(const std::string& path, const std::string& what, const std::string& origin_path) {
    bad.insert(path);
    errors->push_back("'" + display_path(path) + "' " + what + where(origin(origin_path)));
  }

  void check_all() {
    for (const KeySpec& spec : schema()) {
      for (const std::string& path : instances(layer.tree, spec)) {
        json* value = find_node(layer.tree, path);
        if (value == nullptr) continue;
        if (!check_value(spec, *value))
          fail(path,
               "must be " + describe_expectation(spec) + ", got '" + format_value(*value) + "'");
      }
    }
  }

  bool ok(const std::string& path) const { return !bad.count(path) && find_node(layer.tree, path); }

  void check_weights_length(const std::string& key, size_t servers) {
    if (!ok(key)) return;
    const json& w = *find_node(layer.tree, key);
    if (!w.is_array()) return;
    if (w.size() != servers) {
      fail(key, strprintf("has %zu weight(s) but inference.servers has %zu server(s): give one "
                          "weight per server, or 'uniform'",
                          w.size(), servers));
      return;
    }
    double sum = 0;
    for (const json& x : w) sum += x.get<double>();
    if (sum <= 0) fail(key, "must not be all 0: at least one server needs a positive weight");
  }

  void check_server(const std::string& path, bool needed) {
    std::string type_path = child_path(path, "server_type");
    if (!ok(type_path)) return;
    std::string type = find_node(layer.tree, type_path)->get<std::string>();
    auto is_unset = [&](const std::string& key) {
      std::string p = child_path(path, key);
      const json* v = find_node(layer.tree, p);
      return ok(p) && (v->is_null() || (v->is_string() && trim(v->get<std::string>()).empty()));
    };
    if (!needed) return;
    // Point at the key when a layer set it (to null), else at the server map that lacks it.
    auto blame = [&](const std::string& key) {
      std::string p = child_path(path, key);
      const Origin* o = origin(p);
      return o && o->source != kBuiltIn.source ? p : path;
    };
    if (type == "replay" && is_unset("replay_path"))
      fail_at(child_path(path, "replay_path"),
              "must be set for a replay server: a folder of recorded answers or job:<job_name>",
              blame("replay_path"));
    if (type != "replay" && is_unset("model_name"))
      fail_at(child_path(path, "model_name"), "must be set for an " + type + " server",
              blame("model_name"));
  }

  void check_cross() {
    const json* servers = find_node(layer.tree, "inference.servers");
    if (ok("inference.servers") && servers->is_array()) {
      for (size_t i = 0; i < servers->size(); ++i)
        check_server("inference.servers." + std::to_string(i), true);
      check_weights_length("inference.weights", servers->size());
      check_weights_length("inference.weights_warmstart", servers->size());
    }
    bool feedback = ok("use_feedback_llm") &&
                    find_node(layer.tree, "use_feedback_llm")->is_boolean() &&
                    find_node(layer.tree, "use_feedback_llm")->get<bool>();
    if (ok("feedback_llm_config")) check_server("feedback_llm_config", feedback);
    if (ok("eval_config.min_samples") && ok("eval_config.max_samples")) {
      int64_t lo = find_node(layer.tree, "eval_config.min_samples")->get<int64_t>();
      int64_t hi = find_node(layer.tree, "eval_config.max_samples")->get<int64_t>();
      if (hi < lo)
        fail("eval_config.max_samples",
             strprintf("must be >= eval_config.min_samples (%lld), got '%lld'",
                       static_cast<long long>(lo), static_cast<long long>(hi)));
    }
  }
};

// api_key_env per server: the provider's default only for the provider's own API (api_keys.h).
void fill_derived(Layer& layer) {
  for (const std::string& path : server_map_paths(layer.tree)) derive_api_key_env(layer, path);
}

}  // namespace

void finish_tree(Layer& layer, std::vector<std::string>* errors) {
  fill_defaults(layer);
  Checker checker{layer, errors, {}};
  checker.check_all();
  checker.check_cross();
  fill_derived(layer);
}

}  // namespace kf::cfg

namespace kf {

Config ConfigAccess::make(cfg::Layer layer, std::vector<std::string> notes) {
  Config config;
  assign(config, std::move(layer));
  config.notes_ = std::move(notes);
  return config;
}

void ConfigAccess::assign(Config& config, cfg::Layer layer) {
  config.tree_ = std::move(layer.tree);
  config.origins_ = std::move(layer.origins);
}

cfg::Layer ConfigAccess::layer(const Config& config) {
  cfg::Layer layer;
  layer.tree = config.tree_;
  layer.origins = config.origins_;
  return layer;
}

}  // namespace kf
