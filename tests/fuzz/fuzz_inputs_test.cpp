// Bounded random drivers for the parsers of untrusted text: compiler/candidate output (log
// cleaning), LLM answers (code extraction), task files (block parsing) and config.yaml (YAML
// reading, compose). Fixed seeds and counts, so CI runs the same few thousand inputs in seconds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/tree.h"
#include "config/yaml_reader.h"
#include "eval/log_clean.h"
#include "eval/templated.h"
#include "search/extract.h"
#include "task/task.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = KF_SOURCE_DIR;

// Pieces that steer mutations into the parsers' interesting states.
const std::vector<std::string> kTokens = {":",
                                          "(",
                                          ")",
                                          "12",
                                          ":3:4: ",
                                          " error: ",
                                          " warning: ",
                                          " note: ",
                                          "fatal error",
                                          "\n",
                                          "\r\n",
                                          "\t",
                                          "      from ",
                                          "In file included from ",
                                          "```",
                                          "~~~",
                                          "```cuda",
                                          "```cpp block=2",
                                          "<cuda>",
                                          "</cuda>",
                                          "<code>",
                                          "</code>",
                                          "<opencl block=\"1\">",
                                          "[EVOLVE_START]",
                                          "[EVOLVE_END]",
                                          "[REFERENCE_START]",
                                          "[REFERENCE_END]",
                                          "[USER_INSTRUCTIONS_START]",
                                          "// ",
                                          "/* ",
                                          " */",
                                          "<!-- ",
                                          " -->",
                                          "#",
                                          "\"",
                                          "'",
                                          "\\",
                                          "{",
                                          "}",
                                          ";",
                                          "[",
                                          "]",
                                          "&a ",
                                          "*a",
                                          "- ",
                                          ": ",
                                          "!!binary ",
                                          "? ",
                                          "\xff",
                                          "\xc3",
                                          "\xe2\x82",
                                          "\xed\xa0\x80",
                                          "\xf4\x90\x80\x80",
                                          std::string(1, '\0'),
                                          "\xc3\xa9"};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  size_t below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  std::string random_bytes(size_t max_len) {
    std::string s(below(max_len + 1), '\0');
    for (auto& c : s) c = static_cast<char>(below(256));
    return s;
  }

  // A few random edits of `s`: byte flips, inserted tokens or bytes, cut or repeated ranges,
  // and splices of another input.
  std::string mutate(std::string s, const std::vector<std::string>& corpus) {
    size_t edits = 1 + below(8);
    for (size_t e = 0; e < edits; ++e) {
      size_t pos = below(s.size() + 1);
      switch (below(7)) {
        case 0:
          if (!s.empty()) s[below(s.size())] = static_cast<char>(below(256));
          break;
        case 1:
          s.insert(pos, kTokens[below(kTokens.size())]);
          break;
        case 2:
          s.insert(pos, random_bytes(16));
          break;
        case 3:
          s.erase(pos, below(64));
          break;
        case 4: {  // repeat a range
          size_t len = std::min<size_t>(below(128), s.size() - pos);
          std::string piece = s.substr(pos, len);
          for (size_t k = below(8); k > 0; --k) s.insert(pos, piece);
          break;
        }
        case 5: {  // splice from another input
          const std::string& other = corpus[below(corpus.size())];
          size_t from = below(other.size() + 1);
          s.insert(pos, other.substr(from, below(512)));
          break;
        }
        case 6:  // a token repeated many times (deep nesting, runs of markers)
        {
          const std::string& token = kTokens[below(kTokens.size())];
          std::string run;
          for (size_t k = below(300); k > 0; --k) run += token;
          s.insert(pos, run);
        } break;
      }
    }
    return s;
  }

  std::string input(const std::vector<std::string>& corpus) {
    if (below(10) == 0) return random_bytes(2048);
    return mutate(corpus[below(corpus.size())], corpus);
  }

 private:
  std::mt19937_64 rng_;
};

std::vector<std::string> read_all(const std::vector<fs::path>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    auto text = read_file(p);
    if (text) out.push_back(std::move(*text));
  }
  return out;
}

std::vector<fs::path> files_under(const fs::path& dir, const std::vector<std::string>& exts) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    std::string ext = e.path().extension().string();
    if (std::find(exts.begin(), exts.end(), ext) != exts.end()) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());  // directory order is not fixed; the seeds' inputs must be
  return out;
}

const std::vector<std::string>& compiler_logs() {
  static const std::vector<std::string> logs = {
      "In file included from /tmp/job/src/task.cpp:3:\n"
      "                 from /tmp/job/src/other.h:1:\n"
      "/usr/include/foo.h:10:5: warning: deprecated thing [-Wdeprecated]\n"
      "   10 |   old();\n"
      "/usr/include/foo.h:11:5: note: declared here\n"
      "/tmp/job/src/kernel.cpp:42:7: error: 'x' was not declared in this scope\n"
      "   42 |   y = x + 1;\n"
      "      |       ^\n",
      "/w/k.cu(12): error: identifier \"foo\" is undefined\n/w/k.cu(13): error: expected a \";\"\n",
      "<kernel>:5:14: error: use of undeclared identifier 'q'\n  float v = q;\n             ^\n"
      "1 error generated.\n",
      "[harness] shape n=1024: wrong value at [17]: got 3.5, want 3.25 (tolerance 1e-5)\n"
      "verdict: wrong\n",
      "debug: " + std::string(3000, 'v') + "\n"};
  return logs;
}

// Log cleaning: valid UTF-8 out, bounded by the cap (errors may pass it up to twice), no crash.
TEST(FuzzInputs, LogCleaning) {
  std::vector<std::string> corpus = compiler_logs();
  for (auto& s : read_all(files_under(kSource / "examples" / "replay", {".md"})))
    corpus.push_back(std::move(s));
  Mutator m(0x10c1ea);
  for (int i = 0; i < 1500; ++i) {
    std::string raw = m.input(corpus);
    LogCleanOptions o;
    o.strip_prefixes = {"/tmp/job/src", "/w", ""};
    o.own_files = {"kernel.cpp", "k.cu", "<kernel>"};
    o.max_line_chars = 1 + m.below(400);
    o.max_chars = 10 + m.below(6000);
    o.max_input_chars = 64 + m.below(1 << 16);
    std::string out = clean_compiler_output(raw, o);
    ASSERT_TRUE(is_valid_utf8(out)) << "input " << i;
    ASSERT_LE(out.size(), 2 * o.max_chars + 2 * o.max_line_chars + 64) << "input " << i;
  }
  // Shapes that broke the old regex or would be quadratic: huge single lines, floods of lines.
  LogCleanOptions o;
  o.own_files = {"a.cpp"};
  for (const std::string& unit :
       {std::string("a"), std::string(":"), std::string("a("), std::string("a:1"),
        std::string("\xff"), std::string("\n"), std::string("a.cpp:1:1: error: e\n")}) {
    std::string big;
    while (big.size() < (2u << 20)) big += unit;
    std::string out = clean_compiler_output(big, o);
    EXPECT_TRUE(is_valid_utf8(out));
    EXPECT_LE(out.size(), 2 * o.max_chars + 2 * o.max_line_chars + 64);
  }
}

// Code extraction from answers: no throw; what it extracts comes from the answer.
TEST(FuzzInputs, CodeExtraction) {
  std::vector<std::string> corpus = read_all(files_under(kSource / "examples" / "replay", {".md"}));
  corpus.push_back(
      "<cuda block=\"2\">\n__global__ void k() {}\n</cuda>\n<cuda>\nint x;\n</cuda>\n");
  corpus.push_back("Here:\n#include <x>\nint f() {\n  return 1;\n}\nDone.\n");
  corpus.push_back("```cpp\n// [EVOLVE_START]\nint a;\n// [EVOLVE_END]\n```\n");
  ASSERT_GE(corpus.size(), 4u);
  const Language languages[] = {Language::kCuda, Language::kOcl, Language::kCpp, Language::kSycl,
                                Language::kTriton};
  Mutator m(0xc0de);
  for (int i = 0; i < 1500; ++i) {
    std::string answer = m.input(corpus);
    size_t blocks = 1 + m.below(3);
    Result<Extraction> r = extract_code(answer, languages[m.below(5)], blocks);
    if (!r) {
      ASSERT_TRUE(is_valid_utf8(r.message())) << "input " << i;
      continue;
    }
    ASSERT_EQ(r->codes.size(), blocks) << "input " << i;
    for (const auto& code : r->codes) ASSERT_LE(code.size(), answer.size() + 1) << "input " << i;
  }
  // Pathological answers: thousands of unclosed tags, fences and markers on one line.
  for (const std::string& unit :
       {std::string("<cuda x"), std::string("<cuda>x"), std::string("<code>"), std::string("```\n"),
        std::string("[EVOLVE_START]"), std::string("\r\n"), std::string("int a;\n")}) {
    std::string big;
    while (big.size() < (1u << 20)) big += unit;
    Result<Extraction> r = extract_code(big, Language::kCuda, 1);
    if (r) EXPECT_LE(r->codes.front().size(), big.size() + 1);
  }
}

// Templated kernels' dispatchers (eval/templated.h) as a model might garble them: no throw, no
// hang; what is read has a value per tuning parameter, and the generated entry point is made.
TEST(FuzzInputs, TemplatedDispatchers) {
  std::vector<std::string> corpus =
      read_all({kSource / "tests/e2e/candidates/reduction_cpp/templated.cpp",
                kSource / "tests/e2e/candidates/matmul_cuda/templated.cu",
                kSource / "configs/prompts/templated_cpp.md",
                kSource / "configs/prompts/templated_cuda.md",
                kSource / "configs/prompts/templated_sycl.md"});
  corpus.push_back(
      "namespace a { template <int A, bool B> void forward_templated(int* p) {}\n"
      "void go(int* p, int a, bool b) { switch (a) { case 1: if (b) return "
      "forward_templated<1, true>(p); break; case -2: return a::forward_templated<-2, false>(p); "
      "} } }\n");
  ASSERT_GE(corpus.size(), 6u);
  Mutator m(0x7e3b1a7e);
  for (int i = 0; i < 1500; ++i) {
    std::string code = m.input(corpus);
    auto parsed = parse_templated(code);
    if (!parsed) {
      ASSERT_FALSE(parsed.message().empty()) << "input " << i;
      continue;
    }
    if (!parsed->has_value()) continue;
    const TemplatedKernel& k = **parsed;
    ASSERT_GT(k.num_tuning, 0u) << "input " << i;
    ASSERT_LT(k.num_tuning, k.params.size()) << "input " << i;
    for (const TemplateCombination& c : k.combinations) {
      ASSERT_EQ(c.values.size(), k.num_tuning) << "input " << i;
      (void)combination_params(k, c);
    }
    if (!k.combinations.empty()) (void)templated_entry_source(k, k.combinations.front());
  }
  // Deep nesting and long runs must stay linear.
  for (const std::string& unit :
       {std::string("namespace a {"), std::string("{"), std::string("forward_templated<"),
        std::string("void f(int a, int b) { if (a == 1) forward_templated<1>(b); "),
        std::string("switch (a) { case 1: ")}) {
    std::string big;
    while (big.size() < (1u << 20)) big += unit;
    (void)parse_templated(big);
  }
}

// Block parsing and splicing of task files.
TEST(FuzzInputs, BlockParsing) {
  std::vector<std::string> corpus =
      read_all(files_under(kSource / "examples" / "tasks", {".cpp", ".cl", ".cu", ".h", ".py"}));
  ASSERT_GE(corpus.size(), 4u);
  Mutator m(0xb10c);
  for (int i = 0; i < 1500; ++i) {
    std::string text = m.input(corpus);
    auto blocks = parse_blocks("f.cpp", text);
    if (!blocks) continue;
    for (const Block& b : *blocks) {
      ASSERT_LE(b.content.size(), text.size() + 1) << "input " << i;
      ASSERT_LE(b.start_line, b.end_line);
    }
    if (blocks->empty()) continue;
    const Block& b = (*blocks)[m.below(blocks->size())];
    auto spliced = splice_block(text, "f.cpp", b.kind, b.index, m.input(corpus));
    if (spliced) ASSERT_TRUE(starts_with(*spliced, text.substr(0, 0))) << "input " << i;
  }
  // One line holding many markers, many lines of markers.
  for (const std::string& unit :
       {std::string("// [EVOLVE_START] "), std::string("// [EVOLVE_START]\n"),
        std::string("\"// [EVOLVE_END]")}) {
    std::string big;
    while (big.size() < (1u << 20)) big += unit;
    EXPECT_FALSE(parse_blocks("big.cpp", big).is_ok());
  }
}

// Config reading: the YAML reader on mutated config files, then compose from a file.
TEST(FuzzInputs, ConfigReading) {
  std::vector<fs::path> paths = files_under(kSource / "configs", {".yaml"});
  for (const auto& p : files_under(kSource / "examples" / "tasks", {".yaml"})) paths.push_back(p);
  std::vector<std::string> corpus = read_all(paths);
  corpus.push_back("a: &a [1, 2, 3]\nb: [*a, *a, *a]\nc: {x: *a}\n");
  ASSERT_GE(corpus.size(), 4u);
  Mutator m(0xc0f1);
  for (int i = 0; i < 1500; ++i) {
    std::string text = m.input(corpus);
    cfg::Layer layer;
    std::vector<std::string> errors;
    bool ok = false;
    ASSERT_NO_THROW(ok = cfg::read_yaml_layer(text, "config.yaml", "", &layer, &errors))
        << "input " << i;
    if (ok)
      ASSERT_NO_THROW(
          (void)layer.tree.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }

  // Alias expansion (a "billion laughs" document) and deep nesting must be refused, not expanded.
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int k = 1; k < 9; ++k) {
    laughs += strprintf("a%d: &a%d [", k, k);
    for (int j = 0; j < 10; ++j) laughs += strprintf("%s*a%d", j ? ", " : "", k - 1);
    laughs += "]\n";
  }
  {
    cfg::Layer layer;
    std::vector<std::string> errors;
    EXPECT_FALSE(cfg::read_yaml_layer(laughs, "laughs.yaml", "", &layer, &errors));
    ASSERT_FALSE(errors.empty());
    EXPECT_NE(errors.front().find("laughs.yaml"), std::string::npos) << errors.front();
  }
  {
    cfg::Layer layer;
    std::vector<std::string> errors;
    std::string deep = "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
    EXPECT_FALSE(cfg::read_yaml_layer(deep, "deep.yaml", "", &layer, &errors));
  }

  // compose() from a file, as `kernelfoundry run` reads a task's config.yaml.
  fs::path dir = fs::temp_directory_path() / strprintf("kf_fuzz_config_%d", int(::getpid()));
  fs::create_directories(dir);
  Mutator mc(0xc0f2);
  for (int i = 0; i < 150; ++i) {
    std::string text = i == 0 ? laughs : mc.input(corpus);
    ASSERT_TRUE(write_file(dir / "config.yaml", text).ok());
    ComposeOptions options;
    options.config_dir = kSource / "configs";
    options.task_config = dir / "config.yaml";
    options.args = {"task_name=t", "job_name=j"};
    Result<Config> config = Result<Config>::error("not run");
    ASSERT_NO_THROW(config = compose(options)) << "input " << i;
    if (config) {
      ASSERT_NO_THROW((void)config->show()) << "input " << i;
    } else {
      EXPECT_TRUE(is_valid_utf8(config.message())) << "input " << i;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kf
