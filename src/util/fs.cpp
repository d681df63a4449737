// File-system helpers: whole-file reads, crash-safe writes, temporary directories.
#include "util/fs.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kf {

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Result<std::string>::error("cannot read " + path.string() + ": " + io_error_text(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_environment_errno(int err) {
  return err == ENOSPC || err == EDQUOT || err == EROFS || err == EFBIG;
}

std::string io_error_text(int err) {
  std::string text = std::strerror(err);
  switch (err) {
    case ENOSPC:
      return text + " (the disk is full: free some space)";
    case EDQUOT:
      return text + " (the disk quota is used up: free some space or raise the quota)";
    case EROFS:
      return text + " (the file system is mounted read-only: choose a writable path)";
    case EFBIG: {
      uint64_t limit = file_size_limit();
      return text + (limit > 0 ? " (the file size limit, ulimit -f, of " + std::to_string(limit) +
                                     " bytes was reached: raise it)"
                               : " (the file system's largest file size was reached)");
    }
    default:
      return text;
  }
}

uint64_t file_size_limit() {
  rlimit limit;
  if (::getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<uint64_t>(limit.rlim_cur);
}

Status write_file(const fs::path& path, std::string_view content) {
  auto failed = [&](int err) {
    return Status::error("cannot write " + path.string() + ": " + io_error_text(err));
  };
  if (path.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      return Status::error("cannot create directory " + path.parent_path().string() + " for " +
                           path.filename().string() + ": " + io_error_text(ec.value()));
  }
  // The temporary name is unique per write, not only per process: two threads writing the same
  // file (two branches building the same object) must not rename each other's file away.
  static std::atomic<unsigned long> writes{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(writes.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return failed(errno);
  // A short write, and on some file systems (NFS) the close, is where a full disk shows.
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      ::unlink(tmp.c_str());
      return failed(err);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return failed(err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return failed(err);
  }
  return Status::ok();
}

Status make_dirs(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec)
    return Status::error("cannot create directory " + path.string() + ": " +
                         io_error_text(ec.value()));
  return Status::ok();
}

Status check_writable_dir(const fs::path& dir, std::string_view what) {
  std::error_code ec;
  fs::path probe_dir = fs::absolute(dir.empty() ? fs::path(".") : dir, ec).lexically_normal();
  // The nearest folder that exists: creating the rest must work there.
  while (!fs::exists(probe_dir, ec) && probe_dir.has_parent_path() &&
         probe_dir.parent_path() != probe_dir)
    probe_dir = probe_dir.parent_path();
  auto failed = [&](const std::string& cause) {
    return Status::error(std::string(what) + " " + dir.string() + " is not writable: " + cause +
                         "; make it writable or set " + std::string(what) + " to a folder that is");
  };
  if (!fs::is_directory(probe_dir, ec)) return failed(probe_dir.string() + " is not a directory");
  std::string pattern = (probe_dir / ".kf_write_probe_XXXXXX").string();
  int fd = ::mkstemp(pattern.data());
  if (fd < 0)
    return failed("cannot create a file in " + probe_dir.string() + ": " + io_error_text(errno));
  ::close(fd);
  ::unlink(pattern.c_str());
  return Status::ok();
}

Result<fs::path> make_temp_dir(const fs::path& parent, std::string_view prefix) {
  KF_RETURN_IF_ERROR(make_dirs(parent));
  std::string pattern = (parent / (std::string(prefix) + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return Result<fs::path>::error("cannot create a directory under " + parent.string() + ": " +
                                   io_error_text(errno));
  return fs::path(pattern);
}

fs::path executable_dir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : self.parent_path();
}

}  // namespace kf
