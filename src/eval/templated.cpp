// Templated kernels: the dispatcher read from a candidate's code (a small C++ scanner, not a
// parser: comments and strings blanked, braces matched, conditions on the tuning parameters
// followed in order) and the generated entry point that selects a combination at run time.
#include "eval/templated.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>

#include "eval/verdict.h"
#include "util/strings.h"

namespace kf {
namespace {

constexpr const char* kTemplated = "forward_templated";

// The code with comments, string and character literals and preprocessor lines replaced by
// spaces (newlines kept), so braces and names in them are not read; `extern "C"` keeps its "C".
std::string blank_noise(const std::string& code) {
  std::string out = code;
  size_t n = code.size();
  bool line_start = true;
  for (size_t i = 0; i < n;) {
    char c = code[i];
    if (line_start && c == '#') {
      // A directive, with its continuation lines.
      while (i < n && code[i] != '\n') {
        if (code[i] == '\\' && i + 1 < n && code[i + 1] == '\n') out[i++] = ' ';
        out[i++] = ' ';
      }
      continue;
    }
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c))) line_start = false;
    if (c == '/' && i + 1 < n && code[i + 1] == '/') {
      while (i < n && code[i] != '\n') out[i++] = ' ';
    } else if (c == '/' && i + 1 < n && code[i + 1] == '*') {
      size_t end = code.find("*/", i + 2);
      end = end == std::string::npos ? n : end + 2;
      for (; i < end; ++i)
        if (code[i] != '\n') out[i] = ' ';
    } else if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < n && code[j] != c && code[j] != '\n') j += code[j] == '\\' ? 2 : 1;
      bool keep = c == '"' && code.compare(i, j - i + 1, "\"C\"") == 0;
      for (size_t k = i + 1; k < std::min(j, n) && !keep; ++k) out[k] = ' ';
      i = j + 1;
    } else {
      ++i;
    }
  }
  return out;
}

struct Token {
  std::string text;
  size_t pos = 0;
  bool ident() const {
    unsigned char c = text.empty() ? 0 : static_cast<unsigned char>(text[0]);
    return std::isalpha(c) || c == '_' || c == ':';
  }
};

std::vector<Token> tokenize(const std::string& text) {
  std::vector<Token> out;
  size_t n = text.size();
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < n;) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (word(c) || (c == ':' && i + 2 < n && text[i + 1] == ':' && word(text[i + 2]))) {
      // Names keep their qualification (std::size_t, ::ns::f); numbers their suffix and ' marks.
      size_t j = i;
      while (j < n && (word(text[j]) || text[j] == '\'' ||
                       (text[j] == ':' && j + 2 < n && text[j + 1] == ':' && word(text[j + 2]))))
        j += text[j] == ':' ? 2 : 1;
      out.push_back({text.substr(i, j - i), i});
      i = j;
    } else {
      static const char* kPairs[] = {"==", "!=", "&&", "||", "::", "->"};
      size_t len = 1;
      for (const char* p : kPairs)
        if (text.compare(i, 2, p) == 0) len = 2;
      out.push_back({text.substr(i, len), i});
      i += len;
    }
  }
  return out;
}

// The index of the token closing the bracket opened at `open` ((, {, [ or <), or tokens.size().
size_t matching(const std::vector<Token>& t, size_t open) {
  const std::string o = t[open].text;
  const std::string c = o == "(" ? ")" : o == "{" ? "}" : o == "[" ? "]" : ">";
  int depth = 0, parens = 0;
  for (size_t i = open; i < t.size(); ++i) {
    if (o == "<" && (t[i].text == "(" || t[i].text == ")")) {
      parens += t[i].text == "(" ? 1 : -1;  // a > inside parentheses does not close <
      continue;
    }
    if (o == "<" && parens > 0) continue;
    if (t[i].text == o) ++depth;
    if (t[i].text == c && --depth == 0) return i;
  }
  return t.size();
}

// The literal a template argument or a comparison holds, in the form JSON and the label use:
// "true", "false" or a decimal integer; "" when it is not one.
std::string literal_value(std::string text, bool negative = false) {
  text = trim(text);
  if (!text.empty() && text[0] == '-') {
    negative = !negative;
    text = trim(text.substr(1));
  }
  if ((text == "true" || text == "false") && !negative) return text;
  text.erase(std::remove(text.begin(), text.end(), '\''), text.end());
  while (!text.empty() && std::strchr("uUlLzZ", text.back()) != nullptr) text.pop_back();
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return "";
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 0);
  if (*end != '\0') return "";
  return std::to_string(negative ? -v : v);
}

// Source text between two token positions, whitespace collapsed.
std::string span_text(const std::string& clean, size_t begin, size_t end) {
  std::string out;
  bool space = false;
  for (size_t i = begin; i < end && i < clean.size(); ++i) {
    if (std::isspace(static_cast<unsigned char>(clean[i]))) {
      space = !out.empty();
    } else {
      if (space) out += ' ';
      space = false;
      out += clean[i];
    }
  }
  return out;
}

// A function defined at namespace scope.
struct FunctionDef {
  std::vector<std::string> scopes;
  size_t head = 0, body = 0, end = 0;  // token indexes: head start, its {, the matching }
  bool in_extern_c = false;
};

// For each `{`, the index of its `}` (t.size() when unclosed): once, so that deep nesting costs
// no rescans.
std::vector<size_t> brace_pairs(const std::vector<Token>& t) {
  std::vector<size_t> out(t.size(), t.size()), open;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].text == "{") {
      open.push_back(i);
    } else if (t[i].text == "}" && !open.empty()) {
      out[open.back()] = i;
      open.pop_back();
    }
  }
  return out;
}

std::vector<FunctionDef> functions(const std::vector<Token>& t) {
  std::vector<FunctionDef> out;
  std::vector<size_t> pairs = brace_pairs(t);
  std::vector<std::pair<std::string, size_t>> scopes;  // name ("" = extern "C"), closing }
  size_t head = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    while (!scopes.empty() && i == scopes.back().second) {
      scopes.pop_back();
      head = i + 1;
    }
    if (i >= t.size()) break;
    const std::string& s = t[i].text;
    if (s == ";" || s == "}") {
      head = i + 1;
      continue;
    }
    if (s != "{") continue;
    size_t close = pairs[i];
    bool has_paren = false, has_assign = false, is_type = false;
    for (size_t k = head; k < i; ++k) {
      if (t[k].text == "(") has_paren = true;
      if (t[k].text == "=" && !has_paren) has_assign = true;
      if (t[k].text == "struct" || t[k].text == "class" || t[k].text == "union" ||
          t[k].text == "enum")
        is_type = is_type || !has_paren;
    }
    bool ns =
        head < i && (t[head].text == "namespace" ||
                     (t[head].text == "inline" && head + 1 < i && t[head + 1].text == "namespace"));
    bool extern_c = i == head + 2 && t[head].text == "extern" && t[head + 1].text == "\"C\"";
    if (ns || extern_c) {
      std::string name = extern_c ? "" : "namespace";
      for (size_t k = head + 1; k < i && !extern_c; ++k) name += " " + t[k].text;
      scopes.push_back({name, close});
      head = i + 1;
      continue;
    }
    if (has_paren && !has_assign && !is_type) {
      FunctionDef f;
      for (const auto& sc : scopes) {
        if (sc.first.empty())
          f.in_extern_c = true;
        else
          f.scopes.push_back(sc.first);
      }
      f.head = head;
      f.body = i;
      f.end = close;
      out.push_back(f);
    }
    i = close;  // a function's body, a class, an initializer: nothing at namespace scope inside
    head = close + 1;
  }
  return out;
}

bool is_templated_call(const std::vector<Token>& t, size_t i) {
  // decltype(forward_templated<...>(...)) names a type and instantiates nothing (a combination
  // skipped before running: without_combinations).
  if (i >= 2 && t[i - 1].text == "(" && t[i - 2].text == "decltype") return false;
  return i + 1 < t.size() && t[i + 1].text == "<" && ends_with(t[i].text, kTemplated) &&
         (t[i].text.size() == std::string(kTemplated).size() ||
          ends_with(t[i].text, std::string("::") + kTemplated));
}

// One instantiation as the body's scan saw it.
struct Seen {
  std::vector<std::string> args;
  std::string text;
  std::pair<size_t, size_t> call{0, 0};               // the call with its arguments; {0, 0}: none
  std::map<std::string, std::string> fresh, running;  // parameter -> literal
};

// The body's instantiations in order, with the values the conditions before each give the
// tuning parameters: `p == 16`, `16 == p`, `case 16:` of `switch (p)`, `p` / `!p` alone.
std::vector<Seen> scan_body(const std::vector<Token>& t, const std::string& clean, size_t begin,
                            size_t end, const std::vector<std::string>& names) {
  auto tuning = [&](const std::string& s) {
    return std::find(names.begin(), names.end(), s) != names.end();
  };
  std::vector<Seen> out;
  std::map<std::string, std::string> fresh, running;
  std::vector<std::pair<std::string, int>> switches;  // variable, brace depth of its body
  int depth = 0;
  auto set = [&](const std::string& name, const std::string& value) {
    if (value.empty()) return;
    fresh[name] = value;
    running[name] = value;
  };
  for (size_t i = begin; i < end; ++i) {
    const std::string& s = t[i].text;
    if (s == "{") ++depth;
    if (s == "}") {
      while (!switches.empty() && switches.back().second == depth) switches.pop_back();
      --depth;
    }
    if (s == "switch" && i + 3 < end && t[i + 1].text == "(" && t[i + 3].text == ")" &&
        i + 4 < end && t[i + 4].text == "{") {
      switches.push_back({t[i + 2].text, depth + 1});
    } else if (s == "case" && !switches.empty() && tuning(switches.back().first)) {
      bool neg = i + 1 < end && t[i + 1].text == "-";
      size_t v = i + 1 + (neg ? 1 : 0);
      if (v < end) set(switches.back().first, literal_value(t[v].text, neg));
    } else if (s == "==" && i > begin && i + 1 < end) {
      if (tuning(t[i - 1].text)) {
        bool neg = t[i + 1].text == "-";
        if (i + 1 + neg < end) set(t[i - 1].text, literal_value(t[i + 1 + neg].text, neg));
      } else if (tuning(t[i + 1].text)) {
        bool neg = i >= begin + 2 && t[i - 2].text == "-";
        set(t[i + 1].text, literal_value(t[i - 1].text, neg));
      }
    } else if (tuning(s) && i > begin && i + 1 < end) {
      // A flag tested alone: (p), (!p), && p &&.
      const std::string& before = t[i - 1].text;
      const std::string& after = t[i + 1].text;
      bool alone_after = after == ")" || after == "&&" || after == "||";
      if (before == "!" && alone_after) set(s, "false");
      if ((before == "(" || before == "&&" || before == "||") && alone_after) set(s, "true");
    }
    if (is_templated_call(t, i)) {
      size_t close = matching(t, i + 1);
      if (close >= end) break;
      Seen seen;
      size_t arg_start = i + 2;
      int nest = 0;
      for (size_t k = i + 2; k <= close; ++k) {
        const std::string& a = t[k].text;
        if (a == "(" || a == "<" || a == "[" || a == "{") ++nest;
        if ((a == ")" || a == ">" || a == "]" || a == "}") && k != close) --nest;
        if ((a == "," && nest == 0) || k == close) {
          if (k > arg_start) seen.args.push_back(span_text(clean, t[arg_start].pos, t[k].pos));
          arg_start = k + 1;
        }
      }
      seen.text = span_text(clean, t[i].pos, t[close].pos + 1);
      if (close + 1 < end && t[close + 1].text == "(") {
        size_t args_close = matching(t, close + 1);
        if (args_close < end) seen.call = {t[i].pos, t[args_close].pos + 1};
      }
      seen.fresh = fresh;
      seen.running = running;
      fresh.clear();
      out.push_back(std::move(seen));
      i = close;
    }
  }
  return out;
}

// A parameter's name: the last identifier before a default value or an array's brackets.
std::string param_name(const std::string& param) {
  std::vector<Token> t = tokenize(param);
  size_t end = t.size();
  while (end > 0 && t[end - 1].text == "]") {
    size_t k = end - 1;
    while (k > 0 && t[k].text != "[") --k;
    end = k;
  }
  if (end < 2 || !t[end - 1].ident()) return "";
  static const char* kTypes[] = {"int",  "long", "short",  "char",     "float", "double",
                                 "bool", "auto", "signed", "unsigned", "void",  "size_t"};
  for (const char* k : kTypes)
    if (t[end - 1].text == k) return "";
  return t[end - 1].text;
}

struct Signature {
  std::string return_type, name;
  std::vector<std::string> params, names;
};

Result<Signature> read_signature(const std::vector<Token>& t, const std::string& clean,
                                 const FunctionDef& f) {
  Signature sig;
  size_t open = f.body;
  for (size_t k = f.head; k < f.body; ++k) {
    if (t[k].text != "(" || k == f.head || !t[k - 1].ident()) continue;
    const std::string& before = t[k - 1].text;
    if (before == "__attribute__" || before == "__declspec" || before == "alignas" ||
        before == "decltype" || before == "__launch_bounds__")
      continue;
    open = k;
    break;
  }
  if (open >= f.body) return Result<Signature>::error("no parameter list");
  size_t close = matching(t, open);
  std::string qualified = t[open - 1].text;
  sig.name =
      qualified.substr(qualified.rfind(':') == std::string::npos ? 0 : qualified.rfind(':') + 1);
  std::vector<std::string> prefix;
  for (size_t k = f.head; k + 1 < open; ++k) {
    const std::string& w = t[k].text;
    if (w == "static")
      return Result<Signature>::error(
          "the dispatcher " + sig.name +
          " is static: KernelFoundry's entry point calls it from another file, so it must "
          "not be static");
    if (w == "inline" || w == "__host__" || w == "extern") continue;
    prefix.push_back(w);
  }
  sig.return_type = join(prefix, " ");
  sig.return_type = replace_all(replace_all(sig.return_type, " *", "*"), " &", "&");
  size_t start = open + 1;
  int nest = 0;
  for (size_t k = open + 1; k <= close && k < t.size(); ++k) {
    const std::string& a = t[k].text;
    if (a == "(" || a == "<" || a == "[" || a == "{") ++nest;
    if ((a == ")" || a == ">" || a == "]" || a == "}") && k != close) --nest;
    if ((a == "," && nest == 0) || k == close) {
      if (k > start) {
        std::string p = span_text(clean, t[start].pos, t[k].pos);
        size_t eq = std::string::npos;
        int d = 0;
        for (size_t c = 0; c < p.size() && eq == std::string::npos; ++c) {
          if (std::strchr("(<[{", p[c])) ++d;
          if (std::strchr(")>]}", p[c])) --d;
          if (p[c] == '=' && d == 0) eq = c;
        }
        if (eq != std::string::npos) p = trim(p.substr(0, eq));
        if (p != "void") sig.params.push_back(p);
      }
      start = k + 1;
    }
  }
  for (const std::string& p : sig.params) sig.names.push_back(param_name(p));
  return sig;
}

std::string what(const std::string& instantiation) {
  return "`" + instantiation + "`";
}

}  // namespace

std::vector<std::string> TemplatedKernel::tuning_names() const {
  return std::vector<std::string>(param_names.end() - static_cast<long>(num_tuning),
                                  param_names.end());
}

Result<std::optional<TemplatedKernel>> parse_templated(const std::string& code,
                                                       size_t max_combinations) {
  using R = Result<std::optional<TemplatedKernel>>;
  std::string clean = blank_noise(code);
  std::vector<Token> t = tokenize(clean);
  // The dispatcher: the non-template function with the most instantiations in its body.
  const FunctionDef* best = nullptr;
  size_t best_calls = 0;
  std::vector<FunctionDef> defs = functions(t);
  for (const FunctionDef& f : defs) {
    if (t[f.head].text == "template") continue;
    size_t calls = 0;
    for (size_t i = f.body; i < f.end; ++i) calls += is_templated_call(t, i) ? 1 : 0;
    if (calls > best_calls) {
      best = &f;
      best_calls = calls;
    }
  }
  if (best == nullptr) return R(std::optional<TemplatedKernel>());
  auto sig = read_signature(t, clean, *best);
  if (!sig) return R::error("templated kernel: " + sig.message());
  if (best->in_extern_c)
    return R::error("templated kernel: the dispatcher " + sig->name +
                    " is inside extern \"C\": it overloads the entry point, so it needs C++ "
                    "linkage");
  TemplatedKernel k;
  k.scopes = best->scopes;
  k.return_type = sig->return_type;
  k.name = sig->name;
  k.params = sig->params;
  k.param_names = sig->names;
  for (const std::string& line : split_lines(code))
    if (starts_with(trim(line), "#include") || starts_with(trim(line), "# include"))
      k.includes.push_back(trim(line));

  // How many tuning parameters: the instantiations' argument count, the same for all.
  std::vector<Seen> first = scan_body(t, clean, best->body, best->end, {});
  if (first.empty()) return R(std::optional<TemplatedKernel>());
  k.num_tuning = first.front().args.size();
  for (const Seen& s : first) {
    if (s.args.size() != k.num_tuning)
      return R::error(strprintf(
          "templated kernel: %s has %zu template arguments and %s has %zu: "
          "every instantiation takes one per tuning parameter",
          what(first.front().text).c_str(), k.num_tuning, what(s.text).c_str(), s.args.size()));
  }
  if (k.num_tuning == 0 || k.params.size() <= k.num_tuning)
    return R::error(strprintf(
        "templated kernel: the dispatcher %s has %zu parameter(s) but its instantiations take "
        "%zu template argument(s): it must take the entry point's parameters followed by one "
        "int per template parameter",
        k.name.c_str(), k.params.size(), k.num_tuning));
  std::vector<std::string> names = k.tuning_names();
  for (size_t i = 0; i < k.params.size(); ++i)
    if (k.param_names[i].empty())
      return R::error(
          strprintf("templated kernel: the dispatcher's parameter %zu (`%s`) has no "
                    "name: name every parameter",
                    i + 1, k.params[i].c_str()));

  for (const Seen& s : scan_body(t, clean, best->body, best->end, names)) {
    TemplateCombination combo;
    combo.instantiation = s.text;
    combo.calls.push_back(s.call);
    for (size_t i = 0; i < names.size(); ++i) {
      // A condition since the previous instantiation, else the literal argument, else a
      // condition of an enclosing block or switch.
      std::string value;
      if (auto it = s.fresh.find(names[i]); it != s.fresh.end()) value = it->second;
      if (value.empty()) value = literal_value(s.args[i]);
      if (auto it = s.running.find(names[i]); value.empty() && it != s.running.end())
        value = it->second;
      if (value.empty())
        return R::error("templated kernel: cannot read the value of " + names[i] +
                        " that selects " + what(s.text) +
                        ": compare it with a literal before the call (`if (" + names[i] +
                        " == 128 && ...)`) or pass literal template arguments");
      combo.values.push_back(value);
    }
    bool seen = false;
    for (TemplateCombination& c : k.combinations) {
      if (c.values != combo.values) continue;
      seen = true;
      c.calls.push_back(s.call);  // listed twice: both calls instantiate it
    }
    if (!seen) k.combinations.push_back(std::move(combo));
  }
  if (k.combinations.size() > max_combinations)
    return R::error(strprintf(
        "templated kernel: the dispatcher lists %zu combinations; at most %zu are evaluated "
        "(each is a full evaluation): list the few worth measuring%s",
        k.combinations.size(), max_combinations,
        max_combinations < kMaxTuneCombinations
            ? strprintf(" (kernelfoundry tune with tune.budget takes spaces of up to %zu)",
                        kMaxTuneCombinations)
                  .c_str()
            : ""));
  return R(std::optional<TemplatedKernel>(std::move(k)));
}

nlohmann::json combination_params(const TemplatedKernel& kernel, const TemplateCombination& combo) {
  nlohmann::json out = nlohmann::json::object();
  std::vector<std::string> names = kernel.tuning_names();
  for (size_t i = 0; i < names.size() && i < combo.values.size(); ++i) {
    const std::string& v = combo.values[i];
    if (v == "true" || v == "false")
      out[names[i]] = v == "true";
    else
      out[names[i]] = std::strtoll(v.c_str(), nullptr, 10);
  }
  return out;
}

std::string combination_label(const TemplatedKernel& kernel, const TemplateCombination& combo) {
  std::vector<std::string> parts;
  std::vector<std::string> names = kernel.tuning_names();
  for (size_t i = 0; i < names.size() && i < combo.values.size(); ++i)
    parts.push_back(names[i] + "=" + combo.values[i]);
  return join(parts, ", ");
}

std::string templated_entry_file(Language language) {
  return language == Language::kCuda ? "kf_templated_entry.cu" : "kf_templated_entry.cpp";
}

Result<std::optional<TemplatedSource>> find_templated(
    const TaskPackage& task, const std::map<std::string, std::string>& changed,
    size_t max_combinations) {
  using R = Result<std::optional<TemplatedSource>>;
  std::vector<std::string> files;
  static const char* kSources[] = {".cpp", ".cc", ".cxx", ".cu", ".h", ".hpp", ".cuh"};
  for (const Block* b : task.blocks_of(BlockKind::kEvolve)) {
    std::string ext = to_lower(b->file.substr(std::min(b->file.size(), b->file.rfind('.'))));
    bool source = false;
    for (const char* s : kSources) source = source || ext == s;
    if (source && std::find(files.begin(), files.end(), b->file) == files.end())
      files.push_back(b->file);
  }
  for (const std::string& file : files) {
    auto it = changed.find(file);
    const TaskFile* original = task.file(file);
    if (it == changed.end() && (original == nullptr || original->large())) continue;
    auto parsed =
        parse_templated(it != changed.end() ? it->second : original->content, max_combinations);
    if (!parsed) return R::error(file + ": " + parsed.message());
    if (parsed->has_value()) return R(TemplatedSource{file, std::move(**parsed)});
  }
  return R(std::optional<TemplatedSource>());
}

std::string templated_entry_path(const TemplatedSource& source, Language language) {
  size_t slash = source.file.rfind('/');
  std::string dir = slash == std::string::npos ? "" : source.file.substr(0, slash + 1);
  return dir + templated_entry_file(language);
}

std::string template_results_text(const nlohmann::json& results) {
  if (!results.is_array() || results.empty()) return "";
  std::vector<std::string> lines;
  for (const auto& r : results) {
    if (!r.is_object()) continue;
    std::string line = "- " + r.value("label", std::string("?")) + ": ";
    std::string timing = r.value("timing", std::string("full"));
    if (timing == "not run") {
      lines.push_back(line + "not run");
      continue;
    }
    if (timing == "skipped") {
      lines.push_back(line + r.value("reason", std::string("skipped before running")));
      continue;
    }
    int verdict = r.value("verdict", 0);
    line += std::string(verdict_name(verdict));
    if (r.contains("speedup") && r["speedup"].is_number())
      line += strprintf(", speedup %.3fx", r["speedup"].get<double>());
    // Many combinations are first timed briefly; only the fastest few are timed side by side.
    if (timing == "short" && verdict == kCorrect) line += " (short timing only)";
    if (r.value("chosen", false) && !r.contains("confirmed_verdict")) {
      line += " (chosen: the kernel's result)";
    } else if (r.value("chosen", false)) {
      // Picked by this run's figure, then run again: that run is the kernel's result.
      line += r.value("confirmed_verdict", 0) == kCorrect && r["confirmed_speedup"].is_number()
                  ? strprintf(" (chosen; its confirming run, the kernel's result: %.3fx)",
                              r["confirmed_speedup"].get<double>())
                  : " (chosen; its confirming run failed)";
    }
    if (verdict != kCorrect) {
      std::string why = r.value("reason", std::string());
      if (why.size() > 200) {
        size_t cut = 197;
        while (cut > 0 && (static_cast<unsigned char>(why[cut]) & 0xC0) == 0x80) --cut;
        why = why.substr(0, cut) + "...";
      }
      if (!why.empty()) line += ": " + why;
    }
    lines.push_back(line);
  }
  return join(lines, "\n");
}

bool is_templated_entry_file(const std::string& path) {
  std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  return name == templated_entry_file(Language::kCpp) ||
         name == templated_entry_file(Language::kCuda);
}

std::string templated_entry_source(const TemplatedKernel& k, const TemplateCombination& fallback) {
  std::string out =
      "// Generated by KernelFoundry for a templated kernel: " + k.name +
      " as the task calls it, running the combination named by the harness's --template-params "
      "(without one: " +
      combination_label(k, fallback) + ").\n";
  for (const std::string& inc : k.includes) out += inc + "\n";
  out +=
      "\nnamespace kernelfoundry {\nlong long template_param(const char* name, long long "
      "fallback);\n}  // namespace kernelfoundry\n\n";
  for (const std::string& s : k.scopes) out += s + " {\n";
  size_t plain = k.params.size() - k.num_tuning;
  std::vector<std::string> plain_params(k.params.begin(), k.params.begin() + plain);
  std::vector<std::string> args(k.param_names.begin(), k.param_names.begin() + plain);
  std::vector<std::string> names = k.tuning_names();
  std::vector<std::string> tuning;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string v = i < fallback.values.size() ? fallback.values[i] : "0";
    if (v == "true") v = "1";
    if (v == "false") v = "0";
    tuning.push_back("kernelfoundry::template_param(\"" + names[i] + "\", " + v + ")");
  }
  out += k.return_type + " " + k.name + "(" + join(k.params, ", ") + ");\n\n";
  out += k.return_type + " " + k.name + "(" + join(plain_params, ", ") + ") {\n";
  out += "  return " + k.name + "(" + join(args, ", ") + ",\n      " + join(tuning, ",\n      ") +
         ");\n}\n";
  for (size_t i = k.scopes.size(); i > 0; --i) out += "}  // " + k.scopes[i - 1] + "\n";
  return out;
}

}  // namespace kf

namespace kf {

std::vector<OverLimitKernel> over_limit_kernels(const std::string& build_log) {
  std::vector<OverLimitKernel> out;
  // ptxas: "Entry function '_Z1kILi16384EEvPf' uses too much shared data (0x10000 bytes, 0xc000
  // max)"; the same for local and parameter data.
  static const std::string kEntry = "Entry function '";
  for (size_t at = build_log.find(kEntry); at != std::string::npos;
       at = build_log.find(kEntry, at + 1)) {
    size_t begin = at + kEntry.size();
    size_t quote = build_log.find('\'', begin);
    if (quote == std::string::npos) break;
    size_t line_end = build_log.find('\n', quote);
    std::string rest = build_log.substr(
        quote + 1, line_end == std::string::npos ? std::string::npos : line_end - quote - 1);
    if (rest.find("uses too much") == std::string::npos) continue;
    OverLimitKernel k;
    k.symbol = build_log.substr(begin, quote - begin);
    int status = 0;
    char* demangled = abi::__cxa_demangle(k.symbol.c_str(), nullptr, nullptr, &status);
    k.name = status == 0 && demangled != nullptr ? demangled : k.symbol;
    std::free(demangled);
    k.detail = trim(rest);
    bool listed = false;
    for (const OverLimitKernel& o : out) listed = listed || o.symbol == k.symbol;
    if (!listed) out.push_back(std::move(k));
  }
  return out;
}

std::string unbudgeted_space_problem(size_t n, size_t budget) {
  if (budget > 0 || n <= kMaxTemplateCombinations) return "";
  return strprintf(
      "the dispatcher lists %zu combinations; more than %zu are tuned with a budget: "
      "tune.budget=N runs N of them, drawn at random (docs/templating.md, 'Large spaces')",
      n, kMaxTemplateCombinations);
}

std::string launch_limit_error(const std::string& reason) {
  // A launch error as the CUDA harness reports it: "CUDA error from run(): <message> (<name>)".
  static const std::string kFromRun = "CUDA error from run(): ";
  size_t from = reason.find(kFromRun);
  if (from == std::string::npos) return "";
  size_t begin = from + kFromRun.size();
  // cudaErrorInvalidValue too: a block of more than 1024 threads reads so on an H100 with CUDA
  // 13.0 (seen in bench/results/h100/tune_over_limit.txt), not as InvalidConfiguration.
  for (const char* name : {"(cudaErrorLaunchOutOfResources)", "(cudaErrorInvalidConfiguration)",
                           "(cudaErrorInvalidValue)"}) {
    size_t at = reason.find(name, begin);
    size_t line_end = reason.find('\n', begin);
    if (at == std::string::npos || at > line_end) continue;
    return trim(reason.substr(begin, at + std::string(name).size() - begin));
  }
  return "";
}

std::vector<size_t> combinations_instantiating(const TemplatedKernel& k,
                                               const std::string& kernel_name) {
  // The kernel's template arguments: "void ns::k<32, 4>(float*)" -> {"32", "4"}.
  std::vector<std::string> args;
  size_t open = kernel_name.find('<'), paren = kernel_name.find('(');
  if (open == std::string::npos || (paren != std::string::npos && paren < open)) return {};
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open; i < kernel_name.size(); ++i) {
    char c = kernel_name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if ((c == ',' && depth == 1) || depth == 0) {
      args.push_back(literal_value(kernel_name.substr(start, i - start)));
      start = i + 1;
    }
    if (depth == 0) break;
  }
  if (args.empty() || std::find(args.begin(), args.end(), "") != args.end()) return {};
  // Its arguments are the combination's values, else a run of them (a kernel templated on some
  // of the tuning parameters: every combination with those values instantiates it).
  std::vector<size_t> exact, runs;
  for (size_t i = 0; i < k.combinations.size(); ++i) {
    const std::vector<std::string>& v = k.combinations[i].values;
    if (v == args) exact.push_back(i);
    if (std::search(v.begin(), v.end(), args.begin(), args.end()) != v.end()) runs.push_back(i);
  }
  return exact.empty() ? runs : exact;
}

std::optional<std::string> without_combinations(const std::string& code, const TemplatedKernel& k,
                                                const std::vector<size_t>& skip) {
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t i : skip) {
    if (i >= k.combinations.size()) return std::nullopt;
    for (const auto& span : k.combinations[i].calls) {
      if (span.second <= span.first || span.second > code.size()) return std::nullopt;
      spans.push_back(span);
    }
  }
  if (spans.empty()) return std::nullopt;
  std::sort(spans.rbegin(), spans.rend());  // from the end, so earlier positions hold
  std::string out = code;
  for (const auto& [begin, end] : spans) {
    // decltype names the call's type without instantiating its definition (nor its kernels).
    out.replace(begin, end - begin,
                "kf_skipped_combination<decltype(" + code.substr(begin, end - begin) + ")>()");
  }
  return std::string(
             "// KernelFoundry: combinations over the device's limits are not instantiated.\n"
             "#include <stdexcept>\n"
             "template <class T> T kf_skipped_combination() {\n"
             "  throw std::runtime_error(\"kernelfoundry: combination skipped (over the device's "
             "limits)\");\n"
             "}\n"
             "#line 1\n") +
         out;
}

}  // namespace kf
