// Defaults for running untrusted (LLM-written) code: scrubbed environment and resource limits.
//
// What this isolates: the environment (only a safe list of variables reaches the child; API keys
// and tokens never do), HOME/TMPDIR (pointed into the work dir), file sizes (RLIMIT_FSIZE), and,
// when asked, address space and CPU time. With PosixProcessRunner the child also runs in its own
// process group, which is killed as a whole on a timeout and when the leader exits, and it
// inherits no fds but stdin (/dev/null or our pipe) and the output pipe.
// What it does NOT isolate: there is no network namespace (the child can reach the network), no
// file-system isolation (absolute paths still reach anything the user can read or write), no
// seccomp filter, no cgroup (GPU memory is unlimited; a process that calls setsid() leaves the
// group and escapes the group kill). Run the orchestrator as an unprivileged user, in a container
// where that matters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proc/process.h"

namespace kf {

struct SandboxOptions {
  // Applied unless the spec already has a tighter limit. 0 = no limit.
  uint64_t file_size_limit_bytes = uint64_t{4} << 30;
  // Off by default: CUDA and ROCm reserve huge virtual address ranges, so RLIMIT_AS breaks them.
  uint64_t memory_limit_bytes = 0;
  double cpu_limit_s = 0;
  // Further variables passed through when set in our environment (exact names, or prefixes
  // ending in '*', e.g. "TRITON_*"). Secret-looking names are dropped even when listed here.
  std::vector<std::string> pass_through;
  // Create work_dir/tmp for TMPDIR.
  bool create_tmp_dir = true;
};

// Names that look like credentials: *_API_KEY, *_TOKEN, *_SECRET, *PASSWORD*, ... .
bool is_secret_env_name(std::string_view name);

// The spec with the untrusted-code defaults applied: inherit_env = false and an env of PATH,
// HOME=work_dir, TMPDIR=work_dir/tmp, LANG=C, the device variables (CUDA_VISIBLE_DEVICES, OpenCL
// ICD/PoCL, SYCL/Level Zero selectors, LD_LIBRARY_PATH) when set, the options' pass-through list,
// then the spec's own env entries on top; every secret-looking name removed.
ProcessSpec sandboxed(ProcessSpec spec, const SandboxOptions& options = {});

}  // namespace kf
