// The template parser and renderer: tags are found line by line, checked against the names a file
// may use, and sections matched; rendering walks the tokens, skipping closed sections.
#include "prompt/template.h"

#include <cctype>
#include <optional>

#include "util/strings.h"

namespace kf {
namespace {

struct Tag {
  char sigil = 0;  // 0, '#', '^', '/', '!'
  std::string name;
  size_t begin = 0, end = 0;  // byte range of "{{...}}" within the line
};

bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

bool is_valid_name(std::string_view name) {
  if (name.empty() || !is_name_start(name[0])) return false;
  for (char c : name)
    if (!is_name_char(c)) return false;
  return true;
}

// The tags of one line (without its newline). `error` is set for a malformed tag.
std::vector<Tag> find_tags(std::string_view line, std::string* error) {
  std::vector<Tag> tags;
  size_t pos = 0;
  while ((pos = line.find("{{", pos)) != std::string_view::npos) {
    size_t inner = pos + 2;
    while (inner < line.size() && line[inner] == ' ') ++inner;
    char first = inner < line.size() ? line[inner] : '\0';
    bool sigil = first == '#' || first == '^' || first == '/' || first == '!';
    if (!sigil && !is_name_start(first)) {  // not a tag: "{{1, 2}}", "{{ {"
      pos += 2;
      continue;
    }
    size_t close = line.find("}}", inner);
    if (close == std::string_view::npos) {
      *error = "'{{' without a closing '}}' on the same line";
      return tags;
    }
    Tag tag;
    tag.begin = pos;
    tag.end = close + 2;
    std::string body = trim(line.substr(inner, close - inner));
    if (sigil) {
      tag.sigil = body[0];
      body = trim(std::string_view(body).substr(1));
    }
    if (tag.sigil != '!' && !is_valid_name(body)) {
      *error = "'" + std::string(line.substr(pos, tag.end - pos)) +
               "' is not a valid tag: names are letters, digits and '_'";
      return tags;
    }
    tag.name = tag.sigil == '!' ? "" : body;
    tags.push_back(tag);
    pos = tag.end;
  }
  return tags;
}

std::string describe_allowed(const std::vector<std::string>& allowed) {
  return "valid placeholders: " + (allowed.empty() ? std::string("none") : join(allowed, ", "));
}

}  // namespace

Result<Template> Template::parse(std::string_view text, const std::string& file,
                                 const std::vector<std::string>& allowed) {
  Template t;
  std::vector<std::string> errors;
  struct Open {
    size_t token;
    int line;
  };
  std::vector<Open> open;
  auto where = [&](int line) { return file + ":" + std::to_string(line) + ": "; };
  auto add_text = [&](std::string_view s) {
    if (s.empty()) return;
    if (!t.tokens_.empty() && t.tokens_.back().kind == Kind::kText)
      t.tokens_.back().text += s;
    else
      t.tokens_.push_back(make_token(Kind::kText, std::string(s)));
  };

  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    size_t nl = text.find('\n', pos);
    size_t stop = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(pos, stop - pos);
    std::string_view newline = text.substr(stop, nl == std::string_view::npos ? 0 : 1);
    pos = stop + newline.size();

    std::string error;
    std::vector<Tag> tags = find_tags(line, &error);
    if (!error.empty()) {
      errors.push_back(where(line_no) + error);
      continue;
    }
    bool alone = tags.size() == 1 && trim(line.substr(0, tags[0].begin)).empty() &&
                 trim(line.substr(tags[0].end)).empty();
    size_t cursor = 0;
    for (const Tag& tag : tags) {
      if (!alone) add_text(line.substr(cursor, tag.begin - cursor));
      cursor = tag.end;
      if (tag.sigil == '!') continue;
      bool known = false;
      for (const auto& a : allowed) known = known || a == tag.name;
      if (!known) {
        std::string message = where(line_no) + "unknown placeholder '" + tag.name + "'";
        std::string near = nearest(tag.name, allowed);
        if (!near.empty()) message += " (did you mean '" + near + "'?)";
        errors.push_back(message + "; " + describe_allowed(allowed));
        continue;
      }
      if (tag.sigil == '#' || tag.sigil == '^') {
        open.push_back({t.tokens_.size(), line_no});
        t.tokens_.push_back(
            make_token(tag.sigil == '#' ? Kind::kOpen : Kind::kOpenInverted, tag.name));
      } else if (tag.sigil == '/') {
        if (open.empty() || t.tokens_[open.back().token].text != tag.name) {
          errors.push_back(where(line_no) + "'{{/" + tag.name + "}}' " +
                           (open.empty() ? std::string("has no open section to close")
                                         : "does not match the open section '{{#" +
                                               t.tokens_[open.back().token].text + "}}' (line " +
                                               std::to_string(open.back().line) + ")"));
          continue;
        }
        t.tokens_[open.back().token].match = t.tokens_.size();
        open.pop_back();
        t.tokens_.push_back(make_token(Kind::kClose, tag.name));
      } else {
        Token value = make_token(Kind::kValue, tag.name);
        if (alone) {  // the newline goes with the value, so an empty value takes its line
          value.own_line = true;
          value.indent = std::string(line.substr(0, tag.begin));
          value.newline = !newline.empty();
        }
        t.tokens_.push_back(value);
      }
    }
    if (!alone) {
      add_text(line.substr(cursor));
      add_text(newline);
    }
  }
  for (const Open& o : open)
    errors.push_back(where(o.line) + "'{{#" + t.tokens_[o.token].text +
                     "}}' is never closed by '{{/" + t.tokens_[o.token].text + "}}'");
  if (!errors.empty()) return Result<Template>::error(join(errors, "\n"));
  return t;
}

std::string Template::render(const TemplateValues& values) const {
  auto value_of = [&](const std::string& name) -> const std::string& {
    static const std::string kEmpty;
    auto it = values.find(name);
    return it == values.end() ? kEmpty : it->second;
  };
  std::string out;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const Token& tok = tokens_[i];
    switch (tok.kind) {
      case Kind::kText:
        out += tok.text;
        break;
      case Kind::kValue: {
        const std::string& v = value_of(tok.text);
        if (!tok.own_line) {
          out += v;
          break;
        }
        if (v.empty()) break;  // the whole line goes
        out += tok.indent;
        out += v;
        if (tok.newline && v.back() != '\n') out += '\n';
        break;
      }
      case Kind::kOpen:
        if (value_of(tok.text).empty()) i = tok.match;
        break;
      case Kind::kOpenInverted:
        if (!value_of(tok.text).empty()) i = tok.match;
        break;
      case Kind::kClose:
        break;
    }
  }
  return out;
}

}  // namespace kf
