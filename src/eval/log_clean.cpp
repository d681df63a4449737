// Cleans compiler output for the eval log: paths normalised, include stacks and foreign warnings
// dropped, long lines shortened, repeats removed, and a cap that keeps error groups first.
#include "eval/log_clean.h"

#include <regex>
#include <set>

#include "util/strings.h"

namespace kf {
namespace {

struct Group {
  std::string file;
  std::string severity;  // "error", "warning", "note", "" for plain lines
  std::vector<std::string> lines;
};

// gcc/clang "file:line[:col]: severity:" and nvcc "file(line): severity:".
const std::regex& diagnostic_re() {
  static const std::regex re(
      R"(^([^:\s()][^:()]*?)(?::(\d+)(?::\d+)?|\((\d+)\)):\s*(fatal error|error|warning|note|remark)\b)");
  return re;
}

bool is_include_stack(const std::string& line) {
  return starts_with(line, "In file included from ") ||
         (starts_with(trim(line), "from ") && line.find(':') != std::string::npos &&
          starts_with(line, "      "));
}

bool is_own(const std::string& file, const std::vector<std::string>& own) {
  for (const auto& f : own) {
    if (file == f || ends_with(file, "/" + f)) return true;
  }
  return false;
}

std::string shorten(std::string line, size_t max) {
  if (line.size() <= max) return line;
  line.resize(max);
  return line + " [...]";
}

}  // namespace

std::string clean_compiler_output(const std::string& raw, const LogCleanOptions& options) {
  std::string text = raw;
  for (const auto& prefix : options.strip_prefixes) {
    if (prefix.empty()) continue;
    std::string p = ends_with(prefix, "/") ? prefix : prefix + "/";
    text = replace_all(std::move(text), p, "");
  }

  std::vector<Group> groups;
  for (const auto& line : split_lines(text)) {
    if (is_include_stack(line)) continue;
    std::smatch m;
    if (std::regex_search(line, m, diagnostic_re())) {
      std::string sev = m[4].str();
      if (sev == "fatal error") sev = "error";
      groups.push_back({m[1].str(), sev, {shorten(line, options.max_line_chars)}});
    } else if (!groups.empty() && !groups.back().severity.empty() &&
               (starts_with(line, " ") || starts_with(line, "\t") || trim(line).empty())) {
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
    // Keep error groups first, in order, then plain lines and warnings while room remains.
    std::fill(include.begin(), include.end(), false);
    size_t used = 0;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < kept.size(); ++i) {
        bool error = kept[i].severity == "error";
        if (include[i] || (pass == 0) != error) continue;
        size_t n = size_of(kept[i]);
        // An error's first line is always kept, even past the cap.
        if (used + n <= options.max_chars) {
          include[i] = true;
          used += n;
        } else if (error && kept[i].lines.size() > 1) {
          kept[i].lines.resize(1);
          include[i] = true;
          used += size_of(kept[i]);
        } else if (error) {
          include[i] = true;
          used += n;
        }
      }
    }
    for (size_t i = 0; i < kept.size(); ++i)
      if (!include[i]) omitted += kept[i].lines.size();
  }
  std::string out;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (!include[i]) continue;
    for (const auto& l : kept[i].lines) out += l + "\n";
  }
  if (omitted) out += strprintf("[%zu less important lines omitted]\n", omitted);
  return out;
}

}  // namespace kf
