// Pieces shared by package.cpp and archive.cpp (not part of the task subsystem's interface).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace kf::task_internal {

// Whether a folder entry is not part of a package: version control, build outputs, caches,
// editor and OS litter. `top_level` entries also skip our own `runs/` and `results/` outputs,
// which appear when the tool is run from inside the package folder.
bool is_ignored(std::string_view name, bool is_dir, bool top_level);

// The package's files under `dir`: relative '/'-separated paths, sorted, ignored ones skipped.
Result<std::vector<std::string>> list_package_files(const std::filesystem::path& dir);

// .tar, .tar.gz, .tgz, .zip (and .tar.bz2/.tar.xz, which libarchive reads as well).
bool is_archive_name(const std::filesystem::path& path);

// Extracts `archive` into `parent`/<content hash> (reused when it already exists) and returns
// that folder. Refuses absolute paths, '..' components and escaping links.
Result<std::filesystem::path> extract_archive(const std::filesystem::path& archive,
                                              const std::filesystem::path& parent);

}  // namespace kf::task_internal
