// Running untrusted (LLM-written) code: a scrubbed environment, resource limits, and, where
// bubblewrap works, a sandbox of Linux namespaces around every build step and run.
//
// What this isolates, layer by layer (docs/security.md has the threat model):
// - Environment: only a safe list of variables reaches the child (API keys and tokens never do);
//   HOME and TMPDIR point into its work dir. Always on.
// - Limits, always on: file sizes (RLIMIT_FSIZE), CPU time (RLIMIT_CPU), and a watchdog in the
//   runner that sums the RSS and counts the tasks of the child's whole process tree and kills it
//   at the memory or process limit, naming the limit (ProcessResult::limit_exceeded).
// - Sandbox (mode bwrap, or auto where bwrap works): bwrap gives the child its own PID namespace
//   (it cannot see or signal the orchestrator; everything in it, setsid()'d grandchildren too,
//   dies with it), no network (not even loopback), no IPC/UTS sharing, a read-only system
//   (/usr, /lib*, /bin, /sbin, /etc, /opt, /sys), a fresh /proc and a minimal /dev (GPU device
//   nodes when asked), a small tmpfs /tmp, the listed read-only paths, the listed writable paths
//   and the work dir: NOTHING else ($HOME, the project, the database, logs, .env, other
//   candidates, the cache are simply not there). As root the child runs as uid 65534 with no
//   groups (where user namespaces work and every path it needs is reachable by that uid, so
//   RLIMIT_NPROC applies too), else as root with every capability dropped. The child also gets
//   PR_SET_PDEATHSIG(SIGKILL): the sandbox dies when the orchestrator does.
// What it does NOT isolate: there is no seccomp filter (the kernel's whole syscall surface is
// reachable), no cgroup (GPU memory and disk use are not limited; the memory watchdog samples
// every 50 ms, so a burst can exceed the limit briefly), and with mode none or where bwrap is
// missing only the environment and limits layers apply (a warning says so once per job).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "proc/process.h"
#include "util/status.h"

namespace kf {

// eval_config.sandbox: auto = bwrap where it works, else the limits only (with one warning);
// bwrap = bwrap or an error at job start; none = environment and limits only, no warning.
enum class SandboxMode { kAuto, kBwrap, kNone };

Result<SandboxMode> parse_sandbox_mode(std::string_view text);  // "auto", "bwrap", "none"
std::string_view sandbox_mode_name(SandboxMode mode);

struct SandboxOptions {
  // kNone keeps callers that set nothing as they were; the evaluator's options (eval/isolation.h)
  // set the job's mode.
  SandboxMode mode = SandboxMode::kNone;
  // Seen read-only / read-write in the sandbox at the same path (files or folders; missing ones
  // are skipped). The spec's work dir is always writable. Nothing else outside the system is seen.
  std::vector<std::filesystem::path> read_only_paths;
  std::vector<std::filesystem::path> writable_paths;
  // Bind the GPU device nodes (/dev/nvidia*, /dev/nvidia-caps, /dev/dri, /dev/kfd) when present.
  bool gpu = false;

  // Applied unless the spec already has a tighter limit. 0 = no limit.
  uint64_t file_size_limit_bytes = uint64_t{4} << 30;
  // RLIMIT_AS. Off by default: CUDA and ROCm reserve huge virtual address ranges.
  uint64_t memory_limit_bytes = 0;
  double cpu_limit_s = 0;
  // The watchdog's limits on the whole process tree (ProcessSpec): summed RSS and processes +
  // threads. 0 = none.
  uint64_t tree_memory_limit_bytes = 0;
  int max_processes = 0;
  // The config keys behind the limits, named when one is hit.
  ProcessSpec::LimitKeys limit_keys;

  // Further variables passed through when set in our environment (exact names, or prefixes
  // ending in '*', e.g. "TRITON_*"). Secret-looking names are dropped even when listed here.
  std::vector<std::string> pass_through;
  // Variables set whatever our environment holds (after the pass-through ones; the spec's own
  // env still goes on top): e.g. the device an arch's target selects.
  std::vector<std::pair<std::string, std::string>> env;
  // Create work_dir/tmp for TMPDIR.
  bool create_tmp_dir = true;
};

// Names that look like credentials: *_API_KEY, *_TOKEN, *_SECRET, *PASSWORD*, ... .
bool is_secret_env_name(std::string_view name);

// The spec with the untrusted-code defaults applied: inherit_env = false and an env of PATH,
// HOME=work_dir, TMPDIR=work_dir/tmp, LANG=C, the device variables (CUDA_VISIBLE_DEVICES, OpenCL
// ICD/PoCL, SYCL/Level Zero selectors, LD_LIBRARY_PATH) when set, the options' pass-through list,
// then the spec's own env entries on top; every secret-looking name removed. The limits set.
// When the mode resolves to bwrap (sandbox_probe()), argv is wrapped in bwrap as described at
// the top; mode bwrap where bwrap is not usable gives a spec that refuses to start, naming the
// fix; mode auto then falls back silently (check_sandbox() gives the job its one warning).
ProcessSpec sandboxed(ProcessSpec spec, const SandboxOptions& options = {});

// What this machine offers, found once per process (the first call runs bwrap a few times;
// later calls return the cached answer). bwrap is looked for in $KF_BWRAP, then next to the
// kernelfoundry binary at <exe_dir>/../libexec/kernelfoundry/bwrap (libraries it needs may sit in
// a lib/ folder beside it), then on PATH.
struct SandboxProbe {
  bool usable = false;        // bwrap ran a test command in a sandbox
  std::string bwrap;          // its path, when found
  bool unprivileged = false;  // as root: children can drop to uid 65534 (user namespaces work)
  std::string problem;        // why it is not usable, when !usable
};
const SandboxProbe& sandbox_probe();
// Replaces the cached probe (tests: force a fallback or the root-with-capabilities-dropped
// variant); nullptr forgets it, so the next sandbox_probe() probes again.
void set_sandbox_probe(const SandboxProbe* probe);

// For a job's start: what `requested` resolves to (kBwrap or kNone) and, when auto falls back,
// the one warning line to show (what is missing, what is not isolated, how to install).
// Requesting bwrap where it is not usable is an error naming the fix.
struct SandboxStatus {
  SandboxMode mode = SandboxMode::kNone;
  std::string warning;
};
Result<SandboxStatus> check_sandbox(SandboxMode requested);

}  // namespace kf
