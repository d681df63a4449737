// Environment faults in a test run: what the machine did wrong (a full disk, a read-only path, a
// file size limit, a device that cannot be opened), told apart from what the code did wrong.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "proc/process.h"

namespace kf {

// The harness's exit code when it cannot write its result file (kExitCannotWriteResult in
// src/harness/report.h) and the line it writes to stderr then.
constexpr int kHarnessCannotWriteResult = 3;
// (or its outputs for the checker).
constexpr char kHarnessCannotWriteLine[] = "kernelfoundry harness: cannot write ";

// Why the test child's run says nothing about the code, or "" when it does: it could not be
// started, the harness could not write its result file, it was killed by SIGXFSZ under a file
// size limit set outside KernelFoundry, or the harness could not open the device at all
// (error_kind "device_unavailable", e.g. no OpenCL driver). `result` is the parsed result file or
// null. `confirm_dir`, when given, is where the child wrote: a child running candidate code could
// print the harness's line and exit 3 itself, so the fault then counts only when a write probe
// there confirms the machine cannot write (a job must not stop for a candidate's say-so).
std::string test_run_environment_fault(const ProcessResult& proc, const nlohmann::json& result,
                                       const std::filesystem::path& confirm_dir = {});

}  // namespace kf
