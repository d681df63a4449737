// compute-sanitizer (memcheck, racecheck, ...) on a CUDA candidate's task binary: finding the tool,
// the command of one pass, and its report read into findings an honest model can act on.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "lang/lang.h"
#include "proc/process.h"
#include "util/status.h"

namespace kf {

// eval_config.compute_sanitizer: auto = run where the tool is found (CUDA only), on = the tool or
// an error at job start, off = never.
enum class SanitizerMode { kAuto, kOn, kOff };

Result<SanitizerMode> parse_sanitizer_mode(std::string_view text);  // "auto", "on", "off"
std::string_view sanitizer_mode_name(SanitizerMode mode);

// compute-sanitizer's --tool names a pass may use: memcheck, racecheck, initcheck, synccheck.
const std::vector<std::string>& sanitizer_tool_names();

// compute-sanitizer on `path_env` (the PATH value), else under the CUDA root the toolchain uses
// (toolchain.cuda_root, or the folder above nvcc's bin/): <root>/compute-sanitizer/ and
// <root>/bin/. Empty when not found.
std::filesystem::path find_compute_sanitizer(const Toolchain& toolchain, std::string_view path_env);

// For a job's start: the tool the pass runs ("" = no pass) and, in auto mode when it is missing,
// the one note line to show. Mode on without the tool, or a tool name that compute-sanitizer does
// not have, is an error naming the key and the fix. `found` is find_compute_sanitizer()'s answer.
struct SanitizerSetup {
  std::filesystem::path tool;
  std::string note;
};
Result<SanitizerSetup> check_sanitizer(SanitizerMode mode, Language language,
                                       const std::vector<std::string>& tools,
                                       const std::filesystem::path& found);

// compute-sanitizer exits with this when its tool reported an error (--error-exitcode), so a
// finding is known even if the report cannot be read.
constexpr int kSanitizerErrorExitCode = 86;
// Set in the pass's environment: the harness then allocates CUDA buffers with no guard bytes after
// the data, so a read one element past the end leaves the allocation and memcheck sees it.
constexpr const char* kNoGuardBytesEnv = "KF_HARNESS_NO_GUARD_BYTES";

// One pass: `tool_name` of compute-sanitizer around the candidate's binary, running its
// correctness phase on one seed (the listed shapes and `extra_shapes`) in the split-judge candidate
// mode (outputs dumped, no reference in the process).
struct SanitizerRun {
  std::filesystem::path tool;  // compute-sanitizer
  std::string tool_name;       // memcheck
  std::filesystem::path binary;
  std::filesystem::path kernel_dir;  // --kernel-dir
  std::filesystem::path work_dir;    // gets outputs/ and result.json; the child's cwd
  std::string extra_shapes;          // --extra-shapes JSON, "" = none
  std::string template_params;       // --template-params JSON (a templated kernel), "" = none
  double large_shape_mib = 64;
  double timeout_s = 300;
  size_t output_cap = 1 << 20;
};
// The command, not yet sandboxed (the evaluator wraps it in the candidate's run sandbox).
ProcessSpec sanitizer_spec(const SanitizerRun& run);

// One reported problem.
struct SanitizerFinding {
  std::string tool;                  // memcheck
  std::string kind;                  // "Invalid __global__ read of size 4 bytes"
  std::string kernel;                // "softmax_rows" ("" when the report names none)
  std::string location;              // "softmax.cu:42", or the offset in the kernel ("+0x1d0")
  std::vector<std::string> details;  // "by thread (32,0,0) in block (7,0,0)", "Address ..."
  bool error = true;                 // false: a racecheck warning
  int repeats = 1;  // reports of the same kind at the same place (other threads), this one included

  // "Invalid __global__ read of size 4 bytes in kernel softmax_rows (softmax.cu:42), by thread
  // (32,0,0) in block (7,0,0), Address 0x... is out of bounds ..."
  std::string describe() const;
};

struct SanitizerReport {
  std::string tool;
  std::vector<SanitizerFinding> findings;  // distinct ones, in order, at most max_findings
  int reports = 0;                         // every report read (before merging repeats)
  long errors = -1;                        // from the summary line; -1 = no summary line
  long warnings = 0;                       // racecheck's warnings
};

// Reads compute-sanitizer's output (its lines start with "========= "; the program's own lines
// are skipped). Understands the memcheck, racecheck (analysis and hazard reports), initcheck and
// synccheck formats of compute-sanitizer 2020-2025. The last summary line counts: it is printed
// after the program exited.
SanitizerReport parse_sanitizer_output(std::string_view output, const std::string& tool,
                                       size_t max_findings = 4);

// What one pass means for the kernel: a suspect flag with the findings and the fix in words, a
// note (not suspect) when the pass could not finish, or nothing when it was clean.
struct SanitizerOutcome {
  std::string flag;  // "sanitizer_memcheck", "sanitizer_incomplete"; "" = clean
  bool suspect = false;
  std::string detail;    // for the flag
  std::string log_line;  // one line for the eval log, also when clean
};
SanitizerOutcome judge_sanitizer_run(const ProcessResult& result, const SanitizerReport& report,
                                     const std::string& tool, double timeout_s);

}  // namespace kf
