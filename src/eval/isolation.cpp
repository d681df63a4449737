// Sandbox options for the evaluator's build steps and runs (see isolation.h).
#include "eval/isolation.h"

#include <cmath>
#include <cstdlib>

#include "util/strings.h"

namespace kf {

namespace fs = std::filesystem;

namespace {

// nvcc's CUDA root (the folder above its bin/) when the toolchain names none.
fs::path cuda_root(const Toolchain& toolchain) {
  if (!toolchain.cuda_root.empty()) return toolchain.cuda_root;
  fs::path nvcc = toolchain.nvcc;
  std::error_code ec;
  if (!nvcc.has_parent_path()) {
    const char* path = std::getenv("PATH");
    for (const std::string& dir : split(path != nullptr ? path : "", ':')) {
      if (!dir.empty() && fs::exists(fs::path(dir) / nvcc, ec)) {
        nvcc = fs::path(dir) / nvcc;
        break;
      }
    }
  }
  if (!nvcc.has_parent_path()) return {};
  fs::path real = fs::canonical(nvcc, ec);
  return (ec ? nvcc : real).parent_path().parent_path();
}

}  // namespace

SandboxOptions base_sandbox(const EvalOptions& options, double timeout_s) {
  SandboxOptions s;
  s.mode = options.sandbox;
  if (options.memory_limit_gib > 0)
    s.tree_memory_limit_bytes =
        static_cast<uint64_t>(std::llround(options.memory_limit_gib * 1024 * 1024 * 1024));
  s.max_processes = options.max_processes;
  s.cpu_limit_s = options.cpu_time_limit_s > 0 ? options.cpu_time_limit_s : 4 * timeout_s;
  s.limit_keys.memory = "eval_config.memory_limit_gib";
  s.limit_keys.tasks = "eval_config.max_processes";
  s.limit_keys.cpu_time = "eval_config.cpu_time_limit";
  s.limit_keys.output = "eval_config.max_output_bytes";
  return s;
}

SandboxOptions build_sandbox(const EvalOptions& options, const Toolchain& toolchain,
                             const fs::path& source_dir) {
  SandboxOptions s = base_sandbox(options, options.build_timeout_s);
  s.read_only_paths = {source_dir, toolchain.include_dir, toolchain.lib_dir};
  if (options.language == Language::kCuda) {
    fs::path root = cuda_root(toolchain);
    if (!root.empty()) s.read_only_paths.push_back(root);
  }
  return s;
}

SandboxOptions run_sandbox(const EvalOptions& options, const fs::path& source_dir,
                           const fs::path& binary, const std::vector<fs::path>& extra_read_only) {
  SandboxOptions s = base_sandbox(options, options.test_timeout_s);
  s.read_only_paths = {source_dir, binary};
  s.read_only_paths.insert(s.read_only_paths.end(), extra_read_only.begin(), extra_read_only.end());
  // Where the device runtimes' libraries are found (most are under /usr and seen anyway).
  if (const char* libs = std::getenv("LD_LIBRARY_PATH"); libs != nullptr)
    for (const std::string& dir : split(libs, ':'))
      if (!dir.empty() && fs::path(dir).is_absolute()) s.read_only_paths.push_back(dir);
  s.gpu = options.language != Language::kCpp;
  s.pass_through = {"KF_OPENCL_PLATFORM", "KF_OPENCL_DEVICE", "POCL_*", "CUDA_VISIBLE_DEVICES"};
  s.env = options.device_env;
  return s;
}

}  // namespace kf
