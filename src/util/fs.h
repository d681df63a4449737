// File-system helpers: whole-file reads, crash-safe writes, temporary directories.
#pragma once

#include <filesystem>
#include <string>

#include "util/status.h"

namespace kf {

namespace fs = std::filesystem;

Result<std::string> read_file(const fs::path& path);
// Writes through a temporary file and rename, so a crash never leaves half a file.
Status write_file(const fs::path& path, std::string_view content);
Status make_dirs(const fs::path& path);
// A fresh, uniquely named directory under `parent` (created), e.g. for a child's work dir.
Result<fs::path> make_temp_dir(const fs::path& parent, std::string_view prefix);
// Directory holding the running executable.
fs::path executable_dir();

}  // namespace kf
