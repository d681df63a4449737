// Hidden correctness shapes: near and random sizes drawn from a job's seed (splitmix64, so the
// same seed gives the same shapes with every standard library).
#include "eval/hidden_shapes.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace kf {
namespace {

using Json = nlohmann::ordered_json;  // keeps the dimensions in the task's order

// splitmix64: small, seedable, the same everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed ^ 0x6b66686964646e21ULL) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (lo <= hi).
  long between(long lo, long hi) {
    std::uint64_t span = std::uint64_t(hi) - std::uint64_t(lo) + 1;
    return span == 0 ? long(next()) : lo + long(next() % span);
  }

 private:
  std::uint64_t state_;
};

// Near values are preferred with a remainder modulo this that no listed value of the dimension
// has, and not 0 (no tail at all, which any vector width handles): code that handles only the
// listed shapes' tails (cols % 8 of 1, say) must meet another.
constexpr long kTailModulus = 8;

struct Range {
  long lo = 0, hi = 0;
  unsigned listed_tails = 1;  // bit k: some listed value v has v % kTailModulus == k; bit 0 set
};

// Per dimension: [max(1, min), max] over every listed shape that has it. A dimension whose
// listed values are all below 1 keeps its value (lo == hi).
std::map<std::string, Range> dim_ranges(const ListedShapes& listed) {
  std::map<std::string, Range> ranges;
  for (const auto* list : {&listed.correctness, &listed.benchmark}) {
    for (const ShapeDims& shape : *list) {
      for (const auto& [name, value] : shape) {
        auto [it, fresh] = ranges.try_emplace(name, Range{value, value});
        if (!fresh) {
          it->second.lo = std::min(it->second.lo, value);
          it->second.hi = std::max(it->second.hi, value);
        }
        if (value >= 0) it->second.listed_tails |= 1u << (value % kTailModulus);
      }
    }
  }
  for (auto& [name, r] : ranges) {
    if (r.hi >= 1)
      r.lo = std::max(1L, r.lo);
    else
      r.lo = r.hi;
  }
  return ranges;
}

// Element count, in double so large shapes cannot overflow.
double volume(const ShapeDims& shape) {
  double v = 1;
  for (const auto& d : shape) v *= double(d.second);
  return v;
}

// `value` moved by 1..7 up or down, staying in `r`, to a remainder modulo kTailModulus that no
// listed value has (nor 0) where such a move exists; unchanged when no move exists.
long near_value(long value, Range r, Rng& rng) {
  std::vector<long> options, new_tails;
  for (long k = 1; k <= 7; ++k) {
    for (long v : {value - k, value + k}) {
      if (v < r.lo || v > r.hi) continue;
      options.push_back(v);
      if ((r.listed_tails & (1u << (v % kTailModulus))) == 0) new_tails.push_back(v);
    }
  }
  if (options.empty()) return value;
  const std::vector<long>& from = new_tails.empty() ? options : new_tails;
  return from[rng.next() % from.size()];
}

bool contains(const std::vector<ShapeDims>& list, const ShapeDims& shape) {
  return std::find(list.begin(), list.end(), shape) != list.end();
}

}  // namespace

std::string shape_id(const ShapeDims& dims) {
  std::string out;
  for (const auto& [name, value] : dims) {
    if (!out.empty()) out += ',';
    out += name + "=" + std::to_string(value);
  }
  return out;
}

namespace {

Result<ShapeDims> dims_from_json(const Json& entry, const std::string& where) {
  if (!entry.is_object() || !entry.contains("dims") || !entry["dims"].is_object() ||
      entry["dims"].empty())
    return Result<ShapeDims>::error(where + " has no \"dims\" object of sizes");
  ShapeDims dims;
  for (const auto& [name, value] : entry["dims"].items()) {
    if (!value.is_number_integer())
      return Result<ShapeDims>::error(where + ": dimension '" + name + "' is not an integer");
    dims.emplace_back(name, value.get<long>());
  }
  return dims;
}

Result<std::vector<ShapeDims>> shapes_from_json(const Json& list, const std::string& where) {
  std::vector<ShapeDims> out;
  if (list.is_null()) return out;
  if (!list.is_array()) return Result<std::vector<ShapeDims>>::error(where + " is not a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto dims = dims_from_json(list[i], where + "[" + std::to_string(i) + "]");
    if (!dims) return dims.status();
    out.push_back(std::move(*dims));
  }
  return out;
}

}  // namespace

Result<ListedShapes> parse_shape_list(const std::string& list_output) {
  for (const std::string& line : split(list_output, '\n')) {
    std::string text = trim(line);
    if (text.empty() || text[0] != '{') continue;
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() ||
        j.value("format", std::string()) != "kernelfoundry-harness-shapes")
      continue;
    ListedShapes listed;
    auto correctness = shapes_from_json(j.value("correctness", Json()), "\"correctness\"");
    if (!correctness) return correctness.status();
    auto benchmark = shapes_from_json(j.value("benchmark_shapes", Json()), "\"benchmark_shapes\"");
    if (!benchmark) return benchmark.status();
    listed.correctness = std::move(*correctness);
    listed.benchmark = std::move(*benchmark);
    return listed;
  }
  return Result<ListedShapes>::error(
      "the task binary's --list output holds no shape list (a JSON line with \"format\": "
      "\"kernelfoundry-harness-shapes\"); was it built with an older harness?");
}

std::vector<ShapeDims> hidden_shapes(const ListedShapes& listed, std::uint64_t seed) {
  std::vector<ShapeDims> out;
  if (listed.correctness.empty()) return out;
  Rng rng(seed);
  std::map<std::string, Range> ranges = dim_ranges(listed);
  double limit = 0;
  for (const ShapeDims& s : listed.correctness) limit = std::max(limit, volume(s));
  auto fresh = [&](const ShapeDims& s) {
    return !contains(listed.correctness, s) && !contains(listed.benchmark, s) && !contains(out, s);
  };

  // Near each listed correctness shape. Of a few draws, the first within the size limit wins
  // (the smallest when none is), so a near shape costs about what its listed shape does.
  for (const ShapeDims& base : listed.correctness) {
    ShapeDims best;
    for (int attempt = 0; attempt < 16; ++attempt) {
      ShapeDims s = base;
      for (auto& [name, value] : s) value = near_value(value, ranges[name], rng);
      if (!fresh(s)) continue;
      if (best.empty() || volume(s) < volume(best)) best = s;
      if (volume(s) <= limit) break;
    }
    if (!best.empty()) out.push_back(std::move(best));
  }

  // One at random within the ranges, shrunk until it is no larger than the largest listed
  // correctness shape: every dimension at its lower bound is no larger than any listed shape,
  // so shrinking ends.
  const ShapeDims& order = listed.correctness.front();
  for (int attempt = 0; attempt < 16; ++attempt) {
    ShapeDims s = order;
    for (auto& [name, value] : s) value = rng.between(ranges[name].lo, ranges[name].hi);
    while (volume(s) > limit) {
      std::vector<std::size_t> shrinkable;
      for (std::size_t i = 0; i < s.size(); ++i)
        if (s[i].second > ranges[s[i].first].lo) shrinkable.push_back(i);
      if (shrinkable.empty()) break;
      std::size_t i = shrinkable[rng.next() % shrinkable.size()];
      s[i].second = rng.between(ranges[s[i].first].lo, s[i].second - 1);
    }
    if (volume(s) <= limit && fresh(s)) {
      out.push_back(std::move(s));
      break;
    }
  }
  return out;
}

std::string hidden_shapes_json(const std::vector<ShapeDims>& shapes) {
  if (shapes.empty()) return "";
  Json list = Json::array();
  for (const ShapeDims& s : shapes) {
    Json dims = Json::object();
    for (const auto& [name, value] : s) dims[name] = value;
    list.push_back(Json{{"id", shape_id(s)}, {"dims", dims}});
  }
  return list.dump();
}

Result<std::vector<ShapeDims>> parse_hidden_shapes_json(const std::string& text) {
  if (trim(text).empty()) return std::vector<ShapeDims>{};
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Result<std::vector<ShapeDims>>::error("the extra shapes are not valid JSON");
  return shapes_from_json(j, "the extra shapes");
}

}  // namespace kf
