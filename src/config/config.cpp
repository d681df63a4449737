// Config accessors, programmatic overrides, and the checks a run needs beyond the schema.
#include "config/config.h"

#include <algorithm>
#include <cstdint>

#include "config/schema.h"
#include "config/tree.h"
#include "config/validate.h"
#include "util/strings.h"

namespace kf {

using nlohmann::json;

std::string Origin::describe() const {
  if (source.empty()) return "unknown origin";
  return line > 0 ? source + ":" + std::to_string(line) : source;
}

namespace {

const json kNullJson = nullptr;

// Accepts "a.b.c", "a.b.0.c" and "a.b[0].c"; "" when malformed.
std::string internal_path(std::string_view dotted) {
  std::vector<std::string> segments;
  return cfg::split_path(dotted, &segments) ? cfg::join_path(segments) : std::string();
}

std::string scalar_text(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

const json& Config::at(std::string_view dotted) const {
  std::string path = internal_path(dotted);
  if (path.empty()) return kNullJson;
  const json* node = cfg::find_node(tree_, path);
  return node ? *node : kNullJson;
}

bool Config::has(std::string_view dotted) const {
  return !at(dotted).is_null();
}

std::string Config::get_string(std::string_view dotted, std::string fallback) const {
  const json& value = at(dotted);
  if (value.is_null()) return fallback;
  if (value.is_array()) {
    std::vector<std::string> parts;
    for (const json& item : value) parts.push_back(scalar_text(item));
    return join(parts, ",");
  }
  return scalar_text(value);
}

int64_t Config::get_int(std::string_view dotted, int64_t fallback) const {
  const json& value = at(dotted);
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number()) return static_cast<int64_t>(value.get<double>());
  return fallback;
}

double Config::get_double(std::string_view dotted, double fallback) const {
  const json& value = at(dotted);
  return value.is_number() ? value.get<double>() : fallback;
}

bool Config::get_bool(std::string_view dotted, bool fallback) const {
  const json& value = at(dotted);
  return value.is_boolean() ? value.get<bool>() : fallback;
}

std::vector<std::string> Config::get_list(std::string_view dotted) const {
  const json& value = at(dotted);
  std::vector<std::string> out;
  if (value.is_array()) {
    for (const json& item : value) out.push_back(scalar_text(item));
  } else if (value.is_string()) {
    for (const std::string& part : split(value.get<std::string>(), ',')) {
      std::string item = trim(part);
      if (!item.empty()) out.push_back(item);
    }
  } else if (!value.is_null()) {
    out.push_back(scalar_text(value));
  }
  return out;
}

Origin Config::origin(std::string_view dotted) const {
  std::string path = internal_path(dotted);
  const Origin* origin = path.empty() ? nullptr : cfg::find_origin(origins_, path);
  return origin ? *origin : Origin{};
}

Status Config::set(std::string_view dotted, json value, Origin origin) {
  std::string path = internal_path(dotted);
  if (path.empty())
    return Status::error("'" + std::string(dotted) + "' is not a key path (" + origin.describe() +
                         ")");
  if (!cfg::is_known_path(cfg::schema_path(path)))
    return Status::error(cfg::unknown_key_message(path, &origin));
  // Every list on the way must already hold the addressed element.
  std::vector<std::string> segs = split(path, '.');
  std::string prefix;
  for (const std::string& seg : segs) {
    const json* node = cfg::find_node(tree_, prefix);
    if (node == nullptr) break;
    if (node->is_array() && cfg::is_index(seg) && std::stoul(seg) >= node->size())
      return Status::error("'" + cfg::display_path(prefix) + "' has no element " + seg + " (" +
                           origin.describe() + ")");
    prefix = cfg::child_path(prefix, seg);
  }
  cfg::Layer layer = ConfigAccess::layer(*this);
  cfg::OriginMap origins = cfg::origins_for(value, path, origin);
  std::vector<std::string> errors;
  cfg::check_known_keys(value, path, origins, &errors);
  cfg::replace_at(layer, path, std::move(value), origins);
  cfg::finish_tree(layer, &errors);
  if (!errors.empty()) return Status::error(join(errors, "\n"));
  ConfigAccess::assign(*this, std::move(layer));
  return Status::ok();
}

namespace {

// Names become folder names (runs/<job_name>/): keep them to one plain path component.
std::string check_name(const Config& config, const std::string& key) {
  std::string name = config.get_string(key);
  if (name.empty()) return "";
  bool control = std::any_of(name.begin(), name.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (!is_valid_utf8(name))
    return "'" + key + "' is not valid UTF-8 text (" + config.origin(key).describe() + "), got '" +
           escape_invalid_utf8(name) +
           "': save the file as UTF-8 or pick a plain name (letters, digits, '_', '-', '.')";
  if (name == "." || name == ".." || name.find_first_of("/\\") != std::string::npos || control ||
      trim(name) != name)
    return "'" + key +
           "' must be a plain name usable as a folder name (no '/', not '.' or '..', "
           "no control characters, no leading or trailing spaces), got '" +
           escape_invalid_utf8(name) + "' (" + config.origin(key).describe() + ")";
  return "";
}

}  // namespace

Status validate_for_run(const Config& config) {
  std::vector<std::string> errors;
  for (const char* key : {"task_name", "job_name"}) {
    if (trim(config.get_string(key)).empty()) {
      errors.push_back(
          strprintf("'%s' is not set: set it in the task's config.yaml (%s: my_%s) "
                    "or on the command line (%s=my_%s)",
                    key, key, key == std::string("task_name") ? "task" : "job", key,
                    key == std::string("task_name") ? "task" : "job"));
    } else if (std::string bad = check_name(config, key); !bad.empty()) {
      errors.push_back(bad);
    }
  }
  // Bounds against slips that would cost money or swamp the machine (limits.* raises them).
  for (const char* key : {"branches_per_iteration", "max_iters", "llm_rate_limit"}) {
    std::string limit_key = std::string("limits.") + key;
    int64_t value = config.get_int(key), limit = config.get_int(limit_key, INT64_MAX);
    if (value <= limit) continue;
    std::string why = key == std::string("llm_rate_limit")
                          ? "each call in flight holds a thread and a connection"
                          : strprintf(
                                "every branch of every iteration is a paid LLM call: %lld x "
                                "%lld = %lld calls",
                                static_cast<long long>(config.get_int("max_iters")),
                                static_cast<long long>(config.get_int("branches_per_iteration")),
                                static_cast<long long>(config.get_int("max_iters") *
                                                       config.get_int("branches_per_iteration")));
    errors.push_back(strprintf(
        "'%s' is %lld (%s), above %s (%lld): %s. Lower it, or raise the limit (%s=%lld on the "
        "command line) if you mean it",
        key, static_cast<long long>(value), config.origin(key).describe().c_str(),
        limit_key.c_str(), static_cast<long long>(limit), why.c_str(), limit_key.c_str(),
        static_cast<long long>(value)));
  }
  std::string language = config.get_string("language");
  if (language.empty()) {
    errors.push_back(
        "'language' is not set and the task did not give one: set it in the task's config.yaml "
        "(language: CUDA) or on the command line (language=CUDA); one of CUDA, OCL, SYCL, "
        "triton, CPP");
  } else if (config.get_bool("prompt.allow_templated") &&
             !cfg::language_has_templated_example(language)) {
    // The exact text users of the Python KernelFoundry know (seed page).
    errors.push_back("AssertionError: Must provide example if allow_templated=True");
  }
  if (config.get_bool("prompt.parametrize_best", false) &&
      !config.get_bool("prompt.allow_templated")) {
    errors.push_back(
        "prompt.parametrize_best asks the model for a templated kernel, which needs "
        "prompt.allow_templated: true (" +
        config.origin("prompt.parametrize_best").describe() +
        "); use prompt=parametrize_best, which sets both");
  }
  if (!errors.empty()) return Status::error(join(errors, "\n"));
  return Status::ok();
}

std::vector<std::string> normalize_gpu_archs(const Config& config) {
  std::vector<std::string> archs;
  for (const std::string& arch : config.get_list("gpu_arch")) {
    std::string name = trim(arch);
    if (!name.empty() && std::find(archs.begin(), archs.end(), name) == archs.end())
      archs.push_back(name);
  }
  if (archs.empty()) archs.push_back("native");
  return archs;
}

}  // namespace kf
