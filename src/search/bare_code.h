// Recognising code outside any fence or tag: a line classifier and the runs of code-looking lines
// it finds between prose paragraphs (the last extraction tier).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kf {

// Whether a line reads like C-family code rather than prose: braces, a trailing ';', a
// preprocessor directive, kernel qualifiers, loops. With `after_code`, continuation lines
// (indented, or ending in ',' '(' ')' '\' '&&' '||') count too: prose can end in ')'.
bool looks_like_code(std::string_view line, bool after_code);

// Maximal runs of code-looking lines, blank lines allowed inside and trimmed at the edges, in
// text order. A run needs two code lines, one of them with a brace or a trailing ';'.
std::vector<std::vector<std::string>> find_bare_code(std::string_view text);

}  // namespace kf
