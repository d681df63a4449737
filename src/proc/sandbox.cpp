// sandboxed(): the environment allow-list and limits applied to every untrusted child.
#include "proc/sandbox.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "util/strings.h"

extern char** environ;

namespace kf {

namespace fs = std::filesystem;

namespace {

// Device selection and driver discovery: without these a child may not find the GPU (or PoCL).
const char* const kDeviceVariables[] = {
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_HOME",
    "CUDA_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "OCL_ICD_VENDORS",
    "OCL_ICD_FILENAMES",
    "OPENCL_VENDOR_PATH",
    "POCL_*",
    "ONEAPI_DEVICE_SELECTOR",
    "SYCL_*",
    "ZE_*",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
};

bool matches(std::string_view name, std::string_view pattern) {
  if (ends_with(pattern, "*")) return starts_with(name, pattern.substr(0, pattern.size() - 1));
  return name == pattern;
}

void set_var(std::vector<std::pair<std::string, std::string>>& env, const std::string& name,
             const std::string& value) {
  for (auto& entry : env) {
    if (entry.first == name) {
      entry.second = value;
      return;
    }
  }
  env.emplace_back(name, value);
}

template <typename T>
T tighter(T a, T b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

}  // namespace

bool is_secret_env_name(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word :
       {"API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"})
    if (upper.find(word) != std::string::npos) return true;
  return upper == "KEY" || ends_with(upper, "_KEY");
}

ProcessSpec sandboxed(ProcessSpec spec, const SandboxOptions& options) {
  std::error_code ec;
  fs::path home = spec.work_dir.empty() ? fs::current_path(ec) : fs::absolute(spec.work_dir, ec);
  fs::path tmp = home / "tmp";

  std::vector<std::pair<std::string, std::string>> env;
  const char* path = std::getenv("PATH");
  set_var(env, "PATH", path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  set_var(env, "HOME", home.string());
  set_var(env, "TMPDIR", tmp.string());
  set_var(env, "LANG", "C");
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(entry.substr(0, eq));
    bool wanted = false;
    for (const char* pattern : kDeviceVariables) wanted = wanted || matches(name, pattern);
    for (const std::string& pattern : options.pass_through)
      wanted = wanted || matches(name, pattern);
    if (wanted) set_var(env, name, std::string(entry.substr(eq + 1)));
  }
  for (const auto& [name, value] : spec.env) set_var(env, name, value);
  std::erase_if(env, [](const auto& entry) { return is_secret_env_name(entry.first); });
  spec.env = std::move(env);
  spec.inherit_env = false;

  spec.file_size_limit_bytes = tighter(spec.file_size_limit_bytes, options.file_size_limit_bytes);
  spec.memory_limit_bytes = tighter(spec.memory_limit_bytes, options.memory_limit_bytes);
  spec.cpu_limit_s = tighter(spec.cpu_limit_s, options.cpu_limit_s);
  if (options.create_tmp_dir) fs::create_directories(tmp, ec);  // a failure shows in the child
  return spec;
}

}  // namespace kf
