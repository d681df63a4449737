// Fitting an eval log into a prompt: lines that report a problem are kept first, then the lines
// around them, then the log's head and tail; every cut is marked with the number of lines cut.
#include <algorithm>
#include <set>

#include "prompt/prompt.h"
#include "util/strings.h"

namespace kf {
namespace {

constexpr size_t kMaxLineChars = 400;  // one runaway line must not eat the budget

// Words that mark a line the model must see (compiler diagnostics, harness failures, flags).
bool is_problem_line(const std::string& line) {
  static const char* kWords[] = {
      "error",         "warning",       "fatal",  "fail",         "mismatch",  "verdict",
      "assert",        "exception",     "abort",  "segmentation", "timed out", "timeout",
      "out of bounds", "out_of_bounds", "poison", "wrong",        "illegal",   "suspect"};
  std::string lower = to_lower(line);
  for (const char* word : kWords)
    if (lower.find(word) != std::string::npos) return true;
  return false;
}

std::string omitted_note(size_t lines) {
  return strprintf("[... %zu %s omitted ...]\n", lines, lines == 1 ? "line" : "lines");
}

size_t note_size(size_t lines) {
  return lines == 0 ? 0 : omitted_note(lines).size();
}

}  // namespace

std::string trim_log_for_prompt(const std::string& log, size_t max_chars) {
  if (log.size() <= max_chars) return log;
  std::vector<std::string> lines = split_lines(log);
  for (auto& line : lines) {
    if (line.size() > kMaxLineChars) line = line.substr(0, kMaxLineChars) + " [...]";
  }
  const size_t n = lines.size();

  // Priority 0: problem lines; 1: the line before and two after each (carets, context);
  // 2: the rest, alternating from the head and the tail.
  std::vector<int> priority(n, 2);
  for (size_t i = 0; i < n; ++i) {
    if (!is_problem_line(lines[i])) continue;
    priority[i] = 0;
    if (i > 0) priority[i - 1] = std::min(priority[i - 1], 1);
    for (size_t j = i + 1; j < std::min(n, i + 3); ++j) priority[j] = std::min(priority[j], 1);
  }
  auto rank = [&](size_t i) {
    if (priority[i] < 2) return i;
    size_t from_end = n - 1 - i;
    return std::min(i, from_end) * 2 + (from_end < i ? 1 : 0);
  };
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return priority[a] != priority[b] ? priority[a] < priority[b] : rank(a) < rank(b);
  });

  // Greedy selection; the size is kept exact as gaps (and their notes) split.
  std::set<size_t> chosen;
  size_t size = note_size(n);
  for (size_t i : order) {
    auto next = chosen.lower_bound(i);
    size_t gap_end = next == chosen.end() ? n : *next;  // exclusive
    size_t gap_begin = next == chosen.begin() ? 0 : *std::prev(next) + 1;
    size_t grown = size + lines[i].size() + 1 - note_size(gap_end - gap_begin) +
                   note_size(i - gap_begin) + note_size(gap_end - i - 1);
    if (grown > max_chars) continue;
    chosen.insert(i);
    size = grown;
  }

  std::string out;
  size_t cursor = 0;
  for (size_t i : chosen) {
    if (i > cursor) out += omitted_note(i - cursor);
    out += lines[i] + "\n";
    cursor = i + 1;
  }
  if (cursor < n) out += omitted_note(n - cursor);
  if (out.size() > max_chars) out.resize(max_chars);  // only when even one note does not fit
  return out;
}

}  // namespace kf
