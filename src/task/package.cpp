// Loading a task package: which files belong to it, its blocks, its identity hash, and
// writing a candidate's copy of it.
#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
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

namespace {

// Whether `path` (absolute, lexically normal) is `root` or lies under it.
bool is_within(const fs::path& path, const fs::path& root) {
  fs::path rel = path.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

// A symlink found while listing `root` (canonical): "" when it may be read as the file it
// points to, else the line that refuses it. A package comes from someone else, so a link must
// not make us read (and store, copy, prompt with) a file of this machine outside it.
std::string check_link(const fs::path& root, const fs::path& link, bool* is_file) {
  std::error_code ec;
  const std::string rel = link.lexically_relative(root).generic_string();
  fs::path target = fs::read_symlink(link, ec);
  const std::string shown = "symlink '" + rel + "' -> '" + target.string() + "'";
  const std::string fix =
      ": a task package is data from someone else, so its links are not followed out of it; "
      "replace the link with a copy of the file if you mean to ship it, or remove it";
  fs::path resolved = fs::canonical(link, ec);
  if (ec) return "task package " + root.string() + ": " + shown + " points to nothing" + fix;
  if (!is_within(resolved, root))
    return "task package " + root.string() + ": " + shown + " points outside the package (to " +
           resolved.string() + ")" + fix;
  *is_file = fs::is_regular_file(resolved, ec);
  return "";
}

}  // namespace

Result<std::vector<std::string>> list_package_files(const fs::path& dir) {
  std::vector<std::string> files, errors;
  std::error_code ec;
  // Links are judged against the real folder, so a symlinked path to the package still works.
  fs::path root = fs::canonical(dir, ec);
  if (ec) {
    return Result<std::vector<std::string>>::error("cannot read folder " + dir.string() + ": " +
                                                   ec.message());
  }
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    return Result<std::vector<std::string>>::error("cannot read folder " + dir.string() + ": " +
                                                   ec.message());
  }
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    const bool top = it.depth() == 0;
    if (it->is_symlink(ec)) {
      // Never recursed into (the iterator does not follow directory links); a link to a file
      // inside is read as that file.
      bool is_file = false;
      if (is_ignored(name, it->is_directory(ec), top)) continue;
      std::string refused = check_link(root, it->path(), &is_file);
      if (!refused.empty()) {
        errors.push_back(std::move(refused));
      } else if (is_file) {
        files.push_back(it->path().lexically_relative(root).generic_string());
      }
      continue;
    }
    if (it->is_directory(ec)) {
      if (is_ignored(name, true, top)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec) || is_ignored(name, false, top)) continue;
    files.push_back(it->path().lexically_relative(root).generic_string());
  }
  if (ec) {
    return Result<std::vector<std::string>>::error("cannot read folder " + dir.string() + ": " +
                                                   ec.message());
  }
  if (!errors.empty()) return Result<std::vector<std::string>>::error(join(errors, "\n"));
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

// Kernel, test, header and build files: never stored by hash, whatever their size.
bool has_source_name(std::string_view path) {
  static const char* kExtensions[] = {".cu", ".cuh",   ".cl",  ".sycl", ".cpp", ".cc",  ".cxx",
                                      ".c",  ".h",     ".hpp", ".hh",   ".hxx", ".inl", ".py",
                                      ".sh", ".cmake", ".mk",  ".yaml", ".yml"};
  const std::string name = to_lower(fs::path(std::string(path)).filename().string());
  if (name == "cmakelists.txt" || name == "makefile") return true;
  for (const char* ext : kExtensions) {
    if (ends_with(name, ext)) return true;
  }
  return false;
}

constexpr fs::perms kReadOnly =
    fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;

bool is_writable(const fs::path& path) {
  std::error_code ec;
  const fs::perms p = fs::status(path, ec).permissions();
  return ec || (p & (fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write)) !=
                   fs::perms::none;
}

// A temporary name beside `path`, unique across processes and the threads of this one
// (candidates are materialized concurrently).
fs::path temp_beside(const fs::path& path) {
  static std::atomic<uint64_t> counter{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  return tmp;
}

// Copies `from` to `to` (replaced if present) through a temporary file, read-only.
Status copy_read_only(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  const fs::path tmp = temp_beside(to);
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::permissions(tmp, kReadOnly, ec);
  if (!ec) fs::rename(tmp, to, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return Status::error("cannot copy " + from.string() + " to " + to.string() + ": " +
                         ec.message());
  }
  return Status::ok();
}

// The stored copy of a large file, checked against what was recorded (a candidate runs as the
// same user and could have changed it) and written again from the package when it differs.
Status ensure_stored(const TaskPackage& package, const TaskFile& f) {
  std::error_code ec;
  const auto size = fs::file_size(f.stored, ec);
  const auto time = ec ? fs::file_time_type{} : fs::last_write_time(f.stored, ec);
  if (!ec && size == f.size && time == f.stored_time && !is_writable(f.stored)) return Status::ok();
  const fs::path original = package.root / f.path;
  auto bytes = read_file(original);
  if (!bytes) return bytes.status();
  if (sha256_hex(*bytes) != f.sha256)
    return Status::error("task package file " + original.string() +
                         " changed while the job was running; restore it or start a new job");
  fs::remove(f.stored, ec);
  KF_RETURN_IF_ERROR(copy_read_only(original, f.stored));
  fs::last_write_time(f.stored, f.stored_time, ec);  // so the next check passes
  return Status::ok();
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

bool is_source_file(const TaskPackage& package, const TaskFile& file) {
  if (is_config_file(file.path) || has_source_name(file.path)) return true;
  return std::any_of(package.blocks.begin(), package.blocks.end(),
                     [&](const Block& b) { return b.file == file.path; });
}

Status store_large_files(TaskPackage& package, const LargeFileOptions& options) {
  for (auto& f : package.files) {
    const uint64_t size = f.large() ? f.size : f.content.size();
    if (options.warn_bytes > 0 && size > options.warn_bytes) {
      package.warnings.push_back(strprintf(
          "task package %s holds %s, %.1f MiB (over task_files.warn_file_bytes = %llu)%s",
          package.source.c_str(), f.path.c_str(), static_cast<double>(size) / (1 << 20),
          static_cast<unsigned long long>(options.warn_bytes),
          is_source_file(package, f)
              ? ": as a source file it is copied into every candidate's folder"
              : ": it is stored once by content hash and linked into each candidate's folder, but "
                "it is still copied into results/ with the best kernel"));
    }
    if (f.large() || size <= options.large_bytes || is_source_file(package, f)) continue;
    const std::string sha = sha256_hex(f.content);
    const fs::path stored = fs::absolute(options.store_dir / sha).lexically_normal();
    KF_RETURN_IF_ERROR(make_dirs(stored.parent_path()));
    // An earlier job's copy is reused once its bytes are checked (a candidate runs as the same
    // user and may have changed it); a missing or changed one is written again.
    std::error_code ec;
    auto existing = fs::exists(stored, ec) ? read_file(stored) : Result<std::string>::error("");
    if (!existing || sha256_hex(*existing) != sha || is_writable(stored)) {
      const fs::path tmp = temp_beside(stored);
      KF_RETURN_IF_ERROR(write_file(tmp, f.content));
      fs::permissions(tmp, kReadOnly, ec);
      if (!ec) fs::rename(tmp, stored, ec);
      if (ec) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        return Status::error("cannot store " + f.path + " of the task package under " +
                             stored.parent_path().string() + ": " + ec.message());
      }
    }
    f.stored_time = fs::last_write_time(stored, ec);
    f.size = size;
    f.sha256 = sha;
    f.stored = stored;
    std::string().swap(f.content);  // the bytes live in the stored copy now
  }
  return Status::ok();
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
    if (f.large()) {
      if (it != changed.end())
        return Status::error("cannot change " + f.path + ": it is a data file, not source");
      KF_RETURN_IF_ERROR(ensure_stored(package, f));
      KF_RETURN_IF_ERROR(make_dirs(dest.parent_path()));
      fs::remove(dest, ec);
      fs::create_hard_link(f.stored, dest, ec);
      if (ec) KF_RETURN_IF_ERROR(copy_read_only(f.stored, dest));  // e.g. another file system
      continue;
    }
    KF_RETURN_IF_ERROR(write_file(dest, it == changed.end() ? f.content : it->second));
    // Keep modes (a build script stays executable); a missing original just keeps the default.
    fs::file_status st = fs::status(package.root / f.path, ec);
    if (!ec) fs::permissions(dest, st.permissions(), ec);
  }
  return Status::ok();
}

}  // namespace kf
