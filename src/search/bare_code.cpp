// Recognising code outside fences: the line classifier and the run finder.
#include "search/bare_code.h"

#include <cctype>

#include "util/strings.h"

namespace kf {
namespace {

bool is_strong_code(const std::string& trimmed) {
  return !trimmed.empty() &&
         (trimmed.find_first_of("{}") != std::string::npos || trimmed.back() == ';');
}

}  // namespace

bool looks_like_code(std::string_view line, bool after_code) {
  const std::string t = trim(line);
  if (t.empty()) return false;
  if (t[0] == '#') {
    const std::string directive = trim(std::string_view(t).substr(1));
    for (std::string_view d :
         {"include", "define", "pragma", "if", "endif", "else", "elif", "undef"}) {
      if (starts_with(directive, d)) return true;
    }
    return false;  // a Markdown heading
  }
  if (starts_with(t, "//") || starts_with(t, "/*") || starts_with(t, "*/")) return true;
  if (is_strong_code(t)) return true;
  for (std::string_view k : {"__global__", "__kernel", "__device__", "for (", "for(", "while ("}) {
    if (t.find(k) != std::string::npos) return true;
  }
  const char last = t.back();
  const bool continues = last == ',' || last == '(' || last == ')' || last == '\\' ||
                         ends_with(t, "&&") || ends_with(t, "||");
  return after_code && (continues || std::isspace(static_cast<unsigned char>(line[0])));
}

std::vector<std::vector<std::string>> find_bare_code(std::string_view text) {
  std::vector<std::vector<std::string>> runs;
  const std::vector<std::string> lines = split_lines(text);
  size_t i = 0;
  while (i < lines.size()) {
    if (!looks_like_code(lines[i], false)) {
      ++i;
      continue;
    }
    const size_t start = i;
    size_t last = i;
    int code_lines = 0, strong = 0;
    for (; i < lines.size(); ++i) {
      if (trim(lines[i]).empty()) continue;
      if (!looks_like_code(lines[i], true)) break;  // a prose paragraph ends the run
      last = i;
      ++code_lines;
      strong += is_strong_code(trim(lines[i]));
    }
    if (code_lines >= 2 && strong > 0)
      runs.emplace_back(lines.begin() + start, lines.begin() + last + 1);
  }
  return runs;
}

}  // namespace kf
