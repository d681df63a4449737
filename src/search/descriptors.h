// Behavioural descriptors of a kernel's source: memory, compute and parallelism optimisation
// levels, the coordinates of its MAP-Elites cell (DESIGN.md §10).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lang/lang.h"

namespace kf {

// Each axis is a level 0..3: the number of distinct optimisation features seen, capped at 3.
struct Descriptor {
  int memory = 0, compute = 0, parallelism = 0;
  std::string cell() const;  // "m1-c0-p2"
  bool operator==(const Descriptor&) const = default;
};

inline constexpr int kMaxDescriptorLevel = 3;

// Levels from the features found in `code` once comments and string literals are removed (the
// strings of inline asm statements still count: they hold the PTX).
Descriptor describe_code(std::string_view code, Language language);

// The features behind a descriptor, as "axis:feature" ("memory:shared", "parallelism:atomics"),
// in table order: for prompts and logs that say why a kernel sits in its cell.
std::vector<std::string> code_features(std::string_view code, Language language);

// `code` with comments and string literals blanked, whitespace collapsed, and spaces kept only
// between two identifier characters ("for ( i" -> "for(i"): the text features are matched on.
std::string normalise_code(std::string_view code, Language language);

}  // namespace kf
