// Cleans compiler output for the eval log: paths normalised, include stacks and foreign warnings
// dropped, long lines shortened, repeats removed, and a cap that keeps error groups first.
#include "eval/log_clean.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "util/strings.h"

namespace kf {
namespace {

struct Group {
  std::string file;
  std::string severity;  // "error", "warning", "note", "" for plain lines
  std::vector<std::string> lines;
};

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

size_t skip_digits(std::string_view s, size_t i) {
  while (i < s.size() && is_digit(s[i])) ++i;
  return i;
}

// The severity word at `i` after optional spaces ("fatal error" reads as "error"), else "".
std::string_view severity_at(std::string_view line, size_t i) {
  static constexpr std::string_view kSeverities[] = {"fatal error", "error", "warning", "note",
                                                     "remark"};
  while (i < line.size() && is_space(line[i])) ++i;
  for (std::string_view sev : kSeverities) {
    if (line.substr(i, sev.size()) != sev) continue;
    size_t end = i + sev.size();
    if (end < line.size() && is_word(line[end])) continue;
    return sev == "fatal error" ? std::string_view("error") : sev;
  }
  return {};
}

struct Diagnostic {
  std::string_view file, severity;
};

// gcc/clang "file:line[:col]: severity" and nvcc "file(line): severity". Matched by hand in one
// pass: the file name cannot hold ':', '(' or ')', so it ends at the first of them. (A backtracking
// std::regex recursed once per byte and overflowed the stack on one 60 KB line.)
std::optional<Diagnostic> match_diagnostic(std::string_view line) {
  if (line.empty() || line[0] == ':' || line[0] == '(' || line[0] == ')' || is_space(line[0]))
    return std::nullopt;
  size_t i = line.find_first_of(":()");
  if (i == std::string_view::npos || line[i] == ')') return std::nullopt;
  std::string_view file = line.substr(0, i);
  size_t digits_end = skip_digits(line, i + 1);
  if (digits_end == i + 1 || digits_end >= line.size()) return std::nullopt;
  std::string_view sev;
  if (line[i] == '(') {
    if (line[digits_end] == ')' && digits_end + 1 < line.size() && line[digits_end + 1] == ':')
      sev = severity_at(line, digits_end + 2);
  } else if (line[digits_end] == ':') {
    size_t col_end = skip_digits(line, digits_end + 1);
    if (col_end > digits_end + 1 && col_end < line.size() && line[col_end] == ':')
      sev = severity_at(line, col_end + 1);                    // file:line:col:
    if (sev.empty()) sev = severity_at(line, digits_end + 1);  // file:line:
  }
  if (sev.empty()) return std::nullopt;
  return Diagnostic{file, sev};
}

bool is_include_stack(std::string_view line) {
  if (starts_with(line, "In file included from ")) return true;
  if (!starts_with(line, "      ") || line.find(':') == std::string_view::npos) return false;
  size_t first = 0;
  while (first < line.size() && is_space(line[first])) ++first;
  return starts_with(line.substr(first), "from ");
}

bool is_own(const std::string& file, const std::vector<std::string>& own) {
  for (const auto& f : own) {
    if (file == f || ends_with(file, "/" + f)) return true;
  }
  return false;
}

// Where `text` may be cut at or before `pos` without splitting a UTF-8 sequence or a `\xNN` escape.
size_t safe_cut(std::string_view text, size_t pos) {
  pos = std::min(pos, text.size());
  while (pos > 0 && pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80)
    --pos;
  for (size_t k = 1; k <= 3 && k <= pos; ++k) {
    if (text[pos - k] == '\\' && pos - k + 1 < text.size() && text[pos - k + 1] == 'x') {
      pos -= k;
      break;
    }
  }
  return pos;
}

// A runaway line (a debug printf without a newline) keeps its head and says how much was cut;
// the result stays within `max` bytes.
std::string shorten(std::string_view line, size_t max) {
  if (line.size() <= max) return std::string(line);
  constexpr size_t kNoteRoom = 24;  // " [... 4194304 bytes cut]"
  size_t keep = safe_cut(line, max > 2 * kNoteRoom ? max - kNoteRoom : max / 2);
  return std::string(line.substr(0, keep)) + strprintf(" [... %zu bytes cut]", line.size() - keep);
}

// Output past the input bound keeps its head and tail (errors come first, crashes last).
std::string bound_input(const std::string& raw, size_t max) {
  if (raw.size() <= max) return raw;
  size_t head = max / 2, tail = max - head;
  return raw.substr(0, head) +
         strprintf("\n[... %zu bytes of output cut before cleaning ...]\n",
                   raw.size() - head - tail) +
         raw.substr(raw.size() - tail);
}

}  // namespace

std::string clean_compiler_output(const std::string& raw, const LogCleanOptions& options) {
  // Every step below is linear in the input; the input itself is bounded first, and bytes that
  // are not UTF-8 become `\xNN` so the log can go into JSON, a prompt or a terminal.
  std::string text = escape_invalid_utf8(bound_input(raw, options.max_input_chars));
  for (const auto& prefix : options.strip_prefixes) {
    if (prefix.empty()) continue;
    std::string p = ends_with(prefix, "/") ? prefix : prefix + "/";
    text = replace_all(std::move(text), p, "");
  }

  std::vector<Group> groups;
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (is_include_stack(line)) continue;
    if (auto d = match_diagnostic(line)) {
      groups.push_back({std::string(d->file),
                        std::string(d->severity),
                        {shorten(line, options.max_line_chars)}});
    } else if (!groups.empty() && !groups.back().severity.empty() &&
               (starts_with(line, " ") || starts_with(line, "\t") ||
                std::all_of(line.begin(), line.end(), is_space))) {
      groups.back().lines.push_back(shorten(line, options.max_line_chars));  // context, caret
    } else {
      groups.push_back({"", "", {shorten(line, options.max_line_chars)}});
    }
  }

  // Drop warnings (and their notes) from files that are not the package's, and repeats.
  std::vector<Group> kept;
  std::set<std::string> seen;
  bool last_dropped = false;
  for (auto& g : groups) {
    if (g.severity == "note" && last_dropped) continue;
    last_dropped = false;
    if ((g.severity == "warning" || g.severity == "note" || g.severity == "remark") &&
        !g.file.empty() && !is_own(g.file, options.own_files)) {
      last_dropped = true;
      continue;
    }
    if (!seen.insert(g.lines.front()).second) {
      last_dropped = true;
      continue;
    }
    kept.push_back(std::move(g));
  }

  auto size_of = [](const Group& g) {
    size_t n = 0;
    for (const auto& l : g.lines) n += l.size() + 1;
    return n;
  };
  size_t total = 0;
  for (const auto& g : kept) total += size_of(g);
  std::vector<bool> include(kept.size(), true);
  size_t omitted = 0;
  if (total > options.max_chars) {
    // Keep error groups first, in order, then plain lines and warnings while room remains. An
    // error's first line is kept even past the cap, up to twice the cap (a flood of distinct
    // errors must not make the log unbounded).
    std::fill(include.begin(), include.end(), false);
    const size_t hard_cap = 2 * options.max_chars;
    size_t used = 0;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < kept.size(); ++i) {
        bool error = kept[i].severity == "error";
        if (include[i] || (pass == 0) != error) continue;
        size_t n = size_of(kept[i]);
        if (used + n <= options.max_chars) {
          include[i] = true;
          used += n;
        } else if (error && used + kept[i].lines.front().size() + 1 <= hard_cap) {
          kept[i].lines.resize(1);
          include[i] = true;
          used += size_of(kept[i]);
        }
      }
    }
    for (size_t i = 0; i < kept.size(); ++i)
      if (!include[i]) omitted += kept[i].lines.size();
  }
  std::string out;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (!include[i]) continue;
    for (const auto& l : kept[i].lines) {
      out += l;
      out += '\n';
    }
  }
  if (omitted) out += strprintf("[%zu less important lines omitted]\n", omitted);
  return out;
}

}  // namespace kf
