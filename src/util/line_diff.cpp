// Unified line diff: common head and tail lines are set aside, the middle is aligned by a
// longest-common-subsequence table (bounded in size), and the result is grouped into hunks.
#include "util/line_diff.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "util/strings.h"

namespace kf {
namespace {

// Beyond this many table cells (lines before x lines after, in the changed middle) the middle is
// shown as replaced whole: a kernel rewritten from scratch reads no better as a fine diff.
constexpr size_t kMaxCells = 4'000'000;

struct Edit {
  char op;      // ' ', '-', '+'
  size_t line;  // index into before (' ', '-') or after ('+')
};

std::vector<Edit> align(const std::vector<std::string>& a, const std::vector<std::string>& b,
                        size_t a0, size_t a1, size_t b0, size_t b1) {
  std::vector<Edit> edits;
  size_t n = a1 - a0, m = b1 - b0;
  if (n * m > kMaxCells) {
    for (size_t i = a0; i < a1; ++i) edits.push_back({'-', i});
    for (size_t j = b0; j < b1; ++j) edits.push_back({'+', j});
    return edits;
  }
  // lcs[i][j]: the longest common subsequence of a[a0+i..a1) and b[b0+j..b1).
  std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) =
          a[a0 + i] == b[b0 + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[a0 + i] == b[b0 + j]) {
      edits.push_back({' ', a0 + i});
      ++i, ++j;
    } else if (j < m && (i == n || at(i, j + 1) >= at(i + 1, j))) {
      edits.push_back({'+', b0 + j++});
    } else {
      edits.push_back({'-', a0 + i++});
    }
  }
  // Removals before additions within a run of changes, as diff(1) prints them.
  for (size_t k = 0; k < edits.size();) {
    if (edits[k].op == ' ') {
      ++k;
      continue;
    }
    size_t end = k;
    while (end < edits.size() && edits[end].op != ' ') ++end;
    std::stable_partition(edits.begin() + static_cast<std::ptrdiff_t>(k),
                          edits.begin() + static_cast<std::ptrdiff_t>(end),
                          [](const Edit& e) { return e.op == '-'; });
    k = end;
  }
  return edits;
}

}  // namespace

std::string unified_diff(const std::string& before, const std::string& after, size_t context) {
  std::vector<std::string> a = split_lines(before), b = split_lines(after);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  if (head == a.size() && head == b.size()) return "";

  std::vector<Edit> edits;
  for (size_t i = 0; i < head; ++i) edits.push_back({' ', i});
  std::vector<Edit> middle = align(a, b, head, a.size() - tail, head, b.size() - tail);
  edits.insert(edits.end(), middle.begin(), middle.end());
  for (size_t i = a.size() - tail; i < a.size(); ++i) edits.push_back({' ', i});

  // Line numbers (0-based) of each edit in `before` and `after`.
  std::vector<size_t> pos_a(edits.size()), pos_b(edits.size());
  size_t la = 0, lb = 0;
  for (size_t k = 0; k < edits.size(); ++k) {
    pos_a[k] = la;
    pos_b[k] = lb;
    if (edits[k].op != '+') ++la;
    if (edits[k].op != '-') ++lb;
  }

  std::string out;
  size_t k = 0;
  while (k < edits.size()) {
    while (k < edits.size() && edits[k].op == ' ') ++k;
    if (k == edits.size()) break;
    size_t begin = k > context ? k - context : 0;
    // Extend while the next change is within 2 * context unchanged lines.
    size_t end = k;
    while (true) {
      while (end < edits.size() && edits[end].op != ' ') ++end;
      size_t same = end;
      while (same < edits.size() && edits[same].op == ' ') ++same;
      if (same < edits.size() && same - end <= 2 * context) {
        end = same;
        continue;
      }
      end = std::min(edits.size(), end + context);
      break;
    }
    size_t count_a = 0, count_b = 0;
    for (size_t e = begin; e < end; ++e) {
      if (edits[e].op != '+') ++count_a;
      if (edits[e].op != '-') ++count_b;
    }
    out += strprintf("@@ -%zu,%zu +%zu,%zu @@\n", pos_a[begin] + (count_a ? 1 : 0), count_a,
                     pos_b[begin] + (count_b ? 1 : 0), count_b);
    for (size_t e = begin; e < end; ++e) {
      const std::string& line = edits[e].op == '+' ? b[edits[e].line] : a[edits[e].line];
      out += std::string(1, edits[e].op) + line + "\n";
    }
    k = end;
  }
  return out;
}

}  // namespace kf
