// Paths into the config tree, origin bookkeeping, and the merge rule of composition.
#include "config/tree.h"

#include "util/strings.h"

namespace kf::cfg {

using nlohmann::json;

bool is_index(std::string_view segment) {
  if (segment.empty() || segment.size() > 9) return false;
  for (char c : segment)
    if (c < '0' || c > '9') return false;
  return true;
}

bool split_path(std::string_view dotted, std::vector<std::string>* segments) {
  segments->clear();
  if (dotted.empty()) return false;
  for (const std::string& part : split(dotted, '.')) {
    // "servers[0]" is the same as "servers.0".
    std::string_view rest = part;
    size_t bracket = rest.find('[');
    std::string_view name = rest.substr(0, bracket);
    if (name.empty()) return false;
    segments->emplace_back(name);
    while (bracket != std::string_view::npos) {
      size_t close = rest.find(']', bracket);
      if (close == std::string_view::npos) return false;
      std::string_view index = rest.substr(bracket + 1, close - bracket - 1);
      if (!is_index(index)) return false;
      segments->emplace_back(index);
      rest = rest.substr(close + 1);
      if (rest.empty()) break;
      if (rest[0] != '[') return false;
      bracket = 0;
    }
  }
  return true;
}

std::string join_path(const std::vector<std::string>& segments) {
  return join(segments, ".");
}

std::string child_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string path(parent);
  path += '.';
  path += key;
  return path;
}

std::string display_path(std::string_view internal) {
  std::string out;
  for (const std::string& seg : split(internal, '.')) {
    if (is_index(seg) && !out.empty()) {
      out += "[" + seg + "]";
    } else {
      if (!out.empty()) out += '.';
      out += seg;
    }
  }
  return out;
}

std::string schema_path(std::string_view internal) {
  std::string out;
  for (const std::string& seg : split(internal, '.')) {
    if (is_index(seg) && !out.empty()) {
      out += "[]";
    } else {
      if (!out.empty()) out += '.';
      out += seg;
    }
  }
  return out;
}

namespace {

template <typename J>
J* find_node_impl(J& tree, std::string_view internal) {
  J* node = &tree;
  if (internal.empty()) return node;
  for (const std::string& seg : split(internal, '.')) {
    if (node->is_object()) {
      auto it = node->find(seg);
      if (it == node->end()) return nullptr;
      node = &*it;
    } else if (node->is_array() && is_index(seg)) {
      size_t i = std::stoul(seg);
      if (i >= node->size()) return nullptr;
      node = &(*node)[i];
    } else {
      return nullptr;
    }
  }
  return node;
}

bool is_under(std::string_view path, std::string_view root) {
  if (root.empty()) return true;
  return path == root ||
         (path.size() > root.size() && starts_with(path, root) && path[root.size()] == '.');
}

}  // namespace

const json* find_node(const json& tree, std::string_view internal) {
  return find_node_impl(tree, internal);
}
json* find_node(json& tree, std::string_view internal) {
  return find_node_impl(tree, internal);
}

const Origin* find_origin(const OriginMap& origins, std::string_view internal) {
  std::string path(internal);
  while (true) {
    auto it = origins.find(path);
    if (it != origins.end()) return &it->second;
    if (path.empty()) return nullptr;
    size_t dot = path.rfind('.');
    path = dot == std::string::npos ? std::string() : path.substr(0, dot);
  }
}

void erase_origins_under(OriginMap& origins, std::string_view internal) {
  for (auto it = origins.begin(); it != origins.end();) {
    if (is_under(it->first, internal))
      it = origins.erase(it);
    else
      ++it;
  }
}

void copy_origins_under(const OriginMap& from, std::string_view internal, OriginMap& to) {
  for (const auto& [path, origin] : from) {
    if (is_under(path, internal)) to[path] = origin;
  }
}

namespace {

void merge_node(json& dst, const json& src, const std::string& path, OriginMap& dst_origins,
                const OriginMap& src_origins) {
  if (dst.is_object() && src.is_null()) return;
  if (dst.is_object() && src.is_object()) {
    if (!dst_origins.count(path)) {
      auto it = src_origins.find(path);
      if (it != src_origins.end()) dst_origins[path] = it->second;
    }
    for (const auto& [key, value] : src.items()) {
      std::string cp = child_path(path, key);
      auto it = dst.find(key);
      if (it != dst.end()) {
        merge_node(*it, value, cp, dst_origins, src_origins);
      } else {
        dst[key] = value;
        copy_origins_under(src_origins, cp, dst_origins);
      }
    }
    return;
  }
  dst = src;
  erase_origins_under(dst_origins, path);
  copy_origins_under(src_origins, path, dst_origins);
}

}  // namespace

void merge_into(Layer& dst, const json& src, const OriginMap& src_origins,
                const std::string& internal) {
  json* node = find_node(dst.tree, internal);
  if (node == nullptr) {
    replace_at(dst, internal, src, src_origins);
    return;
  }
  merge_node(*node, src, internal, dst.origins, src_origins);
}

void replace_at(Layer& dst, const std::string& internal, json value, const OriginMap& src_origins) {
  json* node = &dst.tree;
  if (!internal.empty()) {
    std::vector<std::string> segs = split(internal, '.');
    for (size_t i = 0; i < segs.size(); ++i) {
      const std::string& seg = segs[i];
      if (node->is_array() && is_index(seg)) {
        size_t index = std::stoul(seg);
        while (node->size() <= index) node->push_back(json::object());
        node = &(*node)[index];
      } else {
        if (!node->is_object()) *node = json::object();
        node = &(*node)[seg];
      }
    }
  }
  *node = std::move(value);
  erase_origins_under(dst.origins, internal);
  copy_origins_under(src_origins, internal, dst.origins);
}

}  // namespace kf::cfg
