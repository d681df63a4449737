// Code extraction from an LLM answer: tags, fences and a bare-code heuristic, tried in order.
#include "search/extract.h"

#include <algorithm>
#include <cctype>

#include "search/bare_code.h"
#include "util/strings.h"

namespace kf {
namespace {

// One candidate block found in the answer.
struct Found {
  std::string code;   // cleaned: markers stripped, blank edge lines trimmed
  std::string label;  // the method that found it
  int slot = 0;       // 1-based `block=k`, 0 when not addressed
  bool unterminated = false;
};

// The names a language answers to in tags and fence info strings.
struct LanguageNames {
  std::vector<std::string_view> tags;
  std::vector<std::string_view> fences;   // the language itself
  std::vector<std::string_view> related;  // C-family names models use for it
};

LanguageNames names_for(Language language) {
  switch (language) {
    case Language::kCuda:
      return {{"cuda"}, {"cuda", "cu", "cuh"}, {"cpp", "c++", "cxx", "cc", "c", "hpp", "h"}};
    case Language::kOcl:
      return {{"opencl", "ocl"}, {"opencl", "ocl", "cl"}, {"c", "cpp", "c++", "cxx", "h"}};
    case Language::kCpp:
      return {{"cpp", "c++"}, {"cpp", "c++", "cxx", "cc", "hpp"}, {"c", "h"}};
    case Language::kSycl:
      return {{"sycl"}, {"sycl"}, {"cpp", "c++", "cxx", "cc", "hpp"}};
    case Language::kTriton:
      return {{"triton", "python"}, {"python", "py", "triton"}, {}};
  }
  return {};
}

constexpr std::string_view kMarkerTokens[] = {
    "[EVOLVE_START]",
    "[EVOLVE_END]",
    "[REFERENCE_START]",
    "[REFERENCE_END]",
    "[USER_INSTRUCTIONS_START]",
    "[USER_INSTRUCTIONS_END]",
};

bool is_blank(std::string_view line) {
  return trim(line).empty();
}

// The first `needle` at or after `from`, for a `from` that does not go back: a search that found
// nothing, or found something still ahead, is not repeated. Keeps scans over a hostile answer
// (thousands of unclosed tags on one line) linear instead of quadratic.
class ForwardFinder {
 public:
  ForwardFinder(std::string_view text, std::string needle)
      : text_(text), needle_(std::move(needle)) {}

  size_t next(size_t from) {
    if (searched_ && from >= searched_from_ && (found_ == std::string_view::npos || found_ >= from))
      return found_;
    searched_ = true;
    searched_from_ = from;
    found_ = text_.find(needle_, from);
    return found_;
  }

 private:
  std::string_view text_;
  std::string needle_;
  bool searched_ = false;
  size_t searched_from_ = 0, found_ = std::string_view::npos;
};

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string_view ltrim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return s;
}

bool is_fence_closer(std::string_view line, char ch, size_t min_len) {
  std::string t = trim(line);
  return t.size() >= min_len && std::all_of(t.begin(), t.end(), [ch](char c) { return c == ch; });
}

// Length of the ``` / ~~~ run opening `line` (after indentation), or 0.
size_t fence_run(std::string_view rest) {
  if (rest.empty() || (rest[0] != '`' && rest[0] != '~')) return 0;
  size_t n = 0;
  while (n < rest.size() && rest[n] == rest[0]) ++n;
  return n >= 3 ? n : 0;
}

// Trims blank edge lines, strips markers and ends the code with a newline; "" when nothing is left.
std::string clean_block(const std::vector<std::string>& lines) {
  std::string joined = strip_block_markers(join(lines, "\n"));
  std::vector<std::string> kept = split_lines(joined);
  size_t first = 0, last = kept.size();
  while (first < last && is_blank(kept[first])) ++first;
  while (last > first && is_blank(kept[last - 1])) --last;
  std::string out;
  for (size_t i = first; i < last; ++i) out += kept[i] + "\n";
  return out;
}

// The k of `block=k` / `block="k"` in a tag's attributes or a fence's info string, else 0.
int parse_slot(std::string_view attrs) {
  std::string lower = to_lower(attrs);
  for (size_t pos = lower.find("block"); pos != std::string::npos;
       pos = lower.find("block", pos + 1)) {
    std::string_view rest = ltrim(std::string_view(lower).substr(pos + 5));
    if (rest.empty() || rest[0] != '=') continue;
    rest = ltrim(rest.substr(1));
    if (!rest.empty() && (rest[0] == '"' || rest[0] == '\'')) rest.remove_prefix(1);
    int value = 0;
    size_t digits = 0;
    while (digits < rest.size() && digits < 6 &&
           std::isdigit(static_cast<unsigned char>(rest[digits])))
      value = value * 10 + (rest[digits++] - '0');
    if (digits == 6) continue;  // not a block number (and no int overflow on a digit flood)
    if (digits > 0 && digits < 6) return value;
  }
  return 0;
}

// A tag's content may itself be a fenced block: drop the wrapping fence lines.
std::vector<std::string> unwrap_fence(std::vector<std::string> lines) {
  while (!lines.empty() && is_blank(lines.front())) lines.erase(lines.begin());
  while (!lines.empty() && is_blank(lines.back())) lines.pop_back();
  if (lines.empty()) return lines;
  std::string first = trim(lines.front());
  if (size_t n = fence_run(first); n > 0) {
    lines.erase(lines.begin());
    if (!lines.empty() && is_fence_closer(lines.back(), first[0], n)) lines.pop_back();
  }
  return lines;
}

// An unclosed tag is taken as a cut-off answer only when code (or a line end) follows it and no
// fenced block comes further down; otherwise it is a tag named in prose ("use <cuda> tags").
bool plausible_unclosed_tag(std::string_view text, size_t gt) {
  std::vector<std::string> lines = split_lines(text.substr(gt + 1));
  if (lines.empty()) return false;
  if (!is_blank(lines[0]) && !looks_like_code(lines[0], false)) return false;
  size_t first = 0;
  while (first < lines.size() && is_blank(lines[first])) ++first;
  for (size_t i = first + 1; i < lines.size(); ++i) {
    if (fence_run(ltrim(lines[i])) > 0) return false;
  }
  return true;
}

std::vector<Found> find_tags(std::string_view text, const std::vector<std::string_view>& names) {
  std::vector<Found> found;
  const std::string lower = to_lower(text);
  ForwardFinder next_gt(lower, ">"), next_newline(lower, "\n");
  std::vector<ForwardFinder> next_close;
  for (std::string_view name : names)
    next_close.emplace_back(lower, "</" + std::string(name) + ">");
  // Each plausibility check reads the rest of the answer; an answer that names the tag in prose
  // more often than this is not a cut-off answer, and checking every mention would be quadratic.
  int checks_left = 64;
  size_t pos = lower.find('<');
  while (pos != std::string::npos) {
    size_t next = pos + 1;
    for (size_t n = 0; n < names.size(); ++n) {
      std::string_view name = names[n];
      size_t after = pos + 1 + name.size();
      if (lower.compare(pos + 1, name.size(), name) != 0 || after >= lower.size()) continue;
      if (lower[after] != '>' && !std::isspace(static_cast<unsigned char>(lower[after]))) continue;
      size_t gt = next_gt.next(after);
      if (gt == std::string::npos || next_newline.next(after) < gt) continue;
      const std::string close = "</" + std::string(name) + ">";
      size_t end = next_close[n].next(gt + 1);
      if (end == std::string::npos && (checks_left-- <= 0 || !plausible_unclosed_tag(text, gt))) {
        next = gt + 1;
        break;
      }
      Found f;
      f.label = "tag <" + std::string(name) + ">";
      f.slot = parse_slot(text.substr(after, gt - after));
      f.unterminated = end == std::string::npos;
      std::string_view body =
          text.substr(gt + 1, f.unterminated ? std::string::npos : end - gt - 1);
      f.code = clean_block(unwrap_fence(split_lines(body)));
      next = f.unterminated ? lower.size() : end + close.size();
      if (!f.code.empty()) found.push_back(std::move(f));
      break;
    }
    pos = next < lower.size() ? lower.find('<', next) : std::string::npos;
  }
  return found;
}

// Every fenced block; `word` receives the first word of the info string, lower-cased.
struct FencedBlock {
  Found found;
  std::string word;
};

std::vector<FencedBlock> find_fences(std::string_view text) {
  std::vector<FencedBlock> blocks;
  std::vector<std::string> lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    size_t indent = line.size() - ltrim(line).size();
    std::string_view rest = line.substr(indent);
    size_t run = fence_run(rest);
    if (run == 0) continue;
    std::string info = trim(rest.substr(run));
    if (rest[0] == '`' && info.find('`') != std::string::npos) continue;  // inline code
    size_t close = i + 1;
    while (close < lines.size() && !is_fence_closer(lines[close], rest[0], run)) ++close;
    std::vector<std::string> body;
    for (size_t k = i + 1; k < close; ++k) {
      std::string_view b = lines[k];
      size_t cut = 0;
      while (cut < indent && cut < b.size() && (b[cut] == ' ' || b[cut] == '\t')) ++cut;
      body.emplace_back(b.substr(cut));
    }
    FencedBlock block;
    // "cuda", "{.cuda}", "cuda:kernel.cu", "cuda title=x" all name CUDA.
    std::string word = to_lower(info);
    word.erase(0, std::min(word.find_first_not_of("{."), word.size()));
    word.resize(std::min(word.find_first_of(" \t:,}"), word.size()));
    block.word = word;
    // The label goes into messages and the store: the answer's bytes there are shown as text.
    block.found.label = word.empty() ? "fence" : "fence ```" + escape_invalid_utf8(word);
    block.found.slot = parse_slot(info);
    block.found.unterminated = close >= lines.size();
    block.found.code = clean_block(body);
    if (!block.found.code.empty()) blocks.push_back(std::move(block));
    i = close;
  }
  return blocks;
}

std::vector<Found> find_code_runs(std::string_view text) {
  std::vector<Found> runs;
  for (const std::vector<std::string>& run : find_bare_code(text)) {
    Found f;
    f.label = "heuristic";
    f.code = clean_block(run);
    if (!f.code.empty()) runs.push_back(std::move(f));
  }
  return runs;
}

bool contains(const std::vector<std::string_view>& names, std::string_view word) {
  return std::find(names.begin(), names.end(), word) != names.end();
}

std::vector<Found> fences_named(const std::vector<FencedBlock>& fences,
                                const std::vector<std::string_view>& names) {
  std::vector<Found> out;
  for (const auto& f : fences) {
    if (contains(names, f.word)) out.push_back(f.found);
  }
  return out;
}

// The blocks of the winning tier, in answer order; empty when no tier found anything.
std::vector<Found> winning_tier(std::string_view text, Language language) {
  const LanguageNames names = names_for(language);
  std::vector<Found> blocks = find_tags(text, names.tags);
  if (!blocks.empty()) return blocks;
  blocks = find_tags(text, {"code"});
  if (!blocks.empty()) return blocks;
  const std::vector<FencedBlock> fences = find_fences(text);
  blocks = fences_named(fences, names.fences);
  if (!blocks.empty()) return blocks;
  blocks = fences_named(fences, names.related);
  if (!blocks.empty()) return blocks;
  for (const auto& f : fences) blocks.push_back(f.found);
  if (!blocks.empty() || language == Language::kTriton) return blocks;
  return find_code_runs(text);
}

std::string primary_tag(Language language) {
  return std::string(names_for(language).tags.front());
}

std::string primary_fence(Language language) {
  return std::string(names_for(language).fences.front());
}

}  // namespace

std::string strip_block_markers(std::string_view code) {
  // One pass per line, left to right; each search resumes where the last ended, so a line of
  // thousands of markers costs its length, not its length times the markers.
  std::vector<std::string> out;
  for (const std::string& line : split(code, '\n')) {
    std::vector<ForwardFinder> tokens;
    for (std::string_view token : kMarkerTokens) tokens.emplace_back(line, std::string(token));
    ForwardFinder html_close(line, "-->"), c_close(line, "*/");
    std::string kept;
    bool changed = false;
    size_t i = 0;
    while (i < line.size()) {
      size_t pos = std::string::npos, len = 0;
      for (size_t t = 0; t < tokens.size(); ++t) {
        size_t p = tokens[t].next(i);
        if (p < pos) pos = p, len = kMarkerTokens[t].size();
      }
      if (pos == std::string::npos) {
        kept.append(line, i, std::string::npos);
        break;
      }
      changed = true;
      kept.append(line, i, pos - i);
      // The comment opener right before the marker goes with it, and its closer after it.
      kept.resize(rtrim(kept).size());
      size_t rest = pos + len;
      bool to_line_end = false;
      if (ends_with(kept, "<!--")) {
        kept.resize(kept.size() - 4);
        if (size_t close = html_close.next(rest); close != std::string::npos) rest = close + 3;
      } else if (ends_with(kept, "/*")) {
        kept.resize(kept.size() - 2);
        if (size_t close = c_close.next(rest); close != std::string::npos) rest = close + 2;
      } else if (ends_with(kept, "//") || ends_with(kept, "--")) {
        kept.resize(kept.size() - 2);
        to_line_end = true;
      } else if (ends_with(kept, "#")) {
        kept.resize(kept.size() - 1);
        to_line_end = true;
      }
      kept.resize(rtrim(kept).size());
      if (to_line_end) break;
      while (rest < line.size() && std::isspace(static_cast<unsigned char>(line[rest]))) ++rest;
      if (rest < line.size() && !kept.empty()) kept += ' ';
      i = rest;
    }
    if (!(changed && is_blank(kept))) out.push_back(std::move(kept));
  }
  return join(out, "\n");
}

Result<Extraction> extract_code(std::string_view answer, Language language, size_t num_blocks) {
  const std::string text = replace_all(std::string(answer), "\r\n", "\n");
  const size_t wanted = std::max<size_t>(num_blocks, 1);
  std::vector<Found> blocks = winning_tier(text, language);
  if (blocks.empty()) {
    return Result<Extraction>::error(
        "the answer contains no " + std::string(language_name(language)) + " code: expected a ```" +
        primary_fence(language) + " fenced block or <" + primary_tag(language) + ">...</" +
        primary_tag(language) + ">");
  }
  std::vector<const Found*> chosen;
  if (wanted == 1) {
    const Found* longest = &blocks.front();
    for (const auto& b : blocks) {
      if (b.code.size() > longest->code.size()) longest = &b;
    }
    chosen.push_back(longest);
  } else {
    chosen.assign(wanted, nullptr);
    std::vector<bool> used(blocks.size(), false);
    for (size_t i = 0; i < blocks.size(); ++i) {  // addressed blocks first
      const int slot = blocks[i].slot;
      if (slot < 1 || static_cast<size_t>(slot) > wanted) continue;
      const Found*& seat = chosen[slot - 1];
      if (seat == nullptr || blocks[i].code.size() > seat->code.size()) seat = &blocks[i];
      used[i] = true;
    }
    size_t next = 0;
    for (auto& seat : chosen) {  // then the rest, in answer order
      while (seat == nullptr && next < blocks.size()) {
        if (!used[next]) seat = &blocks[next];
        ++next;
      }
    }
    const size_t filled =
        std::count_if(chosen.begin(), chosen.end(), [](const Found* f) { return f != nullptr; });
    if (filled < wanted) {
      return Result<Extraction>::error(strprintf(
          "the answer has %zu usable %s code block(s) (%s) but the task has %zu EVOLVE blocks: "
          "give one "
          "```%s block per EVOLVE block, in order, or address them with ```%s block=1 ... "
          "block=%zu",
          filled, std::string(language_name(language)).c_str(), blocks.front().label.c_str(),
          wanted, primary_fence(language).c_str(), primary_fence(language).c_str(), wanted));
    }
  }
  Extraction extraction;
  extraction.method = chosen.front()->label;
  for (const Found* f : chosen) {
    extraction.codes.push_back(f->code);
    extraction.unterminated = extraction.unterminated || f->unterminated;
  }
  return extraction;
}

}  // namespace kf
