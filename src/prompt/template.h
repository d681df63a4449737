// A small, strict text template: `{{name}}` substitution, `{{#name}}…{{/name}}` kept only when
// `name` is non-empty, `{{^name}}…{{/name}}` only when it is empty, `{{! comment }}` dropped.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace kf {

using TemplateValues = std::map<std::string, std::string>;

// Values are inserted literally (never scanned for tags). A line holding nothing but a section tag
// or a comment disappears with its newline; a line holding nothing but a placeholder disappears
// when the value is empty. `{{` followed by anything but a name, `#`, `^`, `/` or `!` (e.g. the
// C++ `{{1, 2}}`) is plain text.
class Template {
 public:
  Template() = default;

  // Parses `text`; `file` names it in messages ("file:line: ..."). Every name used must be one of
  // `allowed`; all problems are reported, one per line, with the valid names.
  static Result<Template> parse(std::string_view text, const std::string& file,
                                const std::vector<std::string>& allowed);

  // Missing values count as empty.
  std::string render(const TemplateValues& values) const;

 private:
  enum class Kind { kText, kValue, kOpen, kOpenInverted, kClose };
  struct Token {
    Kind kind = Kind::kText;
    std::string text;       // kText: the text; otherwise the name
    size_t match = 0;       // kOpen*: index of the matching kClose
    bool own_line = false;  // kValue alone on its line: the line goes when the value is empty
    std::string indent;     // kValue on its own line: the whitespace before it
    bool newline = false;   // kValue on its own line: the line ended in '\n'
  };
  static Token make_token(Kind kind, std::string text) {
    Token token;
    token.kind = kind;
    token.text = std::move(text);
    return token;
  }
  std::vector<Token> tokens_;
};

}  // namespace kf
