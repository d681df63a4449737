// The sandbox of each child the evaluator starts (build steps, runs of task binaries), made from
// the job's EvalOptions: the mode, the limits with their config keys, and what each may see.
#pragma once

#include <filesystem>
#include <vector>

#include "eval/eval.h"
#include "lang/lang.h"
#include "proc/sandbox.h"

namespace kf {

// What every child of the evaluator gets: options.sandbox, the memory and process limits of its
// process tree, RLIMIT_CPU (options.cpu_time_limit_s, or 4 x `timeout_s` when that is 0), and
// the config keys named when one of them is hit. Sees nothing outside the system and its work
// dir yet.
SandboxOptions base_sandbox(const EvalOptions& options, double timeout_s);

// For BuildLimits::sandbox (every compile and link step): the package's sources read-only, the
// harness headers and libraries (toolchain include_dir, lib_dir) and the CUDA root read-only.
// run_build adds the build dir (writable) and, for the link, each cached object.
SandboxOptions build_sandbox(const EvalOptions& options, const Toolchain& toolchain,
                             const std::filesystem::path& source_dir);

// For a run of a task binary (candidate, reference or checker): the spec's work dir writable,
// `source_dir` (the --kernel-dir) and `binary` read-only, `extra_read_only` too (e.g. the
// reference's expected outputs for the checker), the folders of LD_LIBRARY_PATH read-only, the
// GPU device nodes for every language but CPP, and the device variables passed through
// (KF_OPENCL_PLATFORM, POCL_*, CUDA_VISIBLE_DEVICES).
SandboxOptions run_sandbox(const EvalOptions& options, const std::filesystem::path& source_dir,
                           const std::filesystem::path& binary,
                           const std::vector<std::filesystem::path>& extra_read_only = {});

}  // namespace kf
