// Command-line overrides: classifies arguments and turns value text into typed JSON.
#include "config/overrides.h"

#include "config/schema.h"
#include "config/tree.h"
#include "config/yaml_reader.h"
#include "util/strings.h"

namespace kf::cfg {

using nlohmann::json;

Origin Override::origin() const {
  return Origin{"command line argument '" + arg + "'", 0};
}

std::vector<Override> parse_overrides(const std::vector<std::string>& args,
                                      const std::set<std::string>& groups,
                                      std::vector<std::string>* errors) {
  std::vector<Override> out;
  for (const std::string& arg : args) {
    Override o;
    o.arg = arg;
    std::string_view text = arg;
    std::string key;
    if (!text.empty() && text[0] == '~') {
      o.unset = true;
      key = trim(text.substr(1));
    } else {
      size_t eq = text.find('=');
      if (eq == std::string_view::npos) {
        errors->push_back("command line argument '" + arg +
                          "' is not an override: expected key=value, a.b.c=value, group=option "
                          "or +experiment=name");
        continue;
      }
      key = trim(text.substr(0, eq));
      o.value = std::string(text.substr(eq + 1));
    }
    // `+key` (Hydra's "add") means the same as `key` here: every key already exists.
    if (!o.unset && !key.empty() && key[0] == '+') key = key.substr(1);
    if (!o.unset && key == "experiment") {
      o.type = Override::Type::kExperiment;
      o.option = trim(o.value);
      out.push_back(std::move(o));
      continue;
    }
    if (!o.unset && groups.count(key)) {
      o.type = Override::Type::kGroup;
      o.path = key;
      o.option = trim(o.value);
      out.push_back(std::move(o));
      continue;
    }
    std::vector<std::string> segments;
    if (!split_path(key, &segments)) {
      errors->push_back("command line argument '" + arg + "' has a malformed key '" + key +
                        "': expected names separated by '.', e.g. eval_config.noise_target");
      continue;
    }
    o.type = Override::Type::kSet;
    o.path = join_path(segments);
    out.push_back(std::move(o));
  }
  return out;
}

namespace {

bool is_quoted(std::string_view s) {
  return s.size() >= 2 &&
         ((s.front() == '\'' && s.back() == '\'') || (s.front() == '"' && s.back() == '"'));
}

bool parse_flow(std::string_view text, const std::string& path, json* out, std::string* error,
                const Override& o) {
  std::string why;
  if (parse_yaml_value(text, path, out, &why)) return true;
  *error = "cannot parse the value of command line argument '" + o.arg + "': " + why;
  return false;
}

}  // namespace

bool parse_override_value(const Override& o, json* out, std::string* error) {
  if (o.unset) {
    *out = nullptr;
    return true;
  }
  // Values end up in JSON (the job record, results.json), which holds text only.
  if (!is_valid_utf8(o.value)) {
    *error = "'" + display_path(o.path) + "' is not valid UTF-8 text (command line argument '" +
             escape_invalid_utf8(o.arg) + "'), got '" + escape_invalid_utf8(o.value) +
             "': pass it as UTF-8";
    return false;
  }
  std::string text = trim(o.value);
  if (text.empty() || text == "null" || text == "~") {
    *out = nullptr;
    return true;
  }
  const KeySpec* spec = find_spec(schema_path(o.path));
  if (spec == nullptr) return parse_flow(text, o.path, out, error, o);
  if (is_quoted(text)) return parse_flow(text, o.path, out, error, o);
  switch (spec->kind) {
    case Kind::kString:
    case Kind::kEnum:
      *out = text;  // as typed: `job_name=run: 2` is the name "run: 2"
      return true;
    case Kind::kStringOrList:
      if (text[0] == '[') return parse_flow(text, o.path, out, error, o);
      *out = text;  // `gpu_arch=lnl,ptl,bmg` stays a string; consumers split it
      return true;
    case Kind::kWeights:
      if (text[0] != '[' && text.find(',') != std::string::npos) {
        json list = json::array();
        for (const std::string& part : split(text, ','))
          list.push_back(resolve_plain_scalar(trim(part)));
        *out = std::move(list);
        return true;
      }
      return parse_flow(text, o.path, out, error, o);
    default:
      return parse_flow(text, o.path, out, error, o);
  }
}

}  // namespace kf::cfg
