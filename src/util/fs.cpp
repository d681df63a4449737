// File-system helpers: whole-file reads, crash-safe writes, temporary directories.
#include "util/fs.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kf {

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Result<std::string>::error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status write_file(const fs::path& path, std::string_view content) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::error("cannot write " + path.string() + ": " + std::strerror(errno));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out) return Status::error("cannot write " + path.string() + ": " + std::strerror(errno));
  }
  fs::rename(tmp, path, ec);
  if (ec) return Status::error("cannot write " + path.string() + ": " + ec.message());
  return Status::ok();
}

Status make_dirs(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Status::error("cannot create directory " + path.string() + ": " + ec.message());
  return Status::ok();
}

Result<fs::path> make_temp_dir(const fs::path& parent, std::string_view prefix) {
  KF_RETURN_IF_ERROR(make_dirs(parent));
  std::string pattern = (parent / (std::string(prefix) + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return Result<fs::path>::error("cannot create a directory under " + parent.string() + ": " +
                                   std::strerror(errno));
  return fs::path(pattern);
}

fs::path executable_dir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : self.parent_path();
}

}  // namespace kf
