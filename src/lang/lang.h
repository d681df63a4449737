// Per-language build recipes: which sources compile with which tool, and the content-hashed cache
// that lets a candidate rebuild only what it changed.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "proc/process.h"
#include "proc/sandbox.h"
#include "util/status.h"

namespace kf {

enum class Language { kCuda, kOcl, kSycl, kTriton, kCpp };

Result<Language> parse_language(std::string_view name);
std::string_view language_name(Language language);  // "CUDA", "OCL", "SYCL", "triton", "CPP"

// Where the harness headers and libraries are, and which compilers to call.
struct Toolchain {
  std::filesystem::path include_dir;  // holds kernelfoundry/harness.h
  std::filesystem::path lib_dir;      // holds libkf_harness_<flavour>.a
  std::string cxx = "g++";
  std::string nvcc = "nvcc";
  std::filesystem::path cuda_root;  // for -I/-L of the CUDA runtime; empty = nvcc's own
};

// Finds the harness next to the executable (installed or build tree), honouring
// KERNELFOUNDRY_HARNESS_DIR; the error names what is missing.
Result<Toolchain> find_toolchain();

// One compile or link command, with the cache key of what it produces.
struct BuildStep {
  std::string label;  // "compile kernel.cu", "link task"
  std::vector<std::string> argv;
  std::string cache_key;         // content hash of every input that shapes the output
  std::filesystem::path output;  // where the command writes (inside the build dir)
  // An nvcc compile: run_build runs its host and device sides at the same time (nvcc_split.h),
  // or the command as it is when nvcc's steps are not the expected ones.
  bool nvcc_split = false;
};

struct BuildPlan {
  std::vector<BuildStep> compiles;  // independent: may run in parallel
  BuildStep link;
  std::filesystem::path binary;  // the task's test binary after the link
};

struct BuildRequest {
  Language language = Language::kCpp;
  std::filesystem::path source_dir;  // the materialised package (candidate files applied)
  std::filesystem::path build_dir;   // where objects and the binary go
  std::string cuda_sm;               // "sm_90"; empty = let nvcc pick for the local GPU
};

// Works out the build for a package. Fails with a clear message when the language has no native
// recipe here (SYCL without icpx/acpp, triton) or the toolchain is missing.
Result<BuildPlan> plan_build(const BuildRequest& request, const Toolchain& toolchain);

// Runs a plan through `runner` (compiles in parallel), reusing cached objects and binaries under
// `cache_dir`. The result carries the combined compiler output for the eval log.
struct BuildOutcome {
  bool ok = false;
  bool timed_out = false;
  std::string failed_step;  // label of the first failing step
  std::string output;       // compiler output of the steps that ran
  std::string error;        // one-line reason when !ok
  // Set when the build failed because of the machine, not the code: a missing compiler, a full
  // disk, a read-only path, a file size limit, a build cache that cannot be written. The cause in
  // words, naming the step and the path where known; the code is then not to blame.
  std::string environment_error;
  int steps_run = 0;  // steps executed (the rest came from the cache)
  int steps_cached = 0;
  double seconds = 0;   // wall-clock, paused time included
  double paused_s = 0;  // of `seconds`, time the steps were paused by BuildLimits::pause_group
  std::filesystem::path binary;  // the test binary to run (inside the cache)
};

struct BuildLimits {
  double timeout_s = 200;            // whole build
  double inactivity_timeout_s = 60;  // per step
  size_t output_cap = 1 << 20;
  int parallel = 2;
  // Every step runs sandboxed with these (eval/isolation.h build_sandbox(): mode, limits, the
  // sources and toolchain read-only); run_build adds the build dir (writable) and, for the link,
  // each cached object it reads. The default (mode none) only scrubs the environment.
  SandboxOptions sandbox;
  // The job's timing gate (proc/pause_group.h): every step runs in it, stopped while a timing
  // window runs; paused time counts toward no limit (timeout_s included). nullptr = none.
  PauseGroup* pause_group = nullptr;
};

// Cached objects and binaries are stored with their SHA-256 beside them (<file>.sha256) and
// checked before use: one changed on disk since (or stored without a hash) is removed and
// rebuilt, with a note in the build output.
BuildOutcome run_build(const BuildPlan& plan, const std::filesystem::path& cache_dir,
                       const BuildLimits& limits, ProcessRunner& runner);

// Whether a failed child (a compiler, the linker, a task binary) failed because of the machine
// rather than its input: it could not be started (e.g. a missing compiler), it was killed by
// SIGXFSZ under a file size limit set outside KernelFoundry (ulimit -f below the sandbox's), or,
// with `scan_output`, its output reports a full disk, a used-up quota, a read-only file system
// or (under such a limit) a file too large. Returns the cause in words, "" when the failure is
// the program's own.
// With `confirm_dir`, a fault read from the output counts only when the machine really cannot
// write there now (read-only, under 64 MiB free, or a 1 MiB probe write fails), since the output
// may quote a candidate's own text.
std::string environment_fault(const ProcessResult& result, bool scan_output,
                              const std::filesystem::path& confirm_dir = {});
// The check environment_fault() confirms with: true when `dir` cannot be written now.
// set_write_probe() replaces it (tests; nullptr restores the real one) and returns the previous.
using WriteProbe = bool (*)(const std::filesystem::path& dir);
WriteProbe set_write_probe(WriteProbe probe);
// The first line of `output` that reports such a fault (compiler, linker or harness wording of
// ENOSPC, EDQUOT, EROFS, EFBIG), with what it means and the fix in parentheses; "" when none. Lines
// that quote source code (gcc's "  12 | ...") are skipped, so a comment in a candidate's code is
// not taken for one.
std::string environment_fault_in_output(std::string_view output, bool count_file_too_large);
// Whether this process runs under a file size limit tighter than the one the sandbox gives its
// children: then EFBIG and SIGXFSZ come from the environment, not from a runaway program.
bool outer_file_size_limit();

// Files with these extensions are compiled (by language); .cl files are loaded at run time.
bool is_compiled_source(Language language, const std::filesystem::path& path);

}  // namespace kf
