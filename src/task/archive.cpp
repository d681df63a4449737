// libarchive adapter: safe extraction of task-package archives and writing a folder as one.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <system_error>

#include "task/internal.h"
#include "task/task.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kf {

namespace {

// Decompression bombs: refuse archives that expand beyond what any task package needs.
constexpr int64_t kMaxExtractedBytes = int64_t{4} << 30;
// A fixed time for written entries (2000-01-01; zip cannot store times before 1980), so equal
// folders give byte-identical archives and hence the same extraction folder.
constexpr time_t kArchiveMtime = 946684800;

struct ReadCloser {
  void operator()(struct archive* a) const { archive_read_free(a); }
};
struct WriteCloser {
  void operator()(struct archive* a) const { archive_write_free(a); }
};
using ReadArchive = std::unique_ptr<struct archive, ReadCloser>;
using WriteArchive = std::unique_ptr<struct archive, WriteCloser>;

std::string archive_error(struct archive* a) {
  const char* msg = archive_error_string(a);
  return msg ? msg : "unknown libarchive error";
}

// A lexically normal relative path that stays inside the package, or "" (with `why` set).
std::string safe_relative(std::string_view name, std::string* why) {
  std::string n(name);
  while (starts_with(n, "./")) n.erase(0, 2);
  if (n.empty() || n == ".") return ".";
  if (n[0] == '/' || n.find('\\') != std::string::npos || (n.size() > 1 && n[1] == ':')) {
    *why = "is an absolute path";
    return "";
  }
  for (const auto& part : split(n, '/')) {
    if (part == "..") {
      *why = "contains '..'";
      return "";
    }
  }
  std::string norm = fs::path(n).lexically_normal().generic_string();
  while (!norm.empty() && norm.back() == '/') norm.pop_back();
  return norm.empty() ? "." : norm;
}

// Whether symlink `link` (relative path) pointing at `target` resolves inside the package.
bool link_stays_inside(const std::string& link, std::string_view target) {
  if (target.empty() || target[0] == '/') return false;
  fs::path resolved = (fs::path(link).parent_path() / fs::path(target)).lexically_normal();
  std::string s = resolved.generic_string();
  return !(s == ".." || starts_with(s, "../"));
}

Status copy_data(struct archive* in, struct archive* out, int64_t* total) {
  const void* buf;
  size_t size;
  la_int64_t offset;
  while (true) {
    int r = archive_read_data_block(in, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) return Status::ok();
    if (r < ARCHIVE_WARN) return Status::error(archive_error(in));
    *total += static_cast<int64_t>(size);
    if (*total > kMaxExtractedBytes) return Status::error("expands beyond 4 GiB");
    if (archive_write_data_block(out, buf, size, offset) < ARCHIVE_WARN) {
      return Status::error(archive_error(out));
    }
  }
}

// Extracts every entry of `bytes` under `dest`, collecting one error line per bad entry.
std::vector<std::string> extract_into(const std::string& bytes, const fs::path& dest,
                                      const std::string& shown) {
  std::vector<std::string> errors;
  ReadArchive in(archive_read_new());
  archive_read_support_filter_all(in.get());
  archive_read_support_format_all(in.get());
  if (archive_read_open_memory(in.get(), bytes.data(), bytes.size()) != ARCHIVE_OK) {
    errors.push_back("cannot read archive " + shown + ": " + archive_error(in.get()));
    return errors;
  }
  WriteArchive out(archive_write_disk_new());
  // Our own absolute destination paths rule out ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS; the
  // names are checked by safe_relative() before they are rebased onto `dest`.
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  int64_t total = 0;
  int entries = 0;
  struct archive_entry* entry;
  while (true) {
    int r = archive_read_next_header(in.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      errors.push_back("cannot read archive " + shown + ": " + archive_error(in.get()));
      break;
    }
    ++entries;
    const char* raw = archive_entry_pathname(entry);
    std::string name = raw ? raw : "";
    std::string why;
    std::string rel = safe_relative(name, &why);
    if (rel.empty()) {
      errors.push_back("archive " + shown + ": entry '" + name + "' " + why +
                       ", which would write outside the package; recreate the archive from "
                       "inside the package folder");
      continue;
    }
    if (rel == ".") continue;
    const mode_t type = archive_entry_filetype(entry);
    if (type == AE_IFLNK) {
      const char* target = archive_entry_symlink(entry);
      if (!link_stays_inside(rel, target ? target : "")) {
        errors.push_back("archive " + shown + ": symlink '" + name + "' -> '" +
                         (target ? target : "") + "' points outside the package");
        continue;
      }
    } else if (type != AE_IFREG && type != AE_IFDIR) {
      continue;  // devices, fifos, sockets have no place in a task package
    }
    if (const char* hard = archive_entry_hardlink(entry)) {
      std::string hard_why;
      std::string hard_rel = safe_relative(hard, &hard_why);
      if (hard_rel.empty() || hard_rel == ".") {
        errors.push_back("archive " + shown + ": hard link '" + name + "' -> '" + hard +
                         "' points outside the package");
        continue;
      }
      archive_entry_set_hardlink(entry, (dest / hard_rel).c_str());
    }
    archive_entry_set_pathname(entry, (dest / rel).c_str());
    archive_entry_set_perm(entry, archive_entry_perm(entry) & 0755);  // no setuid, no world-write
    if (archive_write_header(out.get(), entry) < ARCHIVE_WARN) {
      errors.push_back("archive " + shown + ": cannot extract '" + name +
                       "': " + archive_error(out.get()));
      continue;
    }
    if (type == AE_IFREG) {  // zip entries may not know their size up front, so always copy
      Status copied = copy_data(in.get(), out.get(), &total);
      if (!copied) {
        errors.push_back("archive " + shown + ": cannot extract '" + name +
                         "': " + copied.message());
        if (total > kMaxExtractedBytes) break;
      }
    }
    archive_write_finish_entry(out.get());
  }
  if (errors.empty() && entries == 0) errors.push_back("archive " + shown + " is empty");
  archive_write_close(out.get());
  return errors;
}

}  // namespace

namespace task_internal {

bool is_archive_name(const fs::path& path) {
  const std::string name = to_lower(path.filename().string());
  for (const char* ext : {".tar", ".tar.gz", ".tgz", ".zip", ".tar.bz2", ".tar.xz"}) {
    if (ends_with(name, ext)) return true;
  }
  return false;
}

Result<fs::path> extract_archive(const fs::path& archive, const fs::path& parent) {
  auto bytes = read_file(archive);
  if (!bytes) return bytes.status();
  const fs::path final_dir = parent / ("task-" + sha256_hex(*bytes));
  std::error_code ec;
  // The folder only ever appears by a rename of a complete extraction, so its presence means
  // it is whole and can be reused.
  if (fs::is_directory(final_dir, ec)) return final_dir;
  auto tmp = make_temp_dir(parent, ".extract-");
  if (!tmp) return tmp.status();
  // Canonical, so libarchive's symlink checks do not trip over a symlinked parent (e.g. /tmp).
  fs::path dest = fs::canonical(*tmp, ec);
  if (ec) dest = *tmp;
  std::vector<std::string> errors = extract_into(*bytes, dest, archive.string());
  if (!errors.empty()) {
    fs::remove_all(*tmp, ec);
    return Result<fs::path>::error(join(errors, "\n"));
  }
  fs::rename(*tmp, final_dir, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove_all(*tmp, ignored);
    // Another process extracting the same archive may have won the race.
    if (fs::is_directory(final_dir, ignored)) return final_dir;
    return Result<fs::path>::error("cannot extract " + archive.string() + " into " +
                                   final_dir.string() + ": " + ec.message());
  }
  return final_dir;
}

}  // namespace task_internal

Status write_archive(const fs::path& dir, const fs::path& archive) {
  const std::string name = to_lower(archive.filename().string());
  const bool gz = ends_with(name, ".tar.gz") || ends_with(name, ".tgz");
  const bool tar = gz || ends_with(name, ".tar");
  const bool zip = ends_with(name, ".zip");
  if (!tar && !zip) {
    return Status::error("cannot write archive " + archive.string() +
                         ": name it .tar.gz, .tgz, .tar or .zip");
  }
  auto files = task_internal::list_package_files(dir);
  if (!files) return files.status();
  fs::path abs_dir = fs::absolute(dir).lexically_normal();
  if (abs_dir.filename().empty()) abs_dir = abs_dir.parent_path();
  const std::string prefix = abs_dir.filename().string();
  if (archive.has_parent_path()) KF_RETURN_IF_ERROR(make_dirs(archive.parent_path()));
  fs::path tmp = archive;
  tmp += ".tmp." + std::to_string(::getpid());
  const fs::path abs_archive = fs::absolute(archive).lexically_normal();
  const fs::path abs_tmp = fs::absolute(tmp).lexically_normal();

  WriteArchive out(archive_write_new());
  if (zip) {
    archive_write_set_format_zip(out.get());
  } else {
    archive_write_set_format_pax_restricted(out.get());
    if (gz) {
      archive_write_add_filter_gzip(out.get());
      // No build time in the gzip header, so equal folders give equal bytes.
      archive_write_set_filter_option(out.get(), "gzip", "timestamp", nullptr);
    }
  }
  auto fail = [&](const std::string& why) {
    out.reset();
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return Status::error("cannot write archive " + archive.string() + ": " + why);
  };
  if (archive_write_open_filename(out.get(), tmp.c_str()) != ARCHIVE_OK) {
    return fail(archive_error(out.get()));
  }
  for (const auto& rel : *files) {
    const fs::path src = abs_dir / rel;
    if (src == abs_archive || src == abs_tmp) continue;
    auto content = read_file(src);
    if (!content) return fail(content.message());
    std::error_code ec;
    const fs::perms p = fs::status(src, ec).permissions();
    const bool exec = (p & fs::perms::owner_exec) != fs::perms::none;
    std::unique_ptr<struct archive_entry, void (*)(struct archive_entry*)> entry(
        archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(entry.get(), (prefix + "/" + rel).c_str());
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), exec ? 0755 : 0644);
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(content->size()));
    archive_entry_set_mtime(entry.get(), kArchiveMtime, 0);
    archive_entry_set_uid(entry.get(), 0);
    archive_entry_set_gid(entry.get(), 0);
    if (archive_write_header(out.get(), entry.get()) != ARCHIVE_OK) {
      return fail(archive_error(out.get()));
    }
    if (!content->empty() && archive_write_data(out.get(), content->data(), content->size()) < 0) {
      return fail(archive_error(out.get()));
    }
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) return fail(archive_error(out.get()));
  out.reset();
  std::error_code ec;
  fs::rename(tmp, archive, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::error("cannot write archive " + archive.string() + ": " + ec.message());
  }
  return Status::ok();
}

}  // namespace kf
