// Cutting an oversized prompt part: the head and tail are kept, since they hold a kernel's
// signature, includes and the end of its launch code; the middle gives way to a marker line.
#include "prompt/fit.h"

#include <algorithm>

#include "util/strings.h"

namespace kf {
namespace {

bool is_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

std::string marker(std::string_view comment, size_t chars, size_t lines) {
  std::string prefix = comment.empty() ? "" : std::string(comment) + " ";
  return prefix + strprintf(
                      "[... %zu characters (%zu lines) cut here to fit the prompt size "
                      "limit ...]\n",
                      chars, lines);
}

}  // namespace

std::string_view code_comment(Language language) {
  return language == Language::kTriton ? "#" : "//";
}

std::string cut_middle(const std::string& text, size_t max_chars, std::string_view comment) {
  if (text.size() <= max_chars) return text;
  // The marker's numbers can only shrink from these, so the room left for the text is safe; two
  // characters more for the newlines that close a head or tail cut inside a line.
  size_t reserve = marker(comment, text.size(), text.size()).size() + 2;
  size_t room = max_chars > reserve ? max_chars - reserve : 0;

  size_t head_end = room / 2;
  if (head_end > 0) {
    size_t nl = text.rfind('\n', head_end - 1);
    if (nl != std::string::npos && head_end - (nl + 1) <= head_end / 2) head_end = nl + 1;
  }
  while (head_end > 0 && is_continuation(text[head_end])) --head_end;

  size_t tail_begin = text.size() - (room - room / 2);
  if (tail_begin > 0 && text[tail_begin - 1] != '\n') {
    size_t nl = text.find('\n', tail_begin);
    size_t tail = text.size() - tail_begin;
    if (nl != std::string::npos && nl + 1 - tail_begin <= tail / 2) tail_begin = nl + 1;
  }
  while (tail_begin < text.size() && is_continuation(text[tail_begin])) ++tail_begin;
  tail_begin = std::max(tail_begin, head_end);

  size_t cut = tail_begin - head_end;
  size_t lines =
      static_cast<size_t>(std::count(text.begin() + static_cast<std::ptrdiff_t>(head_end),
                                     text.begin() + static_cast<std::ptrdiff_t>(tail_begin), '\n'));
  std::string out = text.substr(0, head_end);
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += marker(comment, cut, lines);
  // A tail that starts inside a line goes on its own line; the marker already ends one.
  out += text.substr(tail_begin);
  return out;
}

std::vector<std::string> cut_codes(const std::vector<std::string>& codes, size_t max_chars,
                                   std::string_view comment) {
  size_t total = total_size(codes);
  if (total <= max_chars) return codes;
  std::vector<std::string> out;
  for (const auto& code : codes) {
    // A share proportional to the block's size (long double: max_chars * size may pass 2^64).
    size_t share = total == 0 ? 0
                              : static_cast<size_t>(static_cast<long double>(max_chars) *
                                                    static_cast<long double>(code.size()) /
                                                    static_cast<long double>(total));
    out.push_back(cut_middle(code, share, comment));
  }
  return out;
}

size_t total_size(const std::vector<std::string>& parts) {
  size_t n = 0;
  for (const auto& p : parts) n += p.size();
  return n;
}

}  // namespace kf
