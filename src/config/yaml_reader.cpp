// The yaml-cpp adapter: converts parsed YAML to JSON, records key lines, catches its exceptions.
// Messages quote the file's bytes escaped (`\xNN`) where they are not UTF-8.
#include "config/yaml_reader.h"

// GCC 12+ reports false "dangling pointer" warnings inside yaml-cpp 0.7's inline node code.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "config/schema.h"
#include "util/strings.h"

namespace kf::cfg {

using nlohmann::json;

namespace {

bool all_of_chars(std::string_view s, const char* allowed) {
  if (s.empty()) return false;
  for (char c : s)
    if (std::string_view(allowed).find(c) == std::string_view::npos) return false;
  return true;
}

bool looks_like_float(std::string_view s) {
  // [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE][-+]?[0-9]+ )?
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

// Far more values than any config holds. YAML aliases (`*a`) are expanded into copies here, so a
// few lines of nested aliases (a "billion laughs" document) would otherwise expand without bound.
constexpr size_t kMaxValues = 100000;

struct Converter {
  std::string source;
  Layer* layer;
  std::vector<std::string>* errors;
  size_t values = 0;  // converted so far; past kMaxValues the rest is skipped and reported

  bool over_budget() const { return values > kMaxValues; }
  std::string budget_error() const {
    return (source.empty() ? std::string("the value") : source) + " holds more than " +
           std::to_string(kMaxValues) +
           " values once its YAML aliases (*name) are expanded: write the values out, or use "
           "fewer aliases";
  }

  void record(const std::string& path, const YAML::Mark& mark) {
    layer->origins[path] = Origin{source, mark.line >= 0 ? mark.line + 1 : 0};
  }

  std::string where(const YAML::Mark& mark) const {
    return mark.line >= 0 ? source + ":" + std::to_string(mark.line + 1) : source;
  }

  json convert(const YAML::Node& node, const std::string& path) {
    if (++values > kMaxValues) return nullptr;
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return nullptr;
      case YAML::NodeType::Scalar: {
        // Values end up in JSON (the job record, results.json), which holds text only.
        if (!is_valid_utf8(node.Scalar())) {
          errors->push_back("the value of '" + display_path(path) + "' is not valid UTF-8 text (" +
                            where(node.Mark()) + "), got '" + escape_invalid_utf8(node.Scalar()) +
                            "': save the file as UTF-8");
          return nullptr;
        }
        const std::string& tag = node.Tag();
        if (tag == "!" || tag == "tag:yaml.org,2002:str") return node.Scalar();
        if (is_text_key(find_spec(schema_path(path)))) return node.Scalar();
        return resolve_plain_scalar(node.Scalar());
      }
      case YAML::NodeType::Sequence: {
        json array = json::array();
        size_t i = 0;
        for (const YAML::Node& element : node) {
          if (over_budget()) break;
          std::string cp = child_path(path, std::to_string(i++));
          record(cp, element.Mark());
          array.push_back(convert(element, cp));
        }
        return array;
      }
      case YAML::NodeType::Map: {
        json object = json::object();
        for (auto it = node.begin(); it != node.end() && !over_budget(); ++it) {
          const YAML::Node& key = it->first;
          if (!key.IsScalar()) {
            errors->push_back("a key must be a plain name (" + where(key.Mark()) + ")");
            continue;
          }
          std::string name = key.Scalar();
          if (!is_valid_utf8(name)) {
            errors->push_back("key '" + escape_invalid_utf8(name) + "' is not valid UTF-8 text (" +
                              where(key.Mark()) + "): save the file as UTF-8");
            continue;
          }
          std::string cp = child_path(path, name);
          if (object.contains(name)) {
            errors->push_back("duplicate key '" + escape_invalid_utf8(display_path(cp)) + "' (" +
                              where(key.Mark()) + ")");
            continue;
          }
          record(cp, key.Mark());
          object[name] = convert(it->second, cp);
        }
        return object;
      }
    }
    return nullptr;
  }
};

}  // namespace

json resolve_plain_scalar(const std::string& text) {
  const std::string& s = text;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  std::string_view digits = s;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (all_of_chars(digits, "0123456789")) {
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(s.data() + (s[0] == '+' ? 1 : 0), s.data() + s.size(), value);
    if (ec == std::errc() && ptr == s.data() + s.size()) return value;
    return std::strtod(s.c_str(), nullptr);  // too large for int64: keep the magnitude
  }
  if (!negative && digits.size() > 2 && (starts_with(digits, "0x") || starts_with(digits, "0o"))) {
    int base = digits[1] == 'x' ? 16 : 8;
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(digits.data() + 2, digits.data() + digits.size(), value, base);
    if (ec == std::errc() && ptr == digits.data() + digits.size()) return value;
  }
  if (looks_like_float(s)) return std::strtod(s.c_str(), nullptr);
  if (digits == ".inf" || digits == ".Inf" || digits == ".INF")
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
  return s;
}

bool read_yaml_layer(std::string_view text, const std::string& source, const std::string& prefix,
                     Layer* out, std::vector<std::string>* errors) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    errors->push_back(strprintf("%s:%d:%d: YAML syntax error: %s", source.c_str(), e.mark.line + 1,
                                e.mark.column + 1, escape_invalid_utf8(e.msg).c_str()));
    return false;
  } catch (const std::exception& e) {
    errors->push_back(source + ": cannot read YAML: " + escape_invalid_utf8(e.what()));
    return false;
  }
  *out = Layer();
  if (root.IsNull()) return true;  // an empty file, or only comments
  if (!root.IsMap()) {
    errors->push_back(source + ":" + std::to_string(root.Mark().line + 1) +
                      ": the top level must be a map of `key: value` lines");
    return false;
  }
  Converter converter{source, out, errors};
  try {
    json tree = converter.convert(root, prefix);
    if (converter.over_budget()) {
      errors->push_back(converter.budget_error());
      return false;
    }
    if (prefix.empty()) {
      out->tree = std::move(tree);
    } else {
      Layer placed;
      replace_at(placed, prefix, std::move(tree), out->origins);
      placed.origins[prefix] = Origin{source, 0};
      *out = std::move(placed);
    }
  } catch (const std::exception& e) {
    errors->push_back(source + ": cannot read YAML: " + escape_invalid_utf8(e.what()));
    return false;
  }
  return true;
}

bool parse_yaml_value(std::string_view text, const std::string& internal, json* out,
                      std::string* error) {
  try {
    YAML::Node node = YAML::Load(std::string(text));
    Layer scratch;
    std::vector<std::string> errors;
    Converter converter{"", &scratch, &errors};
    *out = converter.convert(node, internal);
    if (converter.over_budget()) errors.push_back(converter.budget_error());
    if (!errors.empty()) {
      *error = errors.front();
      return false;
    }
    return true;
  } catch (const YAML::ParserException& e) {
    *error = escape_invalid_utf8(e.msg);
    return false;
  } catch (const std::exception& e) {
    *error = escape_invalid_utf8(e.what());
    return false;
  }
}

}  // namespace kf::cfg
