// Earlier attempts as a prompt shows them: what each changed (a unified diff of its EVOLVE blocks
// against the code it started from), how it ended (verdict, the error lines of its log or the
// feedback model's summary), and which mistakes were made more than once.
#include "prompt/attempts.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "eval/verdict.h"
#include "prompt/sections.h"
#include "util/line_diff.h"
#include "util/strings.h"

namespace kf {
namespace {

constexpr size_t kMaxErrorLine = 300;
constexpr size_t kMaxSummary = 300;
constexpr size_t kMaxAttemptReason = 600;

std::string cut_line(const std::string& line, size_t max_chars) {
  std::string t = trim(line);
  if (t.size() <= max_chars) return t;
  size_t end = max_chars;
  while (end > 0 && (static_cast<unsigned char>(t[end]) & 0xC0) == 0x80) --end;
  return t.substr(0, end) + " [...]";
}

bool has_error_word(const std::string& lower) {
  return lower.find("error") != std::string::npos;
}

// The diff of every EVOLVE block, labelled when there are several.
std::string codes_diff(const std::vector<std::string>& before,
                       const std::vector<std::string>& after) {
  std::string out;
  size_t n = std::max(before.size(), after.size());
  for (size_t i = 0; i < n; ++i) {
    std::string d =
        unified_diff(i < before.size() ? before[i] : "", i < after.size() ? after[i] : "", 2);
    if (d.empty()) continue;
    if (n > 1) out += strprintf("# EVOLVE block %zu\n", i + 1);
    out += d;
  }
  return out;
}

}  // namespace

std::string first_error_line(int verdict, const std::string& reason, const std::string& eval_log) {
  if (verdict == kCorrect) return "";
  std::vector<std::string> lines = split_lines(eval_log);
  // A compiler's or runtime's diagnostic ("file:3:5: error: ...", "error: ...") first, then any
  // line naming an error; the log's own "verdict:" line repeats the reason.
  for (int pass = 0; pass < 2; ++pass) {
    for (const std::string& line : lines) {
      std::string lower = to_lower(line);
      if (starts_with(lower, "verdict:") || starts_with(lower, "== ")) continue;
      bool diagnostic = lower.find("error:") != std::string::npos || lower.find("error ") == 0 ||
                        lower.find("fatal error") != std::string::npos;
      if (pass == 0 ? diagnostic : has_error_word(lower)) return cut_line(line, kMaxErrorLine);
    }
    if (verdict != kCompileError) break;  // other failures: their reason says it best
  }
  return cut_line(split_lines(trim(reason)).empty() ? "" : split_lines(trim(reason))[0],
                  kMaxErrorLine);
}

std::string mistake_key(const std::string& line) {
  std::string out;
  bool space = false;
  std::string lower = to_lower(line);
  for (size_t i = 0; i < lower.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(lower[i]);
    if (std::isspace(c)) {
      space = !out.empty();
      continue;
    }
    // A path keeps its last component: the same error in another work folder is the same.
    if (c == '/') {
      size_t start = out.find_last_of(" '\"(`");
      out.erase(start == std::string::npos ? 0 : start + 1);
      continue;
    }
    if (space) out += ' ';
    space = false;
    if (std::isdigit(c)) {
      while (i + 1 < lower.size() && std::isdigit(static_cast<unsigned char>(lower[i + 1]))) ++i;
      out += '#';
      continue;
    }
    out += static_cast<char>(c);
  }
  return out;
}

std::string cut_diff(const std::string& diff, size_t max_chars) {
  if (diff.size() <= max_chars) return diff;
  std::vector<std::string> lines = split_lines(diff);
  std::string out;
  size_t kept = 0;
  for (const auto& line : lines) {
    // Room for the closing note.
    if (out.size() + line.size() + 1 + 40 > max_chars) break;
    out += line + "\n";
    ++kept;
  }
  size_t rest = lines.size() - kept;
  return out + strprintf("[... %zu more diff %s ...]\n", rest, rest == 1 ? "line" : "lines");
}

std::string attempt_diff(const PromptAttempt& a) {
  bool any_code = false;
  for (const auto& c : a.kernel.codes) any_code = any_code || !trim(c).empty();
  return any_code ? codes_diff(a.parent_codes, a.kernel.codes) : "";
}

AttemptsView attempts_view(const PromptInputs& in, const std::vector<std::string>& diffs,
                           size_t count, size_t budget) {
  AttemptsView view;
  count = std::min(count, in.attempts.size());
  if (count == 0) return view;

  // The mistakes made more than once: among the attempts shown and a failed current kernel.
  std::map<std::string, std::vector<std::string>> seen;  // key -> where ("iteration 2", ...)
  std::map<std::string, std::string> shown_line;
  std::vector<std::string> keys(count);
  auto note = [&](const std::string& line, const std::string& where) -> std::string {
    if (line.empty()) return "";
    std::string key = mistake_key(line);
    if (!shown_line.count(key)) shown_line[key] = line;
    seen[key].push_back(where);
    return key;
  };
  for (size_t i = 0; i < count; ++i) {
    const PromptKernel& k = in.attempts[i].kernel;
    keys[i] = note(first_error_line(k.verdict, k.reason, k.eval_log),
                   strprintf("iteration %d", in.attempts[i].trial));
  }
  if (in.parent)
    note(first_error_line(in.parent->verdict, in.parent->reason, in.parent->eval_log),
         "the current kernel");
  std::vector<std::string> order;  // repeated keys in the order first met
  for (size_t i = 0; i < count; ++i)
    if (!keys[i].empty() && seen[keys[i]].size() > 1 &&
        std::find(order.begin(), order.end(), keys[i]) == order.end())
      order.push_back(keys[i]);
  for (const auto& key : order)
    view.repeats += strprintf("- %zu times (%s): `%s`\n", seen[key].size(),
                              join(seen[key], ", ").c_str(), shown_line[key].c_str());
  if (!view.repeats.empty()) view.repeats.pop_back();  // the template ends the list's line

  // Each attempt's share of the budget; its diff and its log take two fifths each.
  const size_t share = budget / count;
  const size_t part = share * 2 / 5;
  for (size_t i = 0; i < count; ++i) {
    const PromptAttempt& a = in.attempts[i];
    const PromptKernel& k = a.kernel;
    TemplateValues v = common_values(in);
    v["number"] = std::to_string(i + 1);
    v["trial"] = std::to_string(a.trial);
    v["verdict"] = std::to_string(k.verdict);
    v["verdict_name"] = std::string(verdict_name(k.verdict));
    v["reason"] = cut_line(k.reason, kMaxAttemptReason);
    v["speedup"] = k.speedup ? format_speedup(k.speedup) : "";
    v["parent_speedup"] = a.parent_speedup ? format_speedup(a.parent_speedup) : "";
    v["not_faster"] = k.verdict == kCorrect ? "yes" : "";
    v["model"] = k.model;
    v["templates"] = k.templates;
    v["summary"] = cut_line(a.summary, kMaxSummary);
    v["from_parent"] = a.from_parent ? "yes" : "";
    v["repeated"] = !keys[i].empty() && seen[keys[i]].size() > 1 ? "yes" : "";
    v["diff"] = i < diffs.size() ? trim(cut_diff(diffs[i], part)) : "";
    KernelLog log = kernel_log(k, part);
    v["log"] = log.log;
    v["feedback"] = log.feedback;
    view.items.push_back(std::move(v));
  }
  return view;
}

}  // namespace kf
