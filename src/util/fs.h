// File-system helpers: whole-file reads, crash-safe writes, temporary directories.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "util/status.h"

namespace kf {

namespace fs = std::filesystem;

Result<std::string> read_file(const fs::path& path);
// Writes through a temporary file and rename, so a crash never leaves half a file. Every step
// (create, write, close, rename) is checked; the error names the path and the cause, and says so
// when the disk is full or the file system read-only (see io_error_text).
Status write_file(const fs::path& path, std::string_view content);
Status make_dirs(const fs::path& path);
// Whether `dir` (or, when it does not exist yet, the nearest folder above it) takes a new file:
// creates and removes a probe file there. The error names `what` (e.g. "paths.logdir"), the
// path and the cause, before a job has done any work.
Status check_writable_dir(const fs::path& dir, std::string_view what);

// Faults of the machine rather than of a program's input: the disk is full (ENOSPC), a quota is
// used up (EDQUOT), the file system is read-only (EROFS), or a file size limit was reached
// (EFBIG; `ulimit -f`).
bool is_environment_errno(int err);
// strerror(err), with what it means for the user for the environment faults above, e.g.
// "No space left on device (the disk is full: free some space)".
std::string io_error_text(int err);
// The RLIMIT_FSIZE soft limit of this process in bytes; 0 when unlimited.
uint64_t file_size_limit();
// A fresh, uniquely named directory under `parent` (created), e.g. for a child's work dir.
Result<fs::path> make_temp_dir(const fs::path& parent, std::string_view prefix);
// Directory holding the running executable.
fs::path executable_dir();

}  // namespace kf
