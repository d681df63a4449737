// Config::show: the composed tree as YAML, keys in schema order, each leaf with its origin.
#include <algorithm>

#include "config/config.h"
#include "config/schema.h"
#include "config/tree.h"
#include "config/yaml_reader.h"
#include "util/strings.h"

namespace kf {

using nlohmann::json;

namespace {

constexpr size_t kCommentColumn = 44;

// Plain when YAML would read the text back as the same string, else double-quoted (JSON escapes
// are valid YAML).
std::string yaml_string(const std::string& text) {
  bool plain = !text.empty() && text.front() != ' ' && text.back() != ' ' &&
               std::string_view("-?:,[]{}#&*!|>'\"%@`").find(text.front()) == std::string::npos &&
               text.find(": ") == std::string::npos && text.find(" #") == std::string::npos &&
               text.find('\n') == std::string::npos && text.back() != ':' &&
               cfg::resolve_plain_scalar(text).is_string();
  return plain ? text : json(text).dump();
}

std::string scalar(const json& value) {
  if (value.is_string()) return yaml_string(value.get<std::string>());
  return value.dump();
}

bool is_flat_list(const json& value) {
  return value.is_array() &&
         std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_primitive(); });
}

class Printer {
 public:
  explicit Printer(const std::map<std::string, Origin>& origins) : origins_(origins) {}

  void map(const json& node, const std::string& path, int indent, bool first_dash = false) {
    std::vector<std::string> keys;
    for (const auto& item : node.items()) keys.push_back(item.key());
    std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
      return cfg::spec_index(cfg::schema_path(cfg::child_path(path, a))) <
             cfg::spec_index(cfg::schema_path(cfg::child_path(path, b)));
    });
    bool first = true;
    for (const std::string& key : keys) {
      std::string lead(indent, ' ');
      if (first_dash && first) lead = std::string(indent - 2, ' ') + "- ";
      first = false;
      entry(lead + key + ":", node.at(key), cfg::child_path(path, key), indent);
    }
  }

  std::string text() const { return out_; }

 private:
  void entry(const std::string& head, const json& value, const std::string& path, int indent) {
    if (value.is_object() && !value.empty()) {
      out_ += head + "\n";
      map(value, path, indent + 2);
    } else if (value.is_array() && !is_flat_list(value)) {
      out_ += head + "\n";
      for (size_t i = 0; i < value.size(); ++i) {
        std::string cp = cfg::child_path(path, std::to_string(i));
        const json& item = value[i];
        if (item.is_object() && !item.empty())
          map(item, cp, indent + 4, true);
        else
          leaf(std::string(indent + 2, ' ') + "- ", item, cp);
      }
    } else {
      leaf(head + " ", value, path);
    }
  }

  void leaf(const std::string& head, const json& value, const std::string& path) {
    std::string line = head;
    if (value.is_array()) {
      std::vector<std::string> items;
      for (const json& v : value) items.push_back(scalar(v));
      line += "[" + join(items, ", ") + "]";
    } else if (value.is_object()) {
      line += "{}";
    } else {
      line += scalar(value);
    }
    const Origin* origin = cfg::find_origin(origins_, path);
    if (origin) {
      line += std::string(line.size() < kCommentColumn ? kCommentColumn - line.size() : 2, ' ');
      line += "# " + origin->describe();
    }
    out_ += line + "\n";
  }

  const std::map<std::string, Origin>& origins_;
  std::string out_;
};

}  // namespace

std::string Config::show() const {
  Printer printer(origins_);
  printer.map(tree_, "", 0);
  return printer.text();
}

}  // namespace kf
