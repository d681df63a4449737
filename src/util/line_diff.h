// A line diff of two texts in unified format: what a candidate changed against its parent, as
// later prompts show it.
#pragma once

#include <cstddef>
#include <string>

namespace kf {

// The lines that differ between `before` and `after` as unified-diff hunks ("@@ -a,b +c,d @@",
// then " ", "-" and "+" lines) with `context` unchanged lines around each change; "" when the
// texts have the same lines. Large inputs whose changed middle is too long to align line by line
// are shown as the whole middle removed and added.
std::string unified_diff(const std::string& before, const std::string& after, size_t context = 2);

}  // namespace kf
