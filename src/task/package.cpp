// Loading a task package: which files belong to it, its blocks, its identity hash, and
// writing a candidate's copy of it.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <system_error>

#include "task/internal.h"
#include "task/task.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kf {

namespace task_internal {

bool is_ignored(std::string_view name, bool is_dir, bool top_level) {
  if (is_dir) {
    static const char* kDirs[] = {".git",
                                  ".hg",
                                  ".svn",
                                  "__pycache__",
                                  ".pytest_cache",
                                  ".mypy_cache",
                                  ".ipynb_checkpoints",
                                  "__MACOSX",
                                  ".vscode",
                                  ".idea",
                                  "build"};
    for (const char* d : kDirs) {
      if (name == d) return true;
    }
    if (starts_with(name, "build-") || starts_with(name, "cmake-build-")) return true;
    return top_level && (name == "runs" || name == "results");
  }
  static const char* kFiles[] = {".DS_Store", "Thumbs.db", ".git"};  // .git: a worktree's link
  for (const char* f : kFiles) {
    if (name == f) return true;
  }
  static const char* kSuffixes[] = {".o",   ".obj", ".so",  ".dylib", ".a",
                                    ".pyc", ".pyo", ".swp", "~"};
  for (const char* s : kSuffixes) {
    if (ends_with(name, s)) return true;
  }
  return starts_with(name, "._");  // macOS AppleDouble litter in zips
}

Result<std::vector<std::string>> list_package_files(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    return Result<std::vector<std::string>>::error("cannot read folder " + dir.string() + ": " +
                                                   ec.message());
  }
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    const bool top = it.depth() == 0;
    if (it->is_directory(ec)) {
      if (is_ignored(name, true, top)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec) || is_ignored(name, false, top)) continue;
    files.push_back(it->path().lexically_relative(dir).generic_string());
  }
  if (ec) {
    return Result<std::vector<std::string>>::error("cannot read folder " + dir.string() + ": " +
                                                   ec.message());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace task_internal

namespace {

constexpr std::string_view kConfigFile = "config.yaml";
constexpr std::string_view kOverridesFile = "overrides.yaml";
constexpr size_t kBinaryProbeBytes = 8192;
// Bumped if what goes into the hash changes, so old and new task ids never collide.
constexpr std::string_view kHashVersion = "kf-task-v1";

bool is_config_file(std::string_view path) {
  return path == kConfigFile || path == kOverridesFile;
}

bool looks_binary(std::string_view content) {
  return content.substr(0, kBinaryProbeBytes).find('\0') != std::string_view::npos;
}

// The config subsystem validates keys; here we only make sure the file parses, so a broken
// config.yaml is reported together with every other problem of the package.
void check_yaml(const TaskFile& file, std::vector<std::string>* errors) {
  try {
    YAML::Node node = YAML::Load(file.content);
    if (!node.IsNull() && !node.IsMap()) {
      errors->push_back(file.path + ":1: must be a mapping of `key: value` lines");
    }
  } catch (const YAML::Exception& e) {
    errors->push_back(strprintf("%s:%d:%d: not valid YAML: %s", file.path.c_str(), e.mark.line + 1,
                                e.mark.column + 1, e.msg.c_str()));
  }
}

bool is_kernel_name(std::string_view path) {
  static const char* kExtensions[] = {".cu", ".cl", ".sycl", ".cpp", ".cc", ".py", ".cuh"};
  if (path == "task.cpp" || path == "task.py") return false;
  for (const char* ext : kExtensions) {
    if (ends_with(path, ext)) return true;
  }
  return false;
}

std::string missing_evolve_message(const TaskPackage& package) {
  std::string kernel = "your kernel file (*.cu, *.cl, *.cpp, *.sycl, *.py)";
  for (const auto& f : package.files) {
    if (!f.binary && is_kernel_name(f.path)) {
      kernel = "your kernel file (e.g. " + f.path + ")";
      break;
    }
  }
  return "task package " + package.source +
         " has no EVOLVE block: mark the code the LLM may rewrite in " + kernel +
         " with a `// [EVOLVE_START]` line before it and a `// [EVOLVE_END]` line after it "
         "(`#` in Python); the block may be empty to have the kernel written from scratch";
}

// For an archive, the folder holding the package: the extraction folder itself, or its single
// top-level folder when the archive was made from outside the package folder.
fs::path archive_root(const fs::path& extracted) {
  if (fs::exists(extracted / kConfigFile)) return extracted;
  std::vector<fs::path> entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(extracted, ec)) {
    std::string name = e.path().filename().string();
    if (!task_internal::is_ignored(name, e.is_directory(), false)) entries.push_back(e.path());
  }
  if (entries.size() == 1 && fs::is_directory(entries[0])) return entries[0];
  return extracted;
}

Result<TaskPackage> load_folder(const fs::path& root, std::string source) {
  TaskPackage package;
  package.root = root;
  package.source = std::move(source);
  auto listed = task_internal::list_package_files(root);
  if (!listed) return listed.status();
  std::vector<std::string> errors;
  for (const auto& rel : *listed) {
    auto content = read_file(root / rel);
    if (!content) {
      errors.push_back(content.message());
      continue;
    }
    TaskFile f;
    f.path = rel;
    f.binary = looks_binary(*content);
    f.content = std::move(*content);
    package.files.push_back(std::move(f));
  }

  if (package.file(kConfigFile) == nullptr) {
    std::string hint;
    for (const auto& f : package.files) {
      if (ends_with(f.path, "/config.yaml")) {
        hint = "; found " + f.path + " — pass the folder holding it instead";
        break;
      }
    }
    errors.push_back("task package " + package.source +
                     " has no config.yaml at its root: add one with task_name, job_name and "
                     "language (see docs/task-package.md)" +
                     hint);
  }

  bool has_evolve_marker = false;
  for (const auto& f : package.files) {
    if (f.binary) continue;
    if (is_config_file(f.path)) {
      check_yaml(f, &errors);
      continue;
    }
    if (f.content.find("[EVOLVE_START]") != std::string::npos) has_evolve_marker = true;
    auto blocks = parse_blocks(f.path, f.content);
    if (!blocks) {
      errors.push_back(blocks.message());
      continue;
    }
    for (auto& b : *blocks) package.blocks.push_back(std::move(b));
  }
  if (!has_evolve_marker) errors.push_back(missing_evolve_message(package));
  if (!errors.empty()) return Result<TaskPackage>::error(join(errors, "\n"));

  Hasher hasher;
  hasher.add(kHashVersion);
  for (const auto& f : package.files) {
    if (is_config_file(f.path)) continue;
    hasher.add(f.path).add(f.content);
  }
  package.hash = hasher.hex();
  return package;
}

}  // namespace

const TaskFile* TaskPackage::file(std::string_view path) const {
  auto it = std::lower_bound(files.begin(), files.end(), path,
                             [](const TaskFile& f, std::string_view p) { return f.path < p; });
  return it != files.end() && it->path == path ? &*it : nullptr;
}

std::vector<const Block*> TaskPackage::blocks_of(BlockKind kind) const {
  std::vector<const Block*> out;
  for (const auto& b : blocks) {
    if (b.kind == kind) out.push_back(&b);
  }
  return out;
}

namespace {
std::string without_final_newline(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}
}  // namespace

std::string TaskPackage::user_instructions() const {
  std::vector<std::string> parts;
  for (const Block* b : blocks_of(BlockKind::kUserInstructions)) {
    parts.push_back(without_final_newline(b->content));
  }
  return join(parts, "\n\n");
}

std::string TaskPackage::reference() const {
  std::vector<std::string> parts;
  for (const Block* b : blocks_of(BlockKind::kReference)) {
    parts.push_back(strprintf("// %s (block %d)\n", b->file.c_str(), b->index) +
                    without_final_newline(b->content));
  }
  return join(parts, "\n\n");
}

fs::path TaskPackage::config_path() const {
  return root / kConfigFile;
}
fs::path TaskPackage::overrides_path() const {
  return root / kOverridesFile;
}

Result<TaskPackage> load_task(const fs::path& source, const fs::path& extract_parent) {
  std::error_code ec;
  const std::string shown = source.string();
  fs::file_status st = fs::status(source, ec);
  if (ec || !fs::exists(st)) {
    return Result<TaskPackage>::error("task package " + shown +
                                      " does not exist: pass a folder or a .tar, .tar.gz, .tgz "
                                      "or .zip of one");
  }
  if (fs::is_directory(st)) return load_folder(fs::absolute(source).lexically_normal(), shown);
  if (fs::is_regular_file(st) && source.filename() == kConfigFile) {
    return load_folder(fs::absolute(source).lexically_normal().parent_path(), shown);
  }
  if (!fs::is_regular_file(st) || !task_internal::is_archive_name(source)) {
    return Result<TaskPackage>::error("task package " + shown +
                                      " is neither a folder nor an archive: pass a folder or a "
                                      ".tar, .tar.gz, .tgz or .zip of one");
  }
  auto extracted = task_internal::extract_archive(source, extract_parent);
  if (!extracted) return extracted.status();
  return load_folder(archive_root(*extracted), shown);
}

Status materialize(const TaskPackage& package, const std::map<std::string, std::string>& changed,
                   const fs::path& dir) {
  for (const auto& [path, _] : changed) {
    if (package.file(path) == nullptr) {
      return Status::error("cannot write " + path + " into " + dir.string() +
                           ": the task package has no such file");
    }
  }
  KF_RETURN_IF_ERROR(make_dirs(dir));
  std::error_code ec;
  if (fs::equivalent(dir, package.root, ec)) {
    return Status::error("refusing to materialize into the task package's own folder " +
                         dir.string());
  }
  for (const auto& f : package.files) {
    auto it = changed.find(f.path);
    const fs::path dest = dir / f.path;
    KF_RETURN_IF_ERROR(write_file(dest, it == changed.end() ? f.content : it->second));
    // Keep modes (a build script stays executable); a missing original just keeps the default.
    fs::file_status st = fs::status(package.root / f.path, ec);
    if (!ec) fs::permissions(dest, st.permissions(), ec);
  }
  return Status::ok();
}

}  // namespace kf
