// Small string helpers shared by every subsystem.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kf {

std::vector<std::string> split(std::string_view text, char sep);
std::vector<std::string> split_lines(std::string_view text);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
bool ends_with(std::string_view text, std::string_view suffix);
std::string to_lower(std::string_view text);
std::string to_upper(std::string_view text);
std::string replace_all(std::string text, std::string_view from, std::string_view to);

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate nearest to `word`, or "" when none is reasonably close.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

// Keeps the first `head` and last `tail` bytes, with a note of what was cut in between.
std::string truncate_middle(std::string_view text, size_t head, size_t tail);

// True when `bytes` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view bytes);
// `bytes` as valid UTF-8 text: well-formed sequences are kept, every other byte is written as
// `\xNN` (so a file's bytes can be shown, stored in JSON or sent in a prompt without loss of
// position). Valid input comes back unchanged.
std::string escape_invalid_utf8(std::string_view bytes);

// printf-style formatting into a std::string.
std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace kf
