// The integration contract's evidence: each file that holds EVOLVE blocks, shown with every block
// collapsed to one marker line, plus the package headers it includes.
#pragma once

#include <string>
#include <string_view>

#include "task/task.h"

namespace kf {

// "EVOLVE block 2 (softmax.cl)": how prompts and answers name the n-th (1-based) EVOLVE block.
std::string evolve_block_label(const Block& block, int number);

// The fence info string for a file by its extension: "cuda", "opencl", "python" or "cpp".
std::string_view fence_for_file(std::string_view path);

// Markdown: for each file with EVOLVE blocks, a heading and a fenced copy in which every EVOLVE
// block is one marker line (its old contents not shown) and USER_INSTRUCTIONS / REFERENCE blocks
// are one line pointing at their own sections; then headers from the package that the file
// includes with `#include "..."`.
std::string evolve_file_views(const TaskPackage& task, bool include_reference);

}  // namespace kf
