// Finds the harness headers and libraries task binaries link against.
#include <cstdlib>

#include "lang/lang.h"
#include "util/fs.h"

#ifndef KF_SOURCE_DIR
#define KF_SOURCE_DIR ""
#endif
#ifndef KF_BINARY_DIR
#define KF_BINARY_DIR ""
#endif

namespace kf {
namespace {

bool has_harness(const fs::path& include_dir, const fs::path& lib_dir) {
  std::error_code ec;
  return fs::exists(include_dir / "kernelfoundry" / "harness.h", ec) &&
         fs::exists(lib_dir / "libkf_harness_host.a", ec);
}

fs::path find_in_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::string p = path;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    fs::path candidate = fs::path(p.substr(start, end - start)) / tool;
    std::error_code ec;
    if (!candidate.empty() && fs::exists(candidate, ec)) return candidate;
    start = end + 1;
  }
  return {};
}

}  // namespace

Result<Toolchain> find_toolchain() {
  Toolchain tc;
  std::vector<std::pair<fs::path, fs::path>> layouts;
  if (const char* dir = std::getenv("KERNELFOUNDRY_HARNESS_DIR"))
    layouts.push_back({fs::path(dir) / "include", fs::path(dir) / "lib"});
  fs::path exe = executable_dir();
  layouts.push_back({exe / ".." / "include", exe / ".." / "lib"});
  if (*KF_SOURCE_DIR)
    layouts.push_back({fs::path(KF_SOURCE_DIR) / "include", fs::path(KF_BINARY_DIR) / "lib"});
  std::string tried;
  for (const auto& [inc, lib] : layouts) {
    if (has_harness(inc, lib)) {
      tc.include_dir = fs::weakly_canonical(inc);
      tc.lib_dir = fs::weakly_canonical(lib);
      break;
    }
    tried += "\n  " + inc.string() + " + " + lib.string();
  }
  if (tc.include_dir.empty())
    return Result<Toolchain>::error(
        "cannot find the KernelFoundry harness (kernelfoundry/harness.h and libkf_harness_host.a); "
        "tried:" +
        tried + "\nSet KERNELFOUNDRY_HARNESS_DIR to a folder holding include/ and lib/.");
  if (const char* cxx = std::getenv("CXX"); cxx != nullptr && *cxx != '\0') tc.cxx = cxx;
  // Every task binary is compiled and linked with it: without it nothing can be evaluated, which
  // is the machine's fault, not the task's or a candidate's.
  bool from_env = std::getenv("CXX") != nullptr && *std::getenv("CXX") != '\0';
  std::error_code ec;
  bool found = tc.cxx.find('/') != std::string::npos ? fs::exists(tc.cxx, ec)
                                                     : !find_in_path(tc.cxx).empty();
  if (!found)
    return Result<Toolchain>::error(
        "the C++ compiler '" + tc.cxx + "'" +
        (from_env ? " (from the environment variable CXX)" : "") + " was not found" +
        (tc.cxx.find('/') != std::string::npos ? "" : " in PATH") +
        "; it compiles and links every task binary. Install it (e.g. apt-get install g++) or set "
        "CXX to the full path of a C++ compiler");
  fs::path nvcc = find_in_path("nvcc");
  if (nvcc.empty() && fs::exists("/usr/local/cuda/bin/nvcc")) nvcc = "/usr/local/cuda/bin/nvcc";
  if (!nvcc.empty()) {
    tc.nvcc = nvcc.string();
    tc.cuda_root = fs::weakly_canonical(nvcc).parent_path().parent_path();
  } else {
    tc.nvcc.clear();
  }
  return tc;
}

}  // namespace kf
