// Paths set by a task package's own config.yaml / overrides.yaml: a package is data from
// someone else, so what it sets may only point inside itself (input paths) or stay under the
// working directory (where the run writes).
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"

namespace kf::cfg {

// For every path-valued key whose value came from one of `task_sources` (origins as composed):
// input paths (kernels_iter_0_path other than `best`/`best-<job>`, prompt.template_dir, replay
// folders) are taken relative to `package_root` and must resolve, `..` and symlinks included,
// inside it; they are rewritten to that absolute path. Output paths (paths.*) must be relative
// without `..`. Each violation adds one error naming the key, the file and line, and the fix.
void confine_task_paths(Config& config, const std::filesystem::path& package_root,
                        const std::set<std::string>& task_sources,
                        std::vector<std::string>* errors);

}  // namespace kf::cfg
