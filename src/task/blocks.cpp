// Block markers: finding [X_START]/[X_END] pairs in a file and splicing new code between them.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <vector>

#include "task/task.h"
#include "util/strings.h"

namespace kf {

namespace {

struct MarkerSpec {
  std::string_view token;
  BlockKind kind;
  bool start;
};

constexpr MarkerSpec kMarkers[] = {
    {"[EVOLVE_START]", BlockKind::kEvolve, true},
    {"[EVOLVE_END]", BlockKind::kEvolve, false},
    {"[REFERENCE_START]", BlockKind::kReference, true},
    {"[REFERENCE_END]", BlockKind::kReference, false},
    {"[USER_INSTRUCTIONS_START]", BlockKind::kUserInstructions, true},
    {"[USER_INSTRUCTIONS_END]", BlockKind::kUserInstructions, false},
};

struct MarkerHit {
  const MarkerSpec* spec;
  size_t pos;
};

// One line of a text: [begin, end) without its line ending, `next` where the following line
// starts. Kept as offsets so a splice can cut the original bytes exactly.
struct Line {
  size_t begin, end, next;
};

std::vector<Line> split_lines_at(std::string_view text) {
  std::vector<Line> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t nl = text.find('\n', begin);
    size_t next = nl == std::string_view::npos ? text.size() : nl + 1;
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    if (end > begin && text[end - 1] == '\r') --end;
    lines.push_back({begin, end, next});
    begin = next;
  }
  return lines;
}

std::vector<MarkerHit> find_markers(std::string_view line) {
  std::vector<MarkerHit> hits;
  for (size_t pos = line.find('['); pos != std::string_view::npos; pos = line.find('[', pos + 1)) {
    for (const auto& spec : kMarkers) {
      if (line.substr(pos, spec.token.size()) == spec.token) {
        hits.push_back({&spec, pos});
        break;
      }
    }
  }
  return hits;
}

// Whether byte `pos` of `line` lies inside a comment: after `//` or `#`, or inside `/* */` or
// `<!-- -->` opened on this line, with string literals skipped so a "//" in a string does not
// count. The file's language is unknown, so this is a small lexer common to C-like languages,
// Python, YAML and Markdown.
bool in_comment(std::string_view line, size_t pos) {
  enum { kCode, kString, kLineComment, kBlockComment, kHtmlComment } state = kCode;
  char quote = 0;
  for (size_t i = 0; i < pos; ++i) {
    std::string_view rest = line.substr(i);
    switch (state) {
      case kCode:
        if (starts_with(rest, "//") || rest[0] == '#') return true;  // runs to the line's end
        if (starts_with(rest, "/*")) {
          state = kBlockComment;
          ++i;
        } else if (starts_with(rest, "<!--")) {
          state = kHtmlComment;
          i += 3;
        } else if (rest[0] == '"' ||
                   // An apostrophe after a letter or digit is prose ("don't") or a digit
                   // separator (1'000), not a quote.
                   (rest[0] == '\'' &&
                    (i == 0 || !std::isalnum(static_cast<unsigned char>(line[i - 1]))))) {
          state = kString;
          quote = rest[0];
        }
        break;
      case kString:
        if (rest[0] == '\\') {
          ++i;
        } else if (rest[0] == quote) {
          state = kCode;
        }
        break;
      case kBlockComment:
        if (starts_with(rest, "*/")) {
          state = kCode;
          ++i;
        }
        break;
      case kHtmlComment:
        if (starts_with(rest, "-->")) {
          state = kCode;
          i += 2;
        }
        break;
      case kLineComment:
        return true;
    }
  }
  return state == kLineComment || state == kBlockComment || state == kHtmlComment;
}

std::string end_token(BlockKind kind) {
  return "[" + std::string(block_kind_name(kind)) + "_END]";
}
std::string start_token(BlockKind kind) {
  return "[" + std::string(block_kind_name(kind)) + "_START]";
}

bool is_blank(std::string_view line) {
  return trim(line).empty();
}

// Joins lines [first, last) of `text` with '\n', dropping whitespace-only lines at both edges.
std::string trimmed_content(std::string_view text, const std::vector<Line>& lines, size_t first,
                            size_t last) {
  while (first < last &&
         is_blank(text.substr(lines[first].begin, lines[first].end - lines[first].begin)))
    ++first;
  while (last > first &&
         is_blank(text.substr(lines[last - 1].begin, lines[last - 1].end - lines[last - 1].begin)))
    --last;
  std::string out;
  for (size_t i = first; i < last; ++i) {
    out.append(text.substr(lines[i].begin, lines[i].end - lines[i].begin));
    out += '\n';
  }
  return out;
}

struct OpenBlock {
  BlockKind kind;
  int line;      // 1-based
  size_t index;  // line index into `lines`
};

}  // namespace

std::string_view block_kind_name(BlockKind kind) {
  switch (kind) {
    case BlockKind::kEvolve:
      return "EVOLVE";
    case BlockKind::kReference:
      return "REFERENCE";
    case BlockKind::kUserInstructions:
      return "USER_INSTRUCTIONS";
  }
  return "?";
}

Result<std::vector<Block>> parse_blocks(std::string_view file, std::string_view text) {
  const std::string where = std::string(file) + ":";
  std::vector<Line> lines = split_lines_at(text);
  std::vector<Block> blocks;
  std::vector<std::string> errors;
  // A stack, so that after a nesting error the inner END still pairs with the inner START and
  // the report does not cascade into spurious follow-up errors.
  std::vector<OpenBlock> open;
  int counts[3] = {0, 0, 0};

  for (size_t li = 0; li < lines.size(); ++li) {
    std::string_view line = text.substr(lines[li].begin, lines[li].end - lines[li].begin);
    std::vector<MarkerHit> hits = find_markers(line);
    if (hits.empty()) continue;
    const int lineno = static_cast<int>(li) + 1;
    const std::string at = where + std::to_string(lineno);
    if (hits.size() > 1) {
      std::vector<std::string> names;
      for (const auto& h : hits) names.emplace_back(h.spec->token);
      errors.push_back(join(names, " and ") + " on one line at " + at +
                       ": put each marker on a line of its own");
      continue;
    }
    const MarkerSpec& spec = *hits[0].spec;
    if (!in_comment(line, hits[0].pos)) {
      errors.push_back(std::string(spec.token) + " at " + at +
                       " is not inside a comment: put the marker in a comment, e.g. `// " +
                       std::string(spec.token) + "` (or `# " + std::string(spec.token) +
                       "` in Python)");
      continue;
    }
    if (spec.start) {
      if (!open.empty()) {
        errors.push_back("nested " + std::string(spec.token) + " at " + at + " inside " +
                         start_token(open.back().kind) + " opened at " + where +
                         std::to_string(open.back().line) + ": close it with " +
                         end_token(open.back().kind) + " first");
      }
      open.push_back({spec.kind, lineno, li});
      continue;
    }
    if (open.empty()) {
      errors.push_back(std::string(spec.token) + " at " + at + " has no matching " +
                       start_token(spec.kind));
      continue;
    }
    if (open.back().kind != spec.kind) {
      errors.push_back(std::string(spec.token) + " at " + at + " does not close the open " +
                       start_token(open.back().kind) + " from " + where +
                       std::to_string(open.back().line) + " (expected " +
                       end_token(open.back().kind) + ")");
      continue;
    }
    OpenBlock ob = open.back();
    open.pop_back();
    Block block;
    block.kind = ob.kind;
    block.file = std::string(file);
    block.index = counts[static_cast<int>(ob.kind)]++;
    block.start_line = ob.line;
    block.end_line = lineno;
    block.content = trimmed_content(text, lines, ob.index + 1, li);
    blocks.push_back(std::move(block));
  }
  for (const auto& ob : open) {
    errors.push_back(start_token(ob.kind) + " at " + where + std::to_string(ob.line) + " has no " +
                     end_token(ob.kind));
  }
  if (!errors.empty()) {
    // A hostile or mangled file can hold a bad marker on every line: name the first ones only.
    constexpr size_t kMaxErrors = 20;
    if (errors.size() > kMaxErrors) {
      size_t more = errors.size() - kMaxErrors;
      errors.resize(kMaxErrors);
      errors.push_back("... and " + std::to_string(more) + " more marker error(s)");
    }
    return Result<std::vector<Block>>::error(join(errors, "\n"));
  }
  // Blocks close innermost-first; callers expect file order (by START line).
  std::stable_sort(blocks.begin(), blocks.end(),
                   [](const Block& a, const Block& b) { return a.start_line < b.start_line; });
  return blocks;
}

Result<std::string> splice_block(std::string_view file_text, std::string_view file, BlockKind kind,
                                 int index, std::string_view code) {
  auto parsed = parse_blocks(file, file_text);
  if (!parsed) return parsed.status();
  const Block* target = nullptr;
  int count = 0;
  for (const auto& b : *parsed) {
    if (b.kind != kind) continue;
    if (b.index == index) target = &b;
    ++count;
  }
  if (target == nullptr) {
    return Result<std::string>::error(
        strprintf("%.*s has no %s block %d (it has %d)", static_cast<int>(file.size()), file.data(),
                  std::string(block_kind_name(kind)).c_str(), index, count));
  }
  std::vector<Line> lines = split_lines_at(file_text);
  const Line& start = lines[target->start_line - 1];
  const Line& end = lines[target->end_line - 1];
  // Follow the file's own line ending so a CRLF file stays CRLF.
  const bool crlf = start.next >= 2 && file_text[start.next - 2] == '\r';

  std::string normalised = replace_all(std::string(code), "\r\n", "\n");
  std::vector<std::string> code_lines = split(normalised, '\n');
  std::vector<std::string> kept;
  for (auto& l : code_lines) {
    if (find_markers(l).empty()) kept.push_back(std::move(l));  // models echo the markers
  }
  size_t first = 0, last = kept.size();
  while (first < last && is_blank(kept[first])) ++first;
  while (last > first && is_blank(kept[last - 1])) --last;

  std::string out(file_text.substr(0, start.next));
  for (size_t i = first; i < last; ++i) {
    out += kept[i];
    out += crlf ? "\r\n" : "\n";
  }
  out.append(file_text.substr(end.begin));
  return out;
}

Result<std::map<std::string, std::string>> splice_evolve(const TaskPackage& package,
                                                         const std::vector<std::string>& codes) {
  using Changed = std::map<std::string, std::string>;
  std::vector<const Block*> evolve = package.blocks_of(BlockKind::kEvolve);
  if (codes.size() != evolve.size()) {
    return Result<Changed>::error(
        strprintf("got %zu replacement(s) for the %zu EVOLVE block(s) of %s", codes.size(),
                  evolve.size(), package.source.c_str()));
  }
  Changed texts;
  for (size_t i = 0; i < evolve.size(); ++i) {
    const Block& b = *evolve[i];
    auto it = texts.find(b.file);
    if (it == texts.end()) {
      const TaskFile* f = package.file(b.file);
      if (f == nullptr) return Result<Changed>::error("task package has no file " + b.file);
      it = texts.emplace(b.file, f->content).first;
    }
    // Splicing block k leaves the count and order of blocks unchanged, so the indexes of the
    // remaining blocks in this file stay valid.
    auto spliced = splice_block(it->second, b.file, BlockKind::kEvolve, b.index, codes[i]);
    if (!spliced) return spliced.status();
    it->second = std::move(*spliced);
  }
  for (auto it = texts.begin(); it != texts.end();) {
    it = package.file(it->first)->content == it->second ? texts.erase(it) : std::next(it);
  }
  return texts;
}

}  // namespace kf
