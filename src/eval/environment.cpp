// Environment faults in a test run: what the machine did wrong, told apart from what the code did.
#include "eval/environment.h"

#include <csignal>

#include "eval/interpret.h"
#include "lang/lang.h"
#include "util/strings.h"

namespace kf {

std::string test_run_environment_fault(const ProcessResult& proc, const nlohmann::json& result,
                                       const std::filesystem::path& confirm_dir) {
  if (proc.cancelled || proc.timed_out || proc.inactive) return "";
  if (!proc.started) return "the test binary could not be started: " + proc.start_error;
  if (proc.term_signal != 0) {
    // The harness ignores SIGXFSZ, so only a limit on the whole process tree gets here.
    if (std::string env = environment_fault(proc, false); !env.empty())
      return "the test binary was " + env;
    return "";
  }
  if (proc.exit_code == kHarnessCannotWriteResult) {
    size_t at = proc.output.find(kHarnessCannotWriteLine);
    bool confirmed = confirm_dir.empty() || !environment_fault(proc, true, confirm_dir).empty();
    if (at != std::string::npos && confirmed) {
      size_t end = proc.output.find('\n', at);
      std::string line = proc.output.substr(at, end == std::string::npos ? end : end - at);
      constexpr size_t kMaxLine = 600;
      if (line.size() > kMaxLine) line = line.substr(0, kMaxLine) + " ...";
      return "the test harness could not write its result: " +
             line.substr(std::string("kernelfoundry harness: ").size());
    }
  }
  if (json_text(result, "status") == "error" &&
      json_text(result, "error_kind") == "device_unavailable")
    return "the test harness could not open the device: " + json_text(result, "reason");
  return "";
}

}  // namespace kf
