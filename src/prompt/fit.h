// Cutting an oversized prompt part to a size: code cut in the middle at line ends, with a marker
// comment saying how much is missing; several EVOLVE blocks sharing one budget.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lang/lang.h"

namespace kf {

// The line-comment opener of code in `language`: "#" for triton, "//" otherwise.
std::string_view code_comment(Language language);

// `text` when it fits in `max_chars`; else its head and its tail around one marker line
// "<comment> [... N characters (L lines) cut here to fit the prompt size limit ...]".
// Cuts fall on line ends when one is near and never inside a UTF-8 character. The result holds at
// most `max_chars` characters, except that it is never shorter than the marker line.
std::string cut_middle(const std::string& text, size_t max_chars, std::string_view comment);

// `codes` cut so that together they hold at most `max_chars` characters (marker lines aside),
// each block keeping a share of the budget proportional to its size.
std::vector<std::string> cut_codes(const std::vector<std::string>& codes, size_t max_chars,
                                   std::string_view comment);

// The summed size of `parts`.
size_t total_size(const std::vector<std::string>& parts);

}  // namespace kf
