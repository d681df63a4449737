// Code extraction from an LLM answer: <lang> tags, then fenced blocks, then a heuristic for bare
// C-like code (DESIGN.md §10).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lang/lang.h"
#include "util/status.h"

namespace kf {

struct Extraction {
  std::vector<std::string> codes;  // one per EVOLVE block, marker lines stripped
  std::string method;              // "tag <cuda>", "fence ```cuda", "fence", "heuristic"
  bool unterminated = false;       // the answer ended inside a fence/tag (likely cut off)
};

// Tiers, first match wins: language tags (<cuda>, <opencl>, ...), a generic <code> tag, fences
// named for the language (```cuda), fences named for a related C-family language (```cpp for
// CUDA), any fence, then the longest run of code-looking lines. With num_blocks == 1 the longest
// block of the winning tier is taken; with n > 1 the first n in answer order, where `block=k`
// (fence info string) or `<cuda block="k">` puts a block in slot k (1-based). 0 counts as 1.
Result<Extraction> extract_code(std::string_view answer, Language language, size_t num_blocks = 1);

// Removes [EVOLVE_START]-style marker comments (any comment style); a line left empty is dropped.
std::string strip_block_markers(std::string_view code);

}  // namespace kf
