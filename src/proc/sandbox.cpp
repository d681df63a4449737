// sandboxed(): the environment allow-list, the limits and the bwrap sandbox applied to every
// untrusted child, and the one-time probe that finds out whether bwrap works here.
#include "proc/sandbox.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>

#include "proc/spawn.h"
#include "util/fs.h"
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

// The unprivileged user a root orchestrator's children run as ("nobody" on Debian).
constexpr int kSandboxUid = 65534;
// Size caps of the sandbox's tmpfs mounts: tmpfs is memory the RSS watchdog does not see.
constexpr const char* kTmpfsBytes = "67108864";

// Visible in every sandbox, read-only (where present). /bin, /sbin and /lib* are symlinks into
// /usr on merged-/usr systems and are recreated as such.
const char* const kSystemDirs[] = {"/usr", "/etc", "/opt", "/sys"};
const char* const kSystemLinksOrDirs[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

bool under(const fs::path& path, const fs::path& dir) {
  auto p = path.begin(), d = dir.begin();
  for (; d != dir.end(); ++p, ++d)
    if (p == path.end() || *p != *d) return false;
  return true;
}

bool under_system_dir(const fs::path& path) {
  for (const char* d : kSystemDirs)
    if (under(path, d)) return true;
  for (const char* d : kSystemLinksOrDirs)
    if (under(path, d)) return true;
  return false;
}

// Whether uid kSandboxUid (not in the owner's group) may search every folder above `path` and
// read `path` itself (and search it, when a folder). ACLs are not looked at.
bool reachable_by_sandbox_user(const fs::path& path) {
  auto allowed = [](const struct stat& st, mode_t user, mode_t group, mode_t other) {
    if (st.st_uid == static_cast<uid_t>(kSandboxUid)) return (st.st_mode & user) == user;
    if (st.st_gid == static_cast<gid_t>(kSandboxUid)) return (st.st_mode & group) == group;
    return (st.st_mode & other) == other;
  };
  struct stat st;
  fs::path prefix;
  for (auto it = path.begin(); it != path.end(); ++it) {
    prefix /= *it;
    if (::stat(prefix.c_str(), &st) != 0) return true;  // missing: not bound, nothing to reach
    bool last = std::next(it) == path.end();
    if (!last || S_ISDIR(st.st_mode)) {
      if (!allowed(st, S_IXUSR, S_IXGRP, S_IXOTH)) return false;
    }
    if (last && !allowed(st, S_IRUSR, S_IRGRP, S_IROTH)) return false;
  }
  return true;
}

// Hands a writable path (and what is in it) to the sandbox's user.
void give_to_sandbox_user(const fs::path& path) {
  std::error_code ec;
  ::lchown(path.c_str(), kSandboxUid, kSandboxUid);
  if (!fs::is_directory(fs::symlink_status(path, ec))) return;
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    ::lchown(it->path().c_str(), kSandboxUid, kSandboxUid);
}

bool is_executable(const fs::path& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

std::string find_bwrap() {
  if (const char* env = std::getenv("KF_BWRAP"); env != nullptr && *env != '\0') return env;
  fs::path beside =
      (executable_dir() / ".." / "libexec" / "kernelfoundry" / "bwrap").lexically_normal();
  if (is_executable(beside)) return beside.string();
  const char* path = std::getenv("PATH");
  for (const std::string& dir :
       split(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / "bwrap";
    if (is_executable(candidate)) return candidate.string();
  }
  return "";
}

struct Mount {
  fs::path path;
  bool writable;
};

// argv wrapped in bwrap. `drop_user`: a root orchestrator's child drops to kSandboxUid and bwrap
// builds the sandbox in a user namespace; otherwise bwrap runs as we do (root: every capability
// dropped in the sandbox; a user: in a user namespace).
ProcessSpec wrap_in_bwrap(ProcessSpec spec, const SandboxOptions& options,
                          const SandboxProbe& probe, bool drop_user) {
  std::error_code ec;
  fs::path work = spec.work_dir.empty() ? fs::current_path(ec) : fs::absolute(spec.work_dir, ec);
  work = work.lexically_normal();
  std::vector<std::string> environment = child_environment(spec);
  Result<std::string> exe = resolve_executable(spec, environment);
  if (!exe) return spec;  // it cannot start anyway; spawning it reports why

  std::vector<Mount> mounts{{work, true}};
  auto add = [&](const fs::path& p, bool writable) {
    if (p.empty()) return;
    fs::path abs = fs::absolute(p, ec).lexically_normal();
    if (!abs.has_filename() && abs.has_parent_path()) abs = abs.parent_path();  // "dir/"
    if (!fs::exists(abs, ec)) return;
    if (!writable && under_system_dir(abs)) return;
    mounts.push_back({abs, writable});
    // A path reached through a symlink is also bound where it really is, for arguments that
    // name it by its real path.
    fs::path real = fs::canonical(abs, ec);
    if (!ec && real != abs && !(!writable && under_system_dir(real)))
      mounts.push_back({real, writable});
  };
  for (const fs::path& p : options.read_only_paths) add(p, false);
  for (const fs::path& p : options.writable_paths) add(p, true);
  add(*exe, false);
  // Parents before what lies in them, so a read-only file in a writable folder stays read-only.
  std::stable_sort(mounts.begin(), mounts.end(), [](const Mount& a, const Mount& b) {
    return std::distance(a.path.begin(), a.path.end()) <
           std::distance(b.path.begin(), b.path.end());
  });

  bool root = ::geteuid() == 0;
  if (drop_user) {
    for (const Mount& m : mounts)
      if (!reachable_by_sandbox_user(m.writable ? m.path.parent_path() : m.path)) drop_user = false;
  }
  if (drop_user) {
    for (const Mount& m : mounts)
      if (m.writable) give_to_sandbox_user(m.path);
    spec.run_as_uid = spec.run_as_gid = kSandboxUid;
    // A backstop for a bomb that outruns the 50 ms watchdog (which holds each tree to
    // max_processes). The kernel counts per user: every sandbox of this machine shares it, so it
    // is set well above one tree's limit, lest one candidate's bomb fail another's build.
    if (options.max_processes > 0) spec.nproc_limit = 4 * options.max_processes + 64;
  }

  std::vector<std::string> a = {probe.bwrap,     "--die-with-parent",   "--new-session",
                                "--unshare-pid", "--unshare-net",       "--unshare-ipc",
                                "--unshare-uts", "--unshare-cgroup-try"};
  if (drop_user || !root) {
    a.push_back("--unshare-user");
  } else {
    a.insert(a.end(), {"--cap-drop", "ALL"});
  }
  for (const char* d : kSystemDirs)
    if (fs::is_directory(d, ec)) a.insert(a.end(), {"--ro-bind", d, d});
  for (const char* d : kSystemLinksOrDirs) {
    if (fs::is_symlink(d, ec)) {
      a.insert(a.end(), {"--symlink", fs::read_symlink(d, ec).string(), d});
    } else if (fs::is_directory(d, ec)) {
      a.insert(a.end(), {"--ro-bind", d, d});
    }
  }
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev"});
  if (options.gpu) {
    for (const auto& entry : fs::directory_iterator("/dev", ec)) {
      std::string name = entry.path().filename().string();
      if (starts_with(name, "nvidia") || name == "dri" || name == "kfd")
        a.insert(a.end(), {"--dev-bind", entry.path().string(), entry.path().string()});
    }
  }
  a.insert(a.end(), {"--size", kTmpfsBytes, "--tmpfs", "/dev/shm", "--size", kTmpfsBytes, "--tmpfs",
                     "/tmp"});
  for (const Mount& m : mounts)
    a.insert(a.end(), {m.writable ? "--bind" : "--ro-bind", m.path.string(), m.path.string()});
  a.insert(a.end(), {"--remount-ro", "/dev", "--remount-ro", "/", "--chdir", work.string()});

  // A bwrap carried with its libraries (libexec/kernelfoundry/lib) finds them; the command gets
  // the variable as it was.
  fs::path bwrap_libs = fs::path(probe.bwrap).parent_path() / "lib";
  if (fs::is_directory(bwrap_libs, ec)) {
    std::string old;
    bool had = false;
    for (const auto& [name, value] : spec.env)
      if (name == "LD_LIBRARY_PATH") old = value, had = true;
    if (had) {
      a.insert(a.end(), {"--setenv", "LD_LIBRARY_PATH", old});
    } else {
      a.insert(a.end(), {"--unsetenv", "LD_LIBRARY_PATH"});
    }
    set_var(spec.env, "LD_LIBRARY_PATH", bwrap_libs.string() + (had ? ":" + old : ""));
  }
  a.push_back("--");
  a.push_back(*exe);
  a.insert(a.end(), spec.argv.begin() + 1, spec.argv.end());
  spec.argv = std::move(a);
  spec.signal_exit_codes = true;
  return spec;
}

std::mutex g_probe_mutex;
std::unique_ptr<SandboxProbe> g_probe;

// Runs `sh -c 'echo ok > probe'` in a sandbox of the given kind; "" when that worked, else why.
std::string try_bwrap(const SandboxProbe& probe, bool drop_user) {
  auto dir = make_temp_dir(fs::temp_directory_path(), "kf_sandbox_probe_");
  if (!dir) return dir.message();
  std::error_code ec;
  fs::permissions(*dir,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo ok > probe.txt"};
  spec.work_dir = *dir;
  spec.timeout_s = 20;
  spec.inherit_env = false;
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  SandboxOptions options;
  ProcessSpec wrapped = wrap_in_bwrap(spec, options, probe, drop_user);
  if (drop_user && wrapped.run_as_uid < 0) {
    fs::remove_all(*dir, ec);
    return fs::temp_directory_path().string() + " is not reachable by uid 65534";
  }
  ProcessResult r = PosixProcessRunner().run(wrapped);
  auto written = read_file(*dir / "probe.txt");
  fs::remove_all(*dir, ec);
  if (r.success() && written && trim(*written) == "ok") return "";
  std::string why = r.describe();
  std::string out = trim(r.output);
  if (!out.empty()) why += ": " + truncate_middle(out, 300, 200);
  return why;
}

SandboxProbe run_probe() {
  SandboxProbe probe;
  probe.bwrap = find_bwrap();
  if (probe.bwrap.empty()) {
    probe.problem =
        "bubblewrap (bwrap) is not installed: not found on PATH, in "
        "<kernelfoundry>/../libexec/kernelfoundry/ or in $KF_BWRAP";
    return probe;
  }
  if (!is_executable(probe.bwrap)) {
    probe.problem = probe.bwrap + " is not an executable file";
    return probe;
  }
  probe.usable = true;
  if (::geteuid() == 0) {
    probe.unprivileged = true;
    std::string as_user = try_bwrap(probe, true);
    if (as_user.empty()) return probe;
    probe.unprivileged = false;
  }
  std::string why = try_bwrap(probe, false);
  if (why.empty()) return probe;
  probe.usable = false;
  probe.problem = probe.bwrap + " does not work here (" + why +
                  "); user or PID namespaces may be disabled (kernel.unprivileged_userns_clone, "
                  "a container's seccomp profile)";
  return probe;
}

}  // namespace

Result<SandboxMode> parse_sandbox_mode(std::string_view text) {
  if (text == "auto") return SandboxMode::kAuto;
  if (text == "bwrap") return SandboxMode::kBwrap;
  if (text == "none") return SandboxMode::kNone;
  return Result<SandboxMode>::error("eval_config.sandbox: '" + std::string(text) +
                                    "' is not one of auto, bwrap, none");
}

std::string_view sandbox_mode_name(SandboxMode mode) {
  switch (mode) {
    case SandboxMode::kAuto:
      return "auto";
    case SandboxMode::kBwrap:
      return "bwrap";
    default:
      return "none";
  }
}

const SandboxProbe& sandbox_probe() {
  std::lock_guard<std::mutex> lock(g_probe_mutex);
  if (!g_probe) g_probe = std::make_unique<SandboxProbe>(run_probe());
  return *g_probe;
}

void set_sandbox_probe(const SandboxProbe* probe) {
  std::lock_guard<std::mutex> lock(g_probe_mutex);
  g_probe = probe != nullptr ? std::make_unique<SandboxProbe>(*probe) : nullptr;
}

Result<SandboxStatus> check_sandbox(SandboxMode requested) {
  SandboxStatus status;
  if (requested == SandboxMode::kNone) return status;
  const SandboxProbe& probe = sandbox_probe();
  if (probe.usable) {
    status.mode = SandboxMode::kBwrap;
    return status;
  }
  if (requested == SandboxMode::kBwrap)
    return Result<SandboxStatus>::error(
        "eval_config.sandbox is bwrap, but the sandbox cannot be used: " + probe.problem +
        ". Install bubblewrap (apt-get install bubblewrap) or set eval_config.sandbox: auto to "
        "run without it");
  status.warning =
      "warning: candidates run WITHOUT a sandbox: " + probe.problem +
      ". Builds and runs can read and write any file this user can, reach the network and "
      "signal this process; only the environment scrub and the memory, process, CPU-time, "
      "file-size and output limits apply. Install bubblewrap (apt-get install bubblewrap) to "
      "sandbox them, or set eval_config.sandbox: none to silence this.";
  return status;
}

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
  for (const auto& [name, value] : options.env) set_var(env, name, value);
  for (const auto& [name, value] : spec.env) set_var(env, name, value);
  std::erase_if(env, [](const auto& entry) { return is_secret_env_name(entry.first); });
  spec.env = std::move(env);
  spec.inherit_env = false;

  spec.file_size_limit_bytes = tighter(spec.file_size_limit_bytes, options.file_size_limit_bytes);
  spec.memory_limit_bytes = tighter(spec.memory_limit_bytes, options.memory_limit_bytes);
  spec.cpu_limit_s = tighter(spec.cpu_limit_s, options.cpu_limit_s);
  spec.tree_memory_limit_bytes =
      tighter(spec.tree_memory_limit_bytes, options.tree_memory_limit_bytes);
  spec.max_tasks = tighter(spec.max_tasks, options.max_processes);
  auto keep = [](std::string& key, const std::string& from) {
    if (key.empty()) key = from;
  };
  keep(spec.limit_keys.memory, options.limit_keys.memory);
  keep(spec.limit_keys.tasks, options.limit_keys.tasks);
  keep(spec.limit_keys.cpu_time, options.limit_keys.cpu_time);
  keep(spec.limit_keys.file_size, options.limit_keys.file_size);
  keep(spec.limit_keys.output, options.limit_keys.output);
  if (options.create_tmp_dir) fs::create_directories(tmp, ec);  // a failure shows in the child

  if (options.mode == SandboxMode::kNone || spec.argv.empty()) return spec;
  const SandboxProbe& probe = sandbox_probe();
  if (!probe.usable) {
    if (options.mode == SandboxMode::kBwrap)
      spec.refuse_start = "cannot run '" + spec.argv[0] +
                          "' in the sandbox (eval_config.sandbox: bwrap): " + probe.problem +
                          "; install bubblewrap (apt-get install bubblewrap)";
    return spec;  // auto: the limits only; check_sandbox() gave the job its warning
  }
  return wrap_in_bwrap(std::move(spec), options, probe, probe.unprivileged);
}

}  // namespace kf
