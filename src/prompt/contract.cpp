// Builds the file views of the integration contract: the code around each EVOLVE block stays
// visible (includes, signatures, launch code) while the blocks themselves become marker lines.
#include "prompt/contract.h"

#include <algorithm>
#include <set>

#include "util/strings.h"

namespace kf {
namespace {

constexpr size_t kMaxHeaderLines = 200;  // a header longer than this is shown cut

std::string comment_prefix(std::string_view path) {
  return ends_with(path, ".py") ? "#" : "//";
}

std::string leading_space(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
  return std::string(line.substr(0, n));
}

std::string marker_text(const Block& block, int evolve_number, bool include_reference) {
  switch (block.kind) {
    case BlockKind::kEvolve:
      return "[" + evolve_block_label(block, evolve_number) +
             ": your code goes here, replacing this line]";
    case BlockKind::kUserInstructions:
      return "[USER_INSTRUCTIONS block: shown in the user instructions section]";
    case BlockKind::kReference:
      return include_reference ? "[REFERENCE block: shown in the reference section]"
                               : "[REFERENCE block: not shown]";
  }
  return "";
}

std::string fenced(std::string_view path, const std::vector<std::string>& lines) {
  std::string out = "```" + std::string(fence_for_file(path)) + "\n";
  for (const auto& line : lines) out += line + "\n";
  return out + "```\n";
}

// The package-relative path an `#include "name"` line of `from` refers to, if the package has it.
std::string included_file(const TaskPackage& task, const std::string& from,
                          const std::string& line) {
  std::string t = trim(line);
  if (!starts_with(t, "#include")) return "";
  size_t open = t.find('"');
  size_t close = open == std::string::npos ? open : t.find('"', open + 1);
  if (close == std::string::npos) return "";
  std::string name = t.substr(open + 1, close - open - 1);
  size_t slash = from.rfind('/');
  std::string sibling = slash == std::string::npos ? name : from.substr(0, slash + 1) + name;
  for (const std::string& candidate : {sibling, name}) {
    const TaskFile* file = task.file(candidate);
    if (file && !file->binary) return candidate;
  }
  return "";
}

}  // namespace

std::string evolve_block_label(const Block& block, int number) {
  return "EVOLVE block " + std::to_string(number) + " (" + block.file + ")";
}

std::string_view fence_for_file(std::string_view path) {
  if (ends_with(path, ".cu") || ends_with(path, ".cuh")) return "cuda";
  if (ends_with(path, ".cl")) return "opencl";
  if (ends_with(path, ".py")) return "python";
  return "cpp";
}

std::string evolve_file_views(const TaskPackage& task, bool include_reference) {
  std::vector<const Block*> evolve = task.blocks_of(BlockKind::kEvolve);
  std::vector<std::string> files;  // in block order, each once
  for (const Block* b : evolve)
    if (std::find(files.begin(), files.end(), b->file) == files.end()) files.push_back(b->file);
  std::set<std::string> shown(files.begin(), files.end());

  std::string out;
  std::vector<std::pair<std::string, std::string>> headers;  // (header, included by)
  for (const std::string& path : files) {
    const TaskFile* file = task.file(path);
    if (!file) continue;
    std::vector<std::string> source = split_lines(file->content);
    std::vector<std::string> view;
    for (size_t i = 0; i < source.size(); ++i) {
      int line_no = static_cast<int>(i) + 1;
      const Block* inside = nullptr;
      for (const Block& b : task.blocks)
        if (b.file == path && line_no >= b.start_line && line_no <= b.end_line) inside = &b;
      if (!inside) {
        view.push_back(source[i]);
        std::string header = included_file(task, path, source[i]);
        if (!header.empty() && !shown.count(header)) {
          shown.insert(header);
          headers.push_back({header, path});
        }
        continue;
      }
      if (line_no != inside->start_line) continue;
      int number = 0;
      for (size_t k = 0; k < evolve.size(); ++k)
        if (evolve[k] == inside) number = static_cast<int>(k) + 1;
      view.push_back(leading_space(source[i]) + comment_prefix(path) + " " +
                     marker_text(*inside, number, include_reference));
    }
    out += "File `" + path + "`:\n" + fenced(path, view) + "\n";
  }
  for (const auto& [header, by] : headers) {
    std::vector<std::string> lines = split_lines(task.file(header)->content);
    if (lines.size() > kMaxHeaderLines) {
      size_t cut = lines.size() - kMaxHeaderLines;
      lines.resize(kMaxHeaderLines);
      lines.push_back(comment_prefix(header) + strprintf(" [... %zu more lines ...]", cut));
    }
    out += "Header `" + header + "` (included by `" + by + "`):\n" + fenced(header, lines) + "\n";
  }
  return out;
}

}  // namespace kf
