// Starting a child: PATH lookup, environment, fork+exec into its own process group with limits.
#include "proc/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "util/strings.h"

extern char** environ;

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

namespace kf {

namespace fs = std::filesystem;

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int UniqueFd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

namespace {

// What failed in the child before exec; sent to the parent with errno through a pipe.
enum ChildStage : int {
  kStageSetpgid = 1,
  kStageFds,
  kStageChdir,
  kStageRlimit,
  kStageUser,
  kStageParent,
  kStageExec
};

const char* stage_text(int stage) {
  switch (stage) {
    case kStageSetpgid:
      return "cannot create its process group";
    case kStageFds:
      return "cannot set up its stdin/stdout";
    case kStageChdir:
      return "cannot enter its working directory";
    case kStageRlimit:
      return "cannot set its resource limits";
    case kStageUser:
      return "cannot switch to the sandbox's unprivileged user";
    case kStageParent:
      return "its parent (this process) ended while it started";
    default:
      return "exec failed";
  }
}

struct Limit {
  int resource;
  rlimit value;
};

// Everything the child needs, built before fork: after fork only async-signal-safe calls.
struct ChildPlan {
  const char* exe;
  char* const* argv;
  char* const* envp;
  const char* work_dir;  // "" = stay
  int stdin_fd, output_fd, error_fd;
  Limit limits[4];
  int limit_count = 0;
  int uid = -1, gid = -1;  // >= 0: drop to these before exec
  pid_t parent = 0;        // getppid() must still be this once PR_SET_PDEATHSIG is set
};

bool is_executable_file(const fs::path& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// Moves fds away from 0..2 so that the child's dup2 onto its std fds cannot clobber them (only
// happens when the orchestrator runs with a std fd closed).
Status lift_fd(UniqueFd& fd) {
  if (fd.get() > 2) return Status::ok();
  int lifted = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (lifted < 0) return Status::error(std::string("fcntl: ") + std::strerror(errno));
  fd.reset(lifted);
  return Status::ok();
}

Status make_pipe(UniqueFd& read_end, UniqueFd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return Status::error(std::string("pipe: ") + std::strerror(errno));
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  KF_RETURN_IF_ERROR(lift_fd(read_end));
  return lift_fd(write_end);
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Soft limit `soft`, hard `hard`, both clipped to the current hard limit (raising it needs root).
void add_limit(ChildPlan& plan, int resource, rlim_t soft, rlim_t hard) {
  rlimit current;
  if (::getrlimit(resource, &current) != 0) current.rlim_max = RLIM_INFINITY;
  rlimit value;
  value.rlim_cur = std::min(soft, current.rlim_max);
  value.rlim_max = std::min(hard, current.rlim_max);
  plan.limits[plan.limit_count++] = Limit{resource, value};
}

// dup2 onto `target`; when the fd already is `target`, dup2 would keep close-on-exec set.
bool move_to(int fd, int target) {
  if (fd == target) return ::fcntl(fd, F_SETFD, 0) == 0;
  return ::dup2(fd, target) == target;
}

[[noreturn]] void child_main(const ChildPlan& plan) {
  auto fail = [&plan](int stage) {
    int message[2] = {stage, errno};
    ssize_t ignored = ::write(plan.error_fd, message, sizeof message);
    (void)ignored;
    ::_exit(127);
  };
  if (::setpgid(0, 0) != 0) fail(kStageSetpgid);
  // Ignored signals and the signal mask survive exec; a fresh program expects the defaults.
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof default_action);
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  if (!move_to(plan.stdin_fd, 0) || !move_to(plan.output_fd, 1) || !move_to(plan.output_fd, 2))
    fail(kStageFds);
  if (plan.work_dir[0] != '\0' && ::chdir(plan.work_dir) != 0) fail(kStageChdir);
  for (int i = 0; i < plan.limit_count; ++i)
    if (::setrlimit(plan.limits[i].resource, &plan.limits[i].value) != 0) fail(kStageRlimit);
  if (plan.gid >= 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(static_cast<gid_t>(plan.gid)) != 0 ||
        ::setuid(static_cast<uid_t>(plan.uid)) != 0)
      fail(kStageUser);
  }
  // The child dies with the thread that supervises it, so a killed orchestrator leaves nothing
  // running. Set after the uid change (which clears it); the parent may have died before it was
  // set, which getppid() then shows.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(kStageParent);
  if (::getppid() != plan.parent) {
    errno = ESRCH;
    fail(kStageParent);
  }
  // Belt and braces: fds some library opened without O_CLOEXEC must not reach untrusted code.
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execve(plan.exe, plan.argv, plan.envp);
  fail(kStageExec);
  ::_exit(127);  // not reached
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> child_environment(const ProcessSpec& spec) {
  std::vector<std::string> env;
  if (spec.inherit_env)
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  for (const auto& [name, value] : spec.env) {
    std::string prefix = name + "=";
    std::erase_if(env, [&](const std::string& entry) { return starts_with(entry, prefix); });
    env.push_back(prefix + value);
  }
  return env;
}

Result<std::string> resolve_executable(const ProcessSpec& spec,
                                       const std::vector<std::string>& environment) {
  const std::string& name = spec.argv.at(0);
  std::error_code ec;
  fs::path cwd = spec.work_dir.empty() ? fs::current_path(ec) : spec.work_dir;
  auto in_cwd = [&](const fs::path& p) { return p.is_absolute() ? p : cwd / p; };
  if (name.find('/') != std::string::npos) {
    fs::path p = in_cwd(name);
    if (!fs::exists(p, ec))
      return Result<std::string>::error("cannot run '" + name + "': " + p.string() +
                                        " does not exist");
    if (!is_executable_file(p))
      return Result<std::string>::error("cannot run '" + name + "': " + p.string() +
                                        " is not an executable file");
    return p.string();
  }
  std::string path_value = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& entry : environment)
    if (starts_with(entry, "PATH=")) path_value = entry.substr(5);
  for (std::string dir : split(path_value, ':')) {
    fs::path candidate = in_cwd(fs::path(dir.empty() ? "." : dir) / name);
    if (is_executable_file(candidate)) return candidate.string();
  }
  return Result<std::string>::error("cannot run '" + name + "': not found in PATH");
}

Result<SpawnedChild> spawn_child(const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty())
    return Result<SpawnedChild>::error("cannot run an empty command");
  if (!spec.refuse_start.empty()) return Result<SpawnedChild>::error(spec.refuse_start);
  const std::string& name = spec.argv[0];
  auto failed = [&](const std::string& why) {
    return Result<SpawnedChild>::error("cannot run '" + name + "': " + why);
  };
  std::error_code ec;
  if (!spec.work_dir.empty() && !fs::is_directory(spec.work_dir, ec))
    return failed("working directory " + spec.work_dir.string() + " does not exist");

  std::vector<std::string> environment = child_environment(spec);
  Result<std::string> exe = resolve_executable(spec, environment);
  if (!exe) return exe.status();
  std::vector<std::string> args = spec.argv;
  std::vector<char*> argv = pointers(args);
  std::vector<char*> envp = pointers(environment);
  std::string work_dir = spec.work_dir.string();

  SpawnedChild child;
  UniqueFd output_write, error_read, error_write, stdin_read;
  Status piped = make_pipe(child.output, output_write);
  if (piped) piped = make_pipe(error_read, error_write);
  bool stdin_piped = !spec.stdin_data.empty() || spec.stdin_stream;
  if (piped && stdin_piped) piped = make_pipe(stdin_read, child.stdin_pipe);
  if (piped && !stdin_piped) {
    stdin_read.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!stdin_read.valid())
      piped = Status::error(std::string("/dev/null: ") + std::strerror(errno));
    if (piped) piped = lift_fd(stdin_read);
  }
  if (!piped) return failed(piped.message());

  ChildPlan plan{exe->c_str(),
                 argv.data(),
                 envp.data(),
                 work_dir.c_str(),
                 stdin_read.get(),
                 output_write.get(),
                 error_write.get(),
                 {},
                 0};
  if (spec.memory_limit_bytes > 0)
    add_limit(plan, RLIMIT_AS, spec.memory_limit_bytes, spec.memory_limit_bytes);
  if (spec.file_size_limit_bytes > 0)
    add_limit(plan, RLIMIT_FSIZE, spec.file_size_limit_bytes, spec.file_size_limit_bytes);
  if (spec.cpu_limit_s > 0) {
    // SIGXCPU at the soft limit, SIGKILL a second later if the child ignores it.
    rlim_t seconds = static_cast<rlim_t>(std::ceil(spec.cpu_limit_s));
    add_limit(plan, RLIMIT_CPU, seconds, seconds + 1);
  }
  if (spec.nproc_limit > 0)
    add_limit(plan, RLIMIT_NPROC, static_cast<rlim_t>(spec.nproc_limit),
              static_cast<rlim_t>(spec.nproc_limit));
  plan.uid = spec.run_as_uid;
  plan.gid = spec.run_as_uid >= 0 ? (spec.run_as_gid >= 0 ? spec.run_as_gid : spec.run_as_uid) : -1;
  plan.parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) return failed(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) child_main(plan);

  child.pid = pid;
  ::setpgid(pid, pid);  // also in the child: whichever runs first, the group exists before we go on
  output_write.reset();
  error_write.reset();
  stdin_read.reset();

  // The error pipe closes on a successful exec (close-on-exec) or carries {stage, errno}.
  int message[2];
  ssize_t n;
  do {
    n = ::read(error_read.get(), message, sizeof message);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof message)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return failed(std::string(stage_text(message[0])) + ": " + std::strerror(message[1]));
  }
  set_nonblocking(child.output.get());
  if (child.stdin_pipe.valid()) set_nonblocking(child.stdin_pipe.get());
  return child;
}

// Writes to the child's stdin without letting a closed pipe raise SIGPIPE in the whole
// orchestrator: SIGPIPE is blocked in this thread for the write, and one it caused is consumed.
ssize_t write_without_sigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_set, old_mask, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE);
  ssize_t n = ::write(fd, data, size);
  int saved_errno = errno;
  if (n < 0 && errno == EPIPE && !was_pending) {
    timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = saved_errno;
  return n;
}

}  // namespace kf
