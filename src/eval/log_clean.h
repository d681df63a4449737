// Cleans compiler output for the eval log (DESIGN.md §6.1): the model sees the errors that matter,
// in the candidate's own file names, without include stacks, foreign warnings or repeats.
#pragma once

#include <string>
#include <vector>

namespace kf {

struct LogCleanOptions {
  std::vector<std::string> strip_prefixes;  // absolute dirs to cut from paths ("/x/src/" -> "")
  std::vector<std::string> own_files;  // package files (relative); warnings elsewhere are dropped
  size_t max_line_chars = 300;         // a longer line keeps its head and notes the bytes cut
  size_t max_chars = 6000;             // cap for the whole text; error lines are kept first
  size_t max_input_chars = 4 << 20;    // more input keeps its head and tail, the middle is cut
};

// Linear in the input on arbitrary bytes; the result is valid UTF-8 (other bytes as `\xNN`) and
// at most about 2 * max_chars long.
std::string clean_compiler_output(const std::string& raw, const LogCleanOptions& options);

}  // namespace kf
