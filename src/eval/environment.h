// Environment faults in a test run: what the machine did wrong (a full disk, a read-only path, a
// file size limit, a device that cannot be opened), told apart from what the code did wrong.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "proc/process.h"

namespace kf {

// The harness's exit code when it cannot write its result file (kExitCannotWriteResult in
// src/harness/report.h) and the line it writes to stderr then.
constexpr int kHarnessCannotWriteResult = 3;
constexpr char kHarnessCannotWriteLine[] = "kernelfoundry harness: cannot write the result file";

// Why the test child's run says nothing about the code, or "" when it does: it could not be
// started, the harness could not write its result file, it was killed by SIGXFSZ under a file
// size limit set outside KernelFoundry, or the harness could not open the device at all
// (error_kind "device_unavailable", e.g. no OpenCL driver). `result` is the parsed result file or
// null.
std::string test_run_environment_fault(const ProcessResult& proc, const nlohmann::json& result);

}  // namespace kf
